"""Plugins: import, draft edits, atomic publish, credentials, OAuth, and tool calls.

Every query is scoped to the plugin's owner; another user's ids read as unknown. A tool
call runs as one user (a bot's chats use the bot owner's credentials): the arguments are
checked, the request built and signed with that user's credentials, sent through the SSRF
guard, and recorded in ``plugin_calls`` without secrets.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import CozeLabError, InvalidParameter, NotFound
from coze_lab.core.ids import new_id
from coze_lab.core.net import OutboundPolicy, guarded_request
from coze_lab.core.plugins import oauth
from coze_lab.core.plugins.arguments import ArgumentError, prepare_arguments
from coze_lab.core.plugins.credentials import CLIENT, SERVICE, TOKEN, CredentialStore
from coze_lab.core.plugins.importing import Draft, ImportLimits, read_draft_isolated
from coze_lab.core.plugins.manifest import Manifest, render_template
from coze_lab.core.plugins.openapi import ToolSpec
from coze_lab.core.plugins.problems import Problem
from coze_lab.core.plugins.request import HttpRequest, build_request
from coze_lab.core.plugins.sending import RetryPolicy, describe_failure, read_answer, send
from coze_lab.core.plugins.types import (
    SCENES,
    PluginInfo,
    ToolDefinition,
    ToolInfo,
    ToolResult,
)
from coze_lab.core.secrets import SecretBox
from coze_lab.store import Database
from coze_lab.store.models import (
    PluginCall,
    PluginCredential,
    PluginOAuthState,
    PluginRecord,
    PluginTool,
    PluginVersion,
)

log = logging.getLogger("coze_lab.plugins")

CALLBACK_PATH = "coze_lab/api/plugins/oauth/callback"


@dataclass(frozen=True)
class PluginSettings:
    timeout_s: float = 30.0
    retries: int = 2
    backoff_s: float = 0.2
    max_output_chars: int = 20_000
    state_ttl: timedelta = timedelta(minutes=10)
    import_limits: ImportLimits = field(default_factory=ImportLimits)


@dataclass(frozen=True)
class _Loaded:
    """A tool in the version a call uses."""

    plugin_id: int
    plugin_name: str
    tool_id: int
    tool: ToolSpec
    manifest: Manifest
    server_url: str
    scene: str
    version: int | None


class AuthorizationRequired(Exception):
    pass


class PluginService:
    """The plugin domain; ``policy`` is the SSRF guard every outbound call goes through.

    Example:
        >>> info = await plugins.import_plugin(user.id, openapi=text)      # doctest: +SKIP
        >>> [t.name for t in info.tools]                                    # doctest: +SKIP
        ['get_weather']
        >>> result = await plugins.call_tool(user.id, info.tools[0].id, {"city": "Oslo"},
        ...                                  scene="draft")                 # doctest: +SKIP
        >>> result.ok, result.status_code                                   # doctest: +SKIP
        (True, 200)
    """

    def __init__(
        self,
        db: Database,
        *,
        secrets: SecretBox,
        policy: OutboundPolicy,
        clock: Clock = utcnow,
        settings: PluginSettings | None = None,
        public_url: str | Callable[[], str | None] | None = None,
        on_authorized: Callable[[int, int], Awaitable[None]] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._db = db
        self._box = secrets
        self._credentials = CredentialStore(db, secrets, clock)
        self._policy = policy
        self._clock = clock
        self.settings = settings or PluginSettings()
        self._public_url = public_url
        self.on_authorized = on_authorized
        self._sleep = sleep
        self._refreshing: dict[tuple[int, int], asyncio.Lock] = {}

    @property
    def _retry(self) -> RetryPolicy:
        return RetryPolicy(self.settings.timeout_s, self.settings.retries, self.settings.backoff_s)

    # ---- import and drafts --------------------------------------------------------------
    async def import_plugin(
        self,
        owner_id: int,
        *,
        openapi: str | bytes | dict[str, Any] | None = None,
        url: str | None = None,
        manifest: dict[str, Any] | None = None,
        server_url: str | None = None,
        credentials: Mapping[str, str] | None = None,
    ) -> PluginInfo:
        """A new plugin from an OpenAPI document (text, dict, or ``url``) and a manifest."""
        draft = await self._prepare(openapi, url, manifest, server_url)
        now = self._clock()
        with self._db.transaction() as session:
            row = PluginRecord(
                id=new_id(),
                owner_id=owner_id,
                name=draft.manifest.name_for_human,
                description=draft.manifest.description_for_human,
                manifest=draft.manifest.to_dict(),
                openapi=draft.doc,
                server_url=draft.server_url,
                online_version=None,
                created_at=now,
                updated_at=now,
            )
            session.add(row)
            session.flush()
            self._sync_tools(session, row.id, draft.tools)
            if draft.secrets:
                self._credentials.put(session, row.id, owner_id, CLIENT, draft.secrets)
            if credentials:
                self._check_credentials(draft.manifest, credentials)
                self._credentials.put(session, row.id, owner_id, SERVICE, dict(credentials))
            plugin_id = row.id
        info = self.get(owner_id, plugin_id)
        return _with_warnings(info, draft.warnings)

    async def update_draft(
        self,
        owner_id: int,
        plugin_id: int,
        *,
        openapi: str | bytes | dict[str, Any] | None = None,
        url: str | None = None,
        manifest: dict[str, Any] | None = None,
        server_url: str | None = None,
    ) -> PluginInfo:
        """Replace the draft's document and/or manifest (validated together); online stays."""
        with self._db.transaction() as session:
            row = self._owned(session, owner_id, plugin_id)
            current_doc, current_manifest = row.openapi, row.manifest
            current_server = row.server_url
        if openapi is None and url is None:
            openapi = current_doc
            server_url = server_url or current_server
        if manifest is None:
            manifest = _manifest_input(current_manifest)
        draft = await self._prepare(openapi, url, manifest, server_url)
        with self._db.transaction() as session:
            row = self._owned(session, owner_id, plugin_id)
            row.name = draft.manifest.name_for_human
            row.description = draft.manifest.description_for_human
            row.manifest = draft.manifest.to_dict()
            row.openapi = draft.doc
            row.server_url = draft.server_url
            row.updated_at = self._clock()
            self._sync_tools(session, row.id, draft.tools)
            if draft.secrets:
                self._credentials.put(session, row.id, owner_id, CLIENT, draft.secrets)
        return _with_warnings(self.get(owner_id, plugin_id), draft.warnings)

    async def _prepare(
        self,
        openapi: str | bytes | dict[str, Any] | None,
        url: str | None,
        manifest: dict[str, Any] | None,
        explicit_server: str | None,
    ) -> Draft:
        base_url = None
        if url is not None:
            if not isinstance(url, str) or not url.strip():
                raise InvalidParameter("url must be a non-empty string")
            openapi, base_url = await self.fetch_document(url), url
        if openapi is None:
            raise InvalidParameter("give an OpenAPI document (openapi) or its url")
        return await read_draft_isolated(
            openapi, manifest, explicit_server, base_url, self.settings.import_limits
        )

    async def fetch_document(self, url: str) -> str:
        """The document at ``url``, fetched through the SSRF guard."""
        try:
            response = await guarded_request(
                self._policy, "GET", url, timeout=self.settings.timeout_s
            )
        except CozeLabError:
            raise
        except httpx.HTTPError as exc:
            raise InvalidParameter(f"cannot fetch {url}: {type(exc).__name__}") from exc
        if response.status_code != 200:
            raise InvalidParameter(f"fetching {url} answered HTTP {response.status_code}")
        return response.text

    def _sync_tools(self, session: Any, plugin_id: int, tools: list[ToolSpec]) -> None:
        """Draft tools by name: ids kept for names that stay, missing ones marked deleted."""
        now = self._clock()
        rows = {
            r.name: r
            for r in session.scalars(select(PluginTool).where(PluginTool.plugin_id == plugin_id))
        }
        wanted = {t.name for t in tools}
        for tool in tools:
            row = rows.get(tool.name)
            if row is None:
                session.add(
                    PluginTool(
                        id=new_id(),
                        plugin_id=plugin_id,
                        name=tool.name,
                        spec=tool.to_dict(),
                        created_at=now,
                        updated_at=now,
                        deleted_at=None,
                    )
                )
            else:
                row.spec, row.updated_at, row.deleted_at = tool.to_dict(), now, None
        for name, row in rows.items():
            if name not in wanted and row.deleted_at is None:
                row.deleted_at = now

    # ---- reading ------------------------------------------------------------------------
    def get(self, owner_id: int, plugin_id: int, *, scene: str = "draft") -> PluginInfo:
        """A plugin with its draft tools (``scene="online"``: the online version's)."""
        _check_scene(scene)
        with self._reading() as session:
            row = self._owned(session, owner_id, plugin_id)
            if scene == "online":
                version = self._version(session, row, None)
                tools = [
                    _tool_info(t["id"], row.id, ToolSpec.from_dict(t["spec"]))
                    for t in version.tools
                ]
                return self._info(
                    session, row, tools, version.manifest, version.openapi, version.version
                )
            return self._info(session, row, self._draft_tools(session, row.id), None, row.openapi)

    def list(self, owner_id: int) -> list[PluginInfo]:
        with self._reading() as session:
            rows = session.scalars(
                select(PluginRecord)
                .where(PluginRecord.owner_id == owner_id)
                .order_by(PluginRecord.id.desc())
            ).all()
            return [self._info(session, r, self._draft_tools(session, r.id)) for r in rows]

    def delete(self, owner_id: int, plugin_id: int) -> None:
        with self._db.transaction() as session:
            self._owned(session, owner_id, plugin_id)
            for model in (PluginCall, PluginCredential, PluginOAuthState, PluginTool):
                session.execute(delete(model).where(model.plugin_id == plugin_id))
            session.execute(delete(PluginVersion).where(PluginVersion.plugin_id == plugin_id))
            session.execute(delete(PluginRecord).where(PluginRecord.id == plugin_id))

    def calls(self, owner_id: int, plugin_id: int, *, limit: int = 20) -> list[dict[str, Any]]:
        """The newest recorded calls of a plugin (request summaries, no secrets)."""
        with self._reading() as session:
            self._owned(session, owner_id, plugin_id)
            rows = session.scalars(
                select(PluginCall)
                .where(PluginCall.owner_id == owner_id, PluginCall.plugin_id == plugin_id)
                .order_by(PluginCall.id.desc())
                .limit(limit)
            ).all()
            return [_call_dict(r) for r in rows]

    # ---- publishing ---------------------------------------------------------------------
    def publish(self, owner_id: int, plugin_id: int) -> int:
        """Copy the draft to a new online version in one transaction; return its number."""
        with self._db.transaction() as session:
            row = self._owned(session, owner_id, plugin_id)
            tools = self._draft_tools(session, plugin_id)
            number = (row.online_version or 0) + 1
            snapshot(session, row, tools, number, self._clock())
            point_online(session, row, number)
        return number

    def online_versions(self, user_id: int, tool_ids: Sequence[int]) -> dict[int, int]:
        """plugin_id → current online version, for the plugins of ``tool_ids`` (bots pin
        these at publish); NotFound for unknown tools or unpublished plugins."""
        out: dict[int, int] = {}
        with self._reading() as session:
            for tool_id in tool_ids:
                _, plugin = self._tool_row(session, user_id, tool_id)
                if plugin.online_version is None:
                    raise NotFound(f"plugin {plugin.id} of tool {tool_id} is not published")
                out[plugin.id] = plugin.online_version
        return out

    # ---- credentials --------------------------------------------------------------------
    def set_credentials(
        self, owner_id: int, plugin_id: int, values: Mapping[str, Any]
    ) -> list[str]:
        """Store the user's secrets: token variables (``api_key``) or ``client_secret``.
        Returns the names stored, never the values."""
        if not isinstance(values, Mapping) or not values:
            raise InvalidParameter("credentials must be a non-empty object of name → text")
        if not all(isinstance(k, str) and isinstance(v, str) and v for k, v in values.items()):
            raise InvalidParameter("every credential must be a non-empty string")
        with self._db.transaction() as session:
            row = self._owned(session, owner_id, plugin_id)
            manifest = Manifest.from_dict(row.manifest)
            client = {k: v for k, v in values.items() if k == "client_secret"}
            tokens = {k: v for k, v in values.items() if k != "client_secret"}
            if client:
                if manifest.auth.type != "oauth":
                    raise InvalidParameter("client_secret is for OAuth plugins")
                self._credentials.put(session, plugin_id, owner_id, CLIENT, client)
            if tokens:
                self._check_credentials(manifest, tokens)
                self._credentials.put(session, plugin_id, owner_id, SERVICE, tokens)
        return sorted(values)

    def clear_credentials(self, owner_id: int, plugin_id: int) -> None:
        """Forget the user's tokens and OAuth authorization for the plugin."""
        with self._reading() as session:
            self._owned(session, owner_id, plugin_id)
        self._credentials.remove(plugin_id, owner_id, [SERVICE, TOKEN])

    def _check_credentials(self, manifest: Manifest, values: Mapping[str, str]) -> None:
        if manifest.auth.type != "service_token":
            raise InvalidParameter(
                f"the plugin's auth is {manifest.auth.type}; it takes no service token"
            )
        expected = set(manifest.auth.variables())
        unknown = sorted(set(values) - expected)
        if unknown:
            raise InvalidParameter(f"unknown credentials {unknown}; expected {sorted(expected)}")

    # ---- OAuth --------------------------------------------------------------------------
    @property
    def callback_url(self) -> str | None:
        """Where providers send users back (``<public_url>coze_lab/api/plugins/oauth/callback``)."""
        base = self._public_url() if callable(self._public_url) else self._public_url
        return None if not base else base.rstrip("/") + "/" + CALLBACK_PATH

    def authorization_url(
        self,
        owner_id: int,
        plugin_id: int,
        *,
        redirect_uri: str | None = None,
        scene: str = "draft",
        version: int | None = None,
    ) -> str:
        """A fresh authorization URL (state + PKCE) for the user to open."""
        _check_scene(scene)
        with self._db.transaction() as session:
            row = self._owned(session, owner_id, plugin_id)
            manifest = (
                Manifest.from_dict(row.manifest)
                if scene == "draft"
                else Manifest.from_dict(self._version(session, row, version).manifest)
            )
            return self._new_authorization(session, row, manifest, redirect_uri, scene, version)

    def _new_authorization(
        self,
        session: Any,
        row: PluginRecord,
        manifest: Manifest,
        redirect_uri: str | None,
        scene: str,
        version: int | None,
    ) -> str:
        auth = manifest.auth
        if auth.type != "oauth" or auth.grant_type != "authorization_code":
            raise InvalidParameter(f"plugin {row.id} does not use the OAuth authorization code")
        redirect = redirect_uri or self.callback_url
        if not redirect:
            raise InvalidParameter(
                "no OAuth callback address: set c.CozeLab.public_url (or COZE_LAB_PUBLIC_URL) "
                "to the URL users reach this server at, e.g. https://hub.example.org/user/you/"
            )
        state = oauth.new_state()
        verifier, challenge = oauth.pkce_pair() if auth.pkce else (None, None)
        now = self._clock()
        session.add(
            PluginOAuthState(
                id=new_id(),
                state_hash=oauth.state_hash(state),
                owner_id=row.owner_id,
                plugin_id=row.id,
                secret=self._box.encrypt(
                    {
                        "code_verifier": verifier,
                        "redirect_uri": redirect,
                        "scene": scene,
                        "version": version,
                    }
                ),
                created_at=now,
                expires_at=now + self.settings.state_ttl,
                used_at=None,
            )
        )
        return oauth.authorization_url(
            auth, state=state, redirect_uri=redirect, code_challenge=challenge
        )

    async def complete_authorization(
        self, state: str | None, code: str | None, *, error: str | None = None
    ) -> PluginInfo:
        """The provider's redirect: check the state (once, unexpired), exchange the code
        for a token, store it encrypted, then resume what waited for it."""
        if not isinstance(state, str) or not state:
            raise InvalidParameter("the callback has no state")
        now = self._clock()
        with self._db.transaction() as session:
            row = session.scalars(
                select(PluginOAuthState).where(
                    PluginOAuthState.state_hash == oauth.state_hash(state)
                )
            ).first()
            if row is None:
                raise InvalidParameter("unknown authorization state")
            won = session.execute(
                update(PluginOAuthState)
                .where(
                    PluginOAuthState.id == row.id,
                    PluginOAuthState.used_at.is_(None),
                    PluginOAuthState.expires_at > now,
                )
                .values(used_at=now)
            ).rowcount
            if won != 1:
                raise InvalidParameter("the authorization state was used or has expired")
            owner_id, plugin_id = row.owner_id, row.plugin_id
            saved = self._box.decrypt(row.secret)
        if error:
            raise InvalidParameter(f"the provider refused the authorization: {error}")
        if not isinstance(code, str) or not code:
            raise InvalidParameter("the callback has no code")
        manifest = self._manifest_of(owner_id, plugin_id, saved["scene"], saved["version"])
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": saved["redirect_uri"],
        }
        if saved.get("code_verifier"):
            form["code_verifier"] = saved["code_verifier"]
        client = self._credentials.get(plugin_id, owner_id, CLIENT) or {}
        try:
            token = await oauth.request_token(
                self._policy,
                manifest.auth,
                client.get("client_secret"),
                form,
                now=self._clock(),
                timeout=self.settings.timeout_s,
            )
        except oauth.OAuthError as exc:
            raise InvalidParameter(f"the code exchange failed: {exc}") from exc
        self._credentials.save(plugin_id, owner_id, TOKEN, token.to_dict(), token.expires_at)
        log.info("plugin %s authorized for user %s", plugin_id, owner_id)
        if self.on_authorized is not None:
            try:
                await self.on_authorized(owner_id, plugin_id)
            except Exception:  # the token is stored; resuming is best effort
                log.exception("resuming after the authorization of plugin %s failed", plugin_id)
        return self.get(owner_id, plugin_id)

    def _manifest_of(
        self, owner_id: int, plugin_id: int, scene: str, version: int | None
    ) -> Manifest:
        with self._reading() as session:
            row = self._owned(session, owner_id, plugin_id)
            if scene == "draft":
                return Manifest.from_dict(row.manifest)
            return Manifest.from_dict(self._version(session, row, version).manifest)

    async def _oauth_token(self, owner_id: int, loaded: _Loaded, *, force: bool = False) -> str:
        """A valid access token: stored, refreshed, or (client credentials) fetched."""
        auth = loaded.manifest.auth
        key = (owner_id, loaded.plugin_id)
        lock = self._refreshing.setdefault(key, asyncio.Lock())
        async with lock:
            stored = self._credentials.get(loaded.plugin_id, owner_id, TOKEN)
            token = oauth.Token.from_dict(stored) if stored else None
            if token is not None and not force and not token.expired(self._clock()):
                return token.access_token
            client = (self._credentials.get(loaded.plugin_id, owner_id, CLIENT) or {}).get(
                "client_secret"
            )
            if auth.grant_type == "client_credentials":
                form = {"grant_type": "client_credentials"}
                if auth.scope:
                    form["scope"] = auth.scope
            elif token is not None and token.refresh_token:
                form = {"grant_type": "refresh_token", "refresh_token": token.refresh_token}
            else:
                raise AuthorizationRequired()
            try:
                fresh = await oauth.request_token(
                    self._policy,
                    auth,
                    client,
                    form,
                    now=self._clock(),
                    timeout=self.settings.timeout_s,
                )
            except oauth.OAuthError as exc:
                if form["grant_type"] == "refresh_token" and exc.status in (400, 401):
                    self._credentials.remove(loaded.plugin_id, owner_id, [TOKEN])
                    raise AuthorizationRequired() from exc
                raise
            self._credentials.save(
                loaded.plugin_id, owner_id, TOKEN, fresh.to_dict(), fresh.expires_at
            )
            return fresh.access_token

    # ---- tools for models ---------------------------------------------------------------
    def tool_definitions(
        self,
        user_id: int,
        tool_ids: Sequence[int],
        *,
        scene: str,
        versions: Mapping[int, int] | None = None,
    ) -> list[ToolDefinition]:
        """What the model sees of each tool, in the scene's version (``versions`` pins
        plugin_id → online version). NotFound for tools the user does not own."""
        _check_scene(scene)
        out = []
        for tool_id in tool_ids:
            plugin_id = self._plugin_of(user_id, tool_id)
            pinned = (versions or {}).get(plugin_id)
            loaded = self._load(user_id, tool_id, scene, pinned)
            out.append(
                ToolDefinition(
                    tool_id=loaded.tool_id,
                    plugin_id=loaded.plugin_id,
                    name=loaded.tool.name,
                    description=loaded.tool.description,
                    parameters=loaded.tool.parameters,
                )
            )
        return out

    def tool_id(self, user_id: int, plugin_id: int, name: str) -> int:
        """The id of the plugin's tool called ``name`` (draft or published)."""
        with self._reading() as session:
            self._owned(session, user_id, plugin_id)
            found = session.scalars(
                select(PluginTool.id).where(
                    PluginTool.plugin_id == plugin_id, PluginTool.name == name
                )
            ).first()
        if found is None:
            raise NotFound(f"plugin {plugin_id} has no tool '{name}'")
        return found

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
            return self._record(
                user_id,
                loaded,
                started,
                trace,
                ok=False,
                output=str(exc),
                error=str(exc),
                request={"arguments": arguments if isinstance(arguments, dict) else None},
            )
        request = build_request(loaded.tool, loaded.server_url, args, loaded.manifest.common_params)
        summary = {**request.summary(), "arguments": args}
        try:
            await self._sign(request, user_id, loaded)
            summary = {**request.summary(), "arguments": args}
            response, attempts = await send(self._policy, request, self._retry, self._sleep)
            if response.status_code == 401 and self._refreshable(loaded):
                await self._sign(request, user_id, loaded, force=True)
                response, more = await send(self._policy, request, self._retry, self._sleep)
                attempts += more
        except AuthorizationRequired:
            return self._needs_authorization(user_id, loaded, started, trace, summary)
        except _MissingCredential as exc:
            return self._record(
                user_id,
                loaded,
                started,
                trace,
                ok=False,
                output=str(exc),
                error=str(exc),
                request=summary,
            )
        except (CozeLabError, httpx.HTTPError, oauth.OAuthError) as exc:
            message = describe_failure(exc)
            return self._record(
                user_id,
                loaded,
                started,
                trace,
                ok=False,
                output=message,
                error=message,
                request=summary,
            )
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

    def _refreshable(self, loaded: _Loaded) -> bool:
        return loaded.manifest.auth.type == "oauth"

    async def _sign(
        self, request: HttpRequest, user_id: int, loaded: _Loaded, *, force: bool = False
    ) -> None:
        auth = loaded.manifest.auth
        if auth.type == "service_token":
            values = self._credentials.get(loaded.plugin_id, user_id, SERVICE) or {}
            missing = [v for v in auth.variables() if not values.get(v)]
            if missing:
                raise _MissingCredential(
                    f"the plugin '{loaded.plugin_name}' needs credentials {missing}; "
                    "set them in the plugin's settings"
                )
            for name, template in auth.parameters.items():
                value = render_template(template, values)
                if auth.location == "query":
                    request.params[name] = value
                    request.secret_params.add(name)
                else:
                    request.headers[name] = value
                    request.secret_headers.add(name)
        elif auth.type == "oauth":
            token = await self._oauth_token(user_id, loaded, force=force)
            request.headers["Authorization"] = f"Bearer {token}"
            request.secret_headers.add("Authorization")

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
                row = self._owned(session, user_id, loaded.plugin_id)
                url = self._new_authorization(
                    session, row, loaded.manifest, None, loaded.scene, loaded.version
                )
        except InvalidParameter as exc:
            log.warning("no authorization URL for plugin %s: %s", loaded.plugin_id, exc.msg)
        output = f"The user has not authorized '{loaded.plugin_name}' yet." + (
            f" Ask them to open this link to authorize it: {url}" if url else ""
        )
        result = self._record(
            user_id,
            loaded,
            started,
            trace,
            ok=False,
            output=output,
            error="authorization required",
            request=summary,
        )
        return ToolResult(**{**asdict(result), "authorization_url": url})

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
            data=data,
            call_id=call_id,
            request=request,
        )

    # ---- lookups ------------------------------------------------------------------------
    @contextmanager
    def _reading(self) -> Iterator[Session]:
        """An ORM session on a read-only transaction: never waits for a writer, so callers
        inside their own write transaction (a bot being published) can read plugins."""
        with self._db.read() as connection, Session(bind=connection) as session:
            yield session

    def _owned(self, session: Any, owner_id: int, plugin_id: int) -> PluginRecord:
        row = session.scalars(
            select(PluginRecord).where(
                PluginRecord.id == plugin_id, PluginRecord.owner_id == owner_id
            )
        ).first()
        if row is None:
            raise NotFound(f"plugin {plugin_id} does not exist")
        return row

    def _tool_row(self, session: Any, user_id: int, tool_id: int) -> tuple[PluginTool, Any]:
        found = session.execute(
            select(PluginTool, PluginRecord)
            .join(PluginRecord, PluginRecord.id == PluginTool.plugin_id)
            .where(PluginTool.id == tool_id, PluginRecord.owner_id == user_id)
        ).first()
        if found is None:
            raise NotFound(f"tool {tool_id} does not exist")
        return found[0], found[1]

    def _plugin_of(self, user_id: int, tool_id: int) -> int:
        with self._reading() as session:
            return self._tool_row(session, user_id, tool_id)[1].id

    def _version(self, session: Any, row: PluginRecord, version: int | None) -> PluginVersion:
        number = version if version is not None else row.online_version
        if number is None:
            raise NotFound(f"plugin {row.id} is not published")
        found = session.scalars(
            select(PluginVersion).where(
                PluginVersion.plugin_id == row.id, PluginVersion.version == number
            )
        ).first()
        if found is None:
            raise NotFound(f"plugin {row.id} has no version {number}")
        return found

    def _load(self, user_id: int, tool_id: int, scene: str, version: int | None) -> _Loaded:
        with self._reading() as session:
            tool, plugin = self._tool_row(session, user_id, tool_id)
            if scene == "draft":
                if tool.deleted_at is not None:
                    raise NotFound(f"tool {tool_id} is not in the draft of plugin {plugin.id}")
                return _Loaded(
                    plugin.id,
                    plugin.name,
                    tool.id,
                    ToolSpec.from_dict(tool.spec),
                    Manifest.from_dict(plugin.manifest),
                    plugin.server_url,
                    scene,
                    None,
                )
            snap = self._version(session, plugin, version)
            spec = next((t["spec"] for t in snap.tools if t["id"] == tool_id), None)
            if spec is None:
                raise NotFound(f"tool {tool_id} is not in version {snap.version} of its plugin")
            return _Loaded(
                plugin.id,
                snap.manifest["name_for_human"],
                tool.id,
                ToolSpec.from_dict(spec),
                Manifest.from_dict(snap.manifest),
                snap.server_url,
                scene,
                snap.version,
            )

    def _draft_tools(self, session: Any, plugin_id: int) -> list[ToolInfo]:
        rows = session.scalars(
            select(PluginTool)
            .where(PluginTool.plugin_id == plugin_id, PluginTool.deleted_at.is_(None))
            .order_by(PluginTool.id)
        ).all()
        return [_tool_info(r.id, plugin_id, ToolSpec.from_dict(r.spec)) for r in rows]

    def _info(
        self,
        session: Any,
        row: PluginRecord,
        tools: list[ToolInfo],
        manifest: dict[str, Any] | None = None,
        openapi: dict[str, Any] | None = None,
        version: int | None = None,
    ) -> PluginInfo:
        manifest = manifest or row.manifest
        kinds = self._credentials.kinds(session, row.id, row.owner_id)
        auth = manifest.get("auth") or {}
        status: dict[str, Any] = {"type": auth.get("type", "none")}
        if status["type"] == "service_token":
            status.update(location=auth.get("location"), configured=SERVICE in kinds)
            status["variables"] = Manifest.from_dict(manifest).auth.variables()
        elif status["type"] == "oauth":
            status.update(
                grant_type=auth.get("grant_type"),
                client_secret_set=CLIENT in kinds,
                authorized=TOKEN in kinds,
            )
        return PluginInfo(
            id=row.id,
            owner_id=row.owner_id,
            name=manifest.get("name_for_human", row.name),
            description=manifest.get("description_for_human", row.description),
            manifest=manifest,
            server_url=row.server_url,
            online_version=row.online_version,
            tools=tools,
            auth=status,
            created_at=row.created_at,
            updated_at=row.updated_at,
            openapi=openapi,
            version=version,
        )


