"""Calling plugin tools: arguments checked, the request built, signed and sent through the
SSRF guard with the retry policy, the answer read for the model, every call recorded."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import httpx

from coze_lab.core.errors import CozeLabError, InvalidParameter, NotFound
from coze_lab.core.ids import new_id
from coze_lab.core.plugins import oauth
from coze_lab.core.plugins.arguments import ArgumentError, prepare_arguments
from coze_lab.core.plugins.authorization import (
    AuthorizationRequired,
    MissingCredential,
    PluginAuthorization,
)
from coze_lab.core.plugins.lookups import PluginContext, PluginLookups, _check_scene, _Loaded
from coze_lab.core.plugins.request import build_request
from coze_lab.core.plugins.sending import describe_failure, read_answer, send
from coze_lab.core.plugins.types import (
    ToolResult,
)
from coze_lab.store.models import (
    PluginCall,
)

log = logging.getLogger("coze_lab.plugins")


class PluginExecutor(PluginLookups):
    """Tool calls as one user (a bot's chats use the bot owner's credentials)."""

    def __init__(self, ctx: PluginContext, authorization: PluginAuthorization) -> None:
        super().__init__(ctx)
        self._auth = authorization

    async def call_tool(
        self,
        user_id: int,
        tool_id: int,
        arguments: Any,
        *,
        scene: str,
        version: int | None = None,
        trace: dict[str, Any] | None = None,
    ) -> ToolResult:
        """Call a tool as ``user_id``. Everything the model or the remote side gets wrong
        (arguments, HTTP errors, missing authorization) is a ``ToolResult`` with
        ``ok=False``; an unknown tool or an unpublished plugin raises NotFound."""
        _check_scene(scene)
        loaded = self._load(user_id, tool_id, scene, version)
        started = time.perf_counter()
        try:
            args = prepare_arguments(loaded.tool.parameters, arguments)
        except ArgumentError as exc:
            given = {"arguments": arguments if isinstance(arguments, dict) else None}
            return self._failed(user_id, loaded, started, trace, given, str(exc))
        request = build_request(loaded.tool, loaded.server_url, args, loaded.manifest.common_params)
        summary = {**request.summary(), "arguments": args}
        try:
            await self._auth.sign(request, user_id, loaded)
            summary = {**request.summary(), "arguments": args}
            response, attempts = await send(self._policy, request, self._retry, self._ctx.sleep)
            if response.status_code == 401 and self._auth.refreshable(loaded):
                await self._auth.sign(request, user_id, loaded, force=True)
                response, more = await send(self._policy, request, self._retry, self._ctx.sleep)
                attempts += more
        except AuthorizationRequired:
            return self._needs_authorization(user_id, loaded, started, trace, summary)
        except MissingCredential as exc:
            return self._failed(user_id, loaded, started, trace, summary, str(exc))
        except (CozeLabError, httpx.HTTPError, oauth.OAuthError) as exc:
            return self._failed(user_id, loaded, started, trace, summary, describe_failure(exc))
        summary["attempts"] = attempts
        return self._respond(user_id, loaded, started, trace, summary, response)

    async def call_tool_by_name(
        self,
        user_id: int,
        plugin_id: int,
        name: str,
        arguments: Any,
        *,
        scene: str,
        version: int | None = None,
        trace: dict[str, Any] | None = None,
    ) -> ToolResult:
        """``call_tool`` for the plugin's tool called ``name`` (the workflow node's way)."""
        tool_id = self.tool_id(user_id, plugin_id, name)
        return await self.call_tool(
            user_id, tool_id, arguments, scene=scene, version=version, trace=trace
        )

    async def debug_call(
        self, owner_id: int, plugin_id: int, tool_id: int, arguments: Any, *, scene: str = "draft"
    ) -> ToolResult:
        """A call from the studio (the plugin editor's "debug"): ``tool_id`` must belong to
        ``plugin_id``; recorded like every call."""
        if self._plugin_of(owner_id, tool_id) != plugin_id:
            raise NotFound(f"plugin {plugin_id} has no tool {tool_id}")
        return await self.call_tool(
            owner_id, tool_id, arguments, scene=scene, trace={"source": "debug"}
        )

    def _respond(
        self,
        user_id: int,
        loaded: _Loaded,
        started: float,
        trace: dict[str, Any] | None,
        summary: dict[str, Any],
        response: httpx.Response,
    ) -> ToolResult:
        answer = read_answer(response, loaded.tool.responses, self.settings.max_output_chars)
        if answer.warning:
            summary["warning"] = answer.warning
        return self._record(
            user_id,
            loaded,
            started,
            trace,
            ok=answer.ok,
            output=answer.output,
            error=answer.error,
            request=summary,
            status_code=response.status_code,
            data=answer.data,
        )

    def _needs_authorization(
        self,
        user_id: int,
        loaded: _Loaded,
        started: float,
        trace: dict[str, Any] | None,
        summary: dict[str, Any],
    ) -> ToolResult:
        url = None
        try:
            with self._db.transaction() as session:
                row = self._visible(session, user_id, loaded.plugin_id)
                url = self._auth.new_authorization(
                    session, user_id, row, loaded.manifest, None, loaded.scene, loaded.version
                )
        except InvalidParameter as exc:
            log.warning("no authorization URL for plugin %s: %s", loaded.plugin_id, exc.msg)
        output = f"The user has not authorized '{loaded.plugin_name}' yet." + (
            f" Ask them to open this link to authorize it: {url}" if url else ""
        )
        return self._failed(
            user_id,
            loaded,
            started,
            trace,
            summary,
            output,
            error="authorization required",
            authorization_url=url,
        )

    def _failed(
        self,
        user_id: int,
        loaded: _Loaded,
        started: float,
        trace: dict[str, Any] | None,
        request: dict[str, Any],
        message: str,
        *,
        error: str | None = None,
        authorization_url: str | None = None,
    ) -> ToolResult:
        """The one path of a call that failed before an answer: recorded, and told to the
        model (``message``) as a result with ``ok=False``."""
        return self._record(
            user_id,
            loaded,
            started,
            trace,
            ok=False,
            output=message,
            error=error or message,
            request=request,
            authorization_url=authorization_url,
        )

    def _record(
        self,
        user_id: int,
        loaded: _Loaded,
        started: float,
        trace: dict[str, Any] | None,
        *,
        ok: bool,
        output: str,
        error: str | None,
        request: dict[str, Any],
        status_code: int | None = None,
        data: Any = None,
        authorization_url: str | None = None,
    ) -> ToolResult:
        latency = round((time.perf_counter() - started) * 1000, 3)
        call_id = new_id()
        with self._db.transaction() as session:
            session.add(
                PluginCall(
                    id=call_id,
                    owner_id=user_id,
                    plugin_id=loaded.plugin_id,
                    tool_id=loaded.tool_id,
                    tool_name=loaded.tool.name,
                    scene=loaded.scene,
                    version=loaded.version,
                    ok=ok,
                    status_code=status_code,
                    latency_ms=latency,
                    error=error,
                    request=_jsonable(request),
                    trace=_jsonable(trace) if trace else None,
                    created_at=self._clock(),
                )
            )
        log.info(
            "plugin call %s.%s -> %s %s (%.0f ms)",
            loaded.plugin_name,
            loaded.tool.name,
            status_code,
            error or "ok",
            latency,
        )
        return ToolResult(
            ok=ok,
            output=output,
            status_code=status_code,
            latency_ms=latency,
            error=error,
            authorization_url=authorization_url,
            data=data,
            call_id=call_id,
            request=request,
        )


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
