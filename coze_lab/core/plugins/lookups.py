"""Lookups the plugin services share: plugins, tools and versions, read and described.

A plugin belongs to a space: every query is scoped to the spaces of the calling user
(``coze_lab.core.spaces``; other spaces' ids read as unknown). Credentials stay each
user's own, except the OAuth client secret, which is part of the plugin's definition (kept
under the id of the member who made the plugin)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from coze_lab.core.clock import Clock
from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.core.net import OutboundPolicy
from coze_lab.core.plugins.credentials import CLIENT, SERVICE, TOKEN, CredentialStore
from coze_lab.core.plugins.document import (
    ToolSpec,
)
from coze_lab.core.plugins.importing import ImportLimits
from coze_lab.core.plugins.manifest import Manifest
from coze_lab.core.plugins.sending import RetryPolicy
from coze_lab.core.plugins.types import (
    SCENES,
    PluginInfo,
    ToolInfo,
)
from coze_lab.core.secrets import SecretBox
from coze_lab.core.spaces import Access, Permission, visible
from coze_lab.store import Database
from coze_lab.store.models import (
    PluginRecord,
    PluginTool,
    PluginVersion,
)

log = logging.getLogger("coze_lab.plugins")


@dataclass(frozen=True)
class PluginSettings:
    timeout_s: float = 30.0
    retries: int = 2
    backoff_s: float = 0.2
    max_output_chars: int = 20_000
    state_ttl: timedelta = timedelta(minutes=10)
    import_limits: ImportLimits = field(default_factory=ImportLimits)


@dataclass
class PluginContext:
    """What the plugin services share: storage, secrets, the SSRF policy, settings."""

    db: Database
    box: SecretBox
    credentials: CredentialStore
    policy: OutboundPolicy
    clock: Clock
    settings: PluginSettings
    public_url: str | Callable[[], str | None] | None = None
    on_authorized: Callable[[int, int], Awaitable[None]] | None = None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    refreshing: dict[tuple[int, int], asyncio.Lock] = field(default_factory=dict)


@dataclass(frozen=True)
class _Loaded:
    """A tool in the version a call uses."""

    plugin_id: int
    plugin_name: str
    #: the member who made the plugin (its OAuth client secret is kept under this id)
    plugin_owner_id: int
    tool_id: int
    tool: ToolSpec
    manifest: Manifest
    server_url: str
    scene: str
    version: int | None


class PluginLookups:
    """Reading plugins, tools and versions; the base of catalog, authorization and executor."""

    def __init__(self, ctx: PluginContext) -> None:
        self._ctx = ctx

    @property
    def _db(self) -> Database:
        return self._ctx.db

    @property
    def _box(self) -> SecretBox:
        return self._ctx.box

    @property
    def _credentials(self) -> CredentialStore:
        return self._ctx.credentials

    @property
    def _policy(self) -> OutboundPolicy:
        return self._ctx.policy

    @property
    def _clock(self) -> Clock:
        return self._ctx.clock

    @property
    def settings(self) -> PluginSettings:
        return self._ctx.settings

    @property
    def _retry(self) -> RetryPolicy:
        return RetryPolicy(self.settings.timeout_s, self.settings.retries, self.settings.backoff_s)

    def get(self, owner_id: int, plugin_id: int, *, scene: str = "draft") -> PluginInfo:
        """A plugin with its draft tools (``scene="online"``: the online version's)."""
        _check_scene(scene)
        with self._reading() as session:
            row = self._visible(session, owner_id, plugin_id)
            if scene == "online":
                version = self._version(session, row, None)
                tools = [
                    _tool_info(t["id"], row.id, ToolSpec.from_dict(t["spec"]))
                    for t in version.tools
                ]
                return self._info(
                    session,
                    owner_id,
                    row,
                    tools,
                    version.manifest,
                    version.openapi,
                    version.version,
                )
            return self._info(
                session, owner_id, row, self._draft_tools(session, row.id), None, row.openapi
            )

    def list(self, owner_id: int, *, space_id: int | None = None) -> list[PluginInfo]:
        """The plugins of a space the user belongs to (None: the personal one)."""
        with self._reading() as session:
            access = Access.load(session, owner_id)
            space = access.space(space_id)
            access.require(space, Permission.READ)
            rows = session.scalars(
                select(PluginRecord)
                .where(PluginRecord.space_id == space)
                .order_by(PluginRecord.id.desc())
            ).all()
            return [
                self._info(session, owner_id, r, self._draft_tools(session, r.id)) for r in rows
            ]

    def tool_id(self, user_id: int, plugin_id: int, name: str) -> int:
        """The id of the plugin's tool called ``name`` (draft or published)."""
        with self._reading() as session:
            self._visible(session, user_id, plugin_id)
            found = session.scalars(
                select(PluginTool.id).where(
                    PluginTool.plugin_id == plugin_id, PluginTool.name == name
                )
            ).first()
        if found is None:
            raise NotFound(f"plugin {plugin_id} has no tool '{name}'")
        return found

    @contextmanager
    def _reading(self) -> Iterator[Session]:
        """An ORM session on a read-only transaction: never waits for a writer, so callers
        inside their own write transaction (a bot being published) can read plugins."""
        with self._db.read() as connection, Session(bind=connection) as session:
            yield session

    def _visible(self, session: Any, user_id: int, plugin_id: int) -> PluginRecord:
        """A plugin of one of the user's spaces; NotFound otherwise."""
        row = session.scalars(
            select(PluginRecord).where(
                PluginRecord.id == plugin_id, visible(PluginRecord.space_id, user_id)
            )
        ).first()
        if row is None:
            raise NotFound(f"plugin {plugin_id} does not exist")
        return row

    def _editable(self, session: Any, user_id: int, plugin_id: int) -> PluginRecord:
        """A plugin the user's role lets them change."""
        row = self._visible(session, user_id, plugin_id)
        Access.load(session, user_id).require(row.space_id, Permission.EDIT)
        return row

    def _tool_row(self, session: Any, user_id: int, tool_id: int) -> tuple[PluginTool, Any]:
        found = session.execute(
            select(PluginTool, PluginRecord)
            .join(PluginRecord, PluginRecord.id == PluginTool.plugin_id)
            .where(PluginTool.id == tool_id, visible(PluginRecord.space_id, user_id))
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
                    plugin.owner_id,
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
                plugin.owner_id,
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
        user_id: int,
        row: PluginRecord,
        tools: list[ToolInfo],
        manifest: dict[str, Any] | None = None,
        openapi: dict[str, Any] | None = None,
        version: int | None = None,
    ) -> PluginInfo:
        """The plugin as ``user_id`` sees it: their own credentials' status."""
        manifest = manifest or row.manifest
        kinds = self._credentials.kinds(session, row.id, user_id)
        if row.owner_id != user_id and CLIENT in self._credentials.kinds(
            session, row.id, row.owner_id
        ):
            kinds.add(CLIENT)  # the client secret is the plugin's, whoever set it
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
            space_id=row.space_id,
        )


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