class _MissingCredential(Exception):
    pass


def snapshot(session: Any, row: PluginRecord, tools: list[ToolInfo], number: int, now: Any) -> None:
    """Publish step 1: the immutable version row (draft manifest, document and tools)."""
    specs = {
        r.id: r.spec
        for r in session.scalars(
            select(PluginTool).where(
                PluginTool.plugin_id == row.id, PluginTool.deleted_at.is_(None)
            )
        )
    }
    session.add(
        PluginVersion(
            id=new_id(),
            plugin_id=row.id,
            version=number,
            manifest=row.manifest,
            openapi=row.openapi,
            server_url=row.server_url,
            tools=[{"id": t.id, "spec": specs[t.id]} for t in tools],
            created_at=now,
        )
    )
    session.flush()


def point_online(session: Any, row: PluginRecord, number: int) -> None:
    """Publish step 2: the plugin's online version becomes ``number``."""
    row.online_version = number
    session.flush()


def _check_scene(scene: str) -> None:
    if scene not in SCENES:
        raise InvalidParameter(f"scene must be one of {list(SCENES)}")


def _tool_info(tool_id: int, plugin_id: int, spec: ToolSpec) -> ToolInfo:
    return ToolInfo(
        id=tool_id,
        plugin_id=plugin_id,
        name=spec.name,
        description=spec.description,
        method=spec.method,
        path=spec.path,
        parameters=spec.parameters,
    )


def _with_warnings(info: PluginInfo, warnings: list[Problem]) -> PluginInfo:
    return PluginInfo(**{**info.__dict__, "warnings": [asdict(w) for w in warnings]})


def _manifest_input(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored (normalised) manifest in the import format again."""
    auth = dict(stored.get("auth") or {})
    if auth.get("type") == "service_token":
        auth = {
            "type": "service_token",
            "location": auth.get("location", "header"),
            "authorization_content": auth.get("parameters") or {},
        }
    elif auth.get("type") == "oauth":
        auth.pop("parameters", None)
        auth.pop("location", None)
    else:
        auth = {"type": "none"}
    return {**stored, "auth": auth}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _call_dict(row: PluginCall) -> dict[str, Any]:
    return {
        "id": row.id,
        "tool_id": row.tool_id,
        "tool_name": row.tool_name,
        "scene": row.scene,
        "version": row.version,
        "ok": row.ok,
        "status_code": row.status_code,
        "latency_ms": row.latency_ms,
        "error": row.error,
        "request": row.request,
        "trace": row.trace,
        "created_at": row.created_at,
    }
