"""The plugin catalog: import from OpenAPI, draft edits, atomic publish, tool lookups."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import httpx
from sqlalchemy import delete, select

from coze_lab.core.errors import CozeLabError, InvalidParameter, NotFound
from coze_lab.core.ids import new_id
from coze_lab.core.net import guarded_request
from coze_lab.core.plugins.authorization import check_credentials
from coze_lab.core.plugins.credentials import CLIENT, SERVICE
from coze_lab.core.plugins.document import (
    ToolSpec,
)
from coze_lab.core.plugins.importing import Draft, read_draft_isolated
from coze_lab.core.plugins.lookups import PluginLookups, _check_scene
from coze_lab.core.plugins.problems import Problem
from coze_lab.core.plugins.types import (
    CallRecord,
    PluginInfo,
    ToolDefinition,
    ToolInfo,
)
from coze_lab.core.spaces import Access, Permission
from coze_lab.store.models import (
    PluginCall,
    PluginCredential,
    PluginOAuthState,
    PluginRecord,
    PluginTool,
    PluginVersion,
)

log = logging.getLogger("coze_lab.plugins")


class PluginCatalog(PluginLookups):
    """Plugins as definitions: import, drafts, publish, and the tools models see."""

    async def import_plugin(
        self,
        owner_id: int,
        *,
        openapi: str | bytes | dict[str, Any] | None = None,
        url: str | None = None,
        manifest: dict[str, Any] | None = None,
        server_url: str | None = None,
        credentials: Mapping[str, str] | None = None,
        space_id: int | None = None,
    ) -> PluginInfo:
        """A new plugin from an OpenAPI document (text, dict, or ``url``) and a manifest,
        in one of the user's spaces (None: the personal one)."""
        with self._reading() as session:
            access = Access.load(session, owner_id)
        space = access.space(space_id)
        access.require(space, Permission.EDIT)
        draft = await self._prepare(openapi, url, manifest, server_url)
        now = self._clock()
        with self._db.transaction() as session:
            Access.load(session, owner_id).require(space, Permission.EDIT)
            row = PluginRecord(
                id=new_id(),
                owner_id=owner_id,
                space_id=space,
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
                check_credentials(draft.manifest, credentials)
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
            row = self._editable(session, owner_id, plugin_id)
            current_doc, current_manifest = row.openapi, row.manifest
            current_server = row.server_url
        if openapi is None and url is None:
            openapi = current_doc
            server_url = server_url or current_server
        if manifest is None:
            manifest = _manifest_input(current_manifest)
        draft = await self._prepare(openapi, url, manifest, server_url)
        with self._db.transaction() as session:
            row = self._editable(session, owner_id, plugin_id)
            row.name = draft.manifest.name_for_human
            row.description = draft.manifest.description_for_human
            row.manifest = draft.manifest.to_dict()
            row.openapi = draft.doc
            row.server_url = draft.server_url
            row.updated_at = self._clock()
            self._sync_tools(session, row.id, draft.tools)
            if draft.secrets:
                self._credentials.put(session, row.id, row.owner_id, CLIENT, draft.secrets)
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
        # bounded, and in a child process: a hostile document never blocks the server
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

    def delete(self, owner_id: int, plugin_id: int) -> None:
        with self._db.transaction() as session:
            row = self._visible(session, owner_id, plugin_id)
            Access.load(session, owner_id).require_delete(
                row.space_id, row.owner_id, f"plugin {plugin_id}"
            )
            for model in (PluginCall, PluginCredential, PluginOAuthState, PluginTool):
                session.execute(delete(model).where(model.plugin_id == plugin_id))
            session.execute(delete(PluginVersion).where(PluginVersion.plugin_id == plugin_id))
            session.execute(delete(PluginRecord).where(PluginRecord.id == plugin_id))

    def calls(self, owner_id: int, plugin_id: int, *, limit: int = 20) -> list[CallRecord]:
        """The user's newest recorded calls of a plugin (request summaries, no secrets)."""
        with self._reading() as session:
            self._visible(session, owner_id, plugin_id)
            rows = session.scalars(
                select(PluginCall)
                .where(PluginCall.owner_id == owner_id, PluginCall.plugin_id == plugin_id)
                .order_by(PluginCall.id.desc())
                .limit(limit)
            ).all()
            return [_call_record(r) for r in rows]

    def publish(self, owner_id: int, plugin_id: int) -> int:
        """Copy the draft to a new online version in one transaction; return its number."""
        with self._db.transaction() as session:
            row = self._editable(session, owner_id, plugin_id)
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


def _call_record(row: PluginCall) -> CallRecord:
    return CallRecord(
        id=row.id,
        tool_id=row.tool_id,
        tool_name=row.tool_name,
        scene=row.scene,
        version=row.version,
        ok=row.ok,
        status_code=row.status_code,
        latency_ms=row.latency_ms,
        error=row.error,
        request=row.request,
        trace=row.trace,
        created_at=row.created_at,
    )
