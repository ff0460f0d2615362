"""Bots: drafts, immutable published versions, and which version each connector serves."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, exists, func, select

from coze_lab.core import connectors
from coze_lab.core.bots.config import BotConfig, BotEdit
from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import InvalidParameter, NotFound, NotPublished
from coze_lab.core.ids import new_id
from coze_lab.core.limits import Limits, text
from coze_lab.core.spaces import Access, Permission, visible
from coze_lab.store import Database
from coze_lab.store.models import (
    BotConnector,
    BotRecord,
    BotVersion,
    Dataset,
    McpServer,
    PluginRecord,
    PluginTool,
    UserTable,
    WorkflowRecord,
    WorkflowVersion,
)

VERSION_CACHE = 1024
#: Coze's connector review results (``/v1/connectors/{connector_id}/bots/{bot_id}``)
AUDIT_PENDING, AUDIT_APPROVED, AUDIT_REJECTED = 1, 2, 3
AUDIT_STATUSES = (AUDIT_PENDING, AUDIT_APPROVED, AUDIT_REJECTED)
PUBLISH_STATUSES = ("all", "published_online", "published_draft", "unpublished_draft")


@dataclass(frozen=True)
class BotInfo:
    """A bot as a caller sees it: ``config`` is the draft, or a published version's."""

    id: int
    owner_id: int
    workspace_id: int
    name: str
    description: str
    icon_url: str
    config: BotConfig
    created_at: datetime
    updated_at: datetime
    #: the version ``config`` comes from (None: the draft)
    version: int | None
    #: connector id -> published version it serves
    connectors: dict[str, int]
    published_at: datetime | None = None

    @property
    def is_published(self) -> bool:
        return bool(self.connectors)


@dataclass(frozen=True)
class ResolvedBot:
    """What a chat runs: the configuration for its connector and the version it came from."""

    bot: BotInfo
    config: BotConfig
    version: int | None


class BotService:
    """Create, edit, publish and resolve bots; every call is scoped to the spaces of the
    calling user (``user_id``): a bot is visible to the members of its workspace, and
    editable by those whose role allows it (``coze_lab.core.spaces``).

    A create or update refuses (400) a model id ``check_model`` refuses and plugin tools
    that are not in the bot's space, and (404) workflows that are not; publishing freezes
    the online plugin versions (``plugin_versions``) and the newest version of each
    workflow into the published version, so republishing a workflow or a plugin never
    changes a published bot.

    Example:
        >>> bots = BotService(db)                                                # doctest: +SKIP
        >>> bot = bots.create(user.id, user.workspace_id, BotEdit("Helper"))    # doctest: +SKIP
        >>> bots.publish(user.id, bot.id, ["1024"])                              # doctest: +SKIP
        1
    """

    def __init__(
        self,
        db: Database,
        *,
        clock: Clock = utcnow,
        check_model: Callable[[str], None] | None = None,
        plugin_versions: Callable[[int, Sequence[int]], dict[int, int]] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self.limits = limits or Limits()
        self._check_model = check_model
        self._plugin_versions = plugin_versions
        self._versions: dict[tuple[int, int], BotConfig] = {}

    # ---- drafts ------------------------------------------------------------------------
    def create(self, owner_id: int, workspace_id: int, edit: BotEdit) -> BotInfo:
        """A new bot in ``workspace_id`` (one of the user's spaces), made by ``owner_id``."""
        name = self.limits.name(edit.name, "name")
        description = self.limits.description(edit.description, "description")
        icon_url = text(edit.icon_url, "icon_url", 1024)
        config = BotConfig().edited(edit.changes)
        now = self._clock()
        with self._db.transaction() as session:
            Access.load(session, owner_id).require(workspace_id, Permission.EDIT)
            self._check(workspace_id, config, session)
            row = BotRecord(
                id=new_id(),
                owner_id=owner_id,
                workspace_id=workspace_id,
                name=name,
                description=description,
                icon_url=icon_url,
                draft=config.to_dict(),
                created_at=now,
                updated_at=now,
            )
            session.add(row)
            session.flush()
            return self._info(session, row)

    def update(self, owner_id: int, bot_id: int, edit: BotEdit) -> BotInfo:
        """Apply an edit to the draft only (published versions never change)."""
        with self._db.transaction() as session:
            row = self._editable(session, owner_id, bot_id)
            config = BotConfig.from_dict(row.draft).edited(edit.changes)
            self._check(row.workspace_id, config, session)
            if edit.name is not None:
                row.name = self.limits.name(edit.name, "name")
            if edit.description is not None:
                row.description = self.limits.description(edit.description, "description")
            if edit.icon_url is not None:
                row.icon_url = text(edit.icon_url, "icon_url", 1024)
            row.draft = config.to_dict()
            row.updated_at = self._clock()
            return self._info(session, row)

    def duplicate(self, user_id: int, bot_id: int, workspace_id: int, name: Any = None) -> BotInfo:
        """A new draft bot in ``workspace_id`` with the configuration of a bot the user can
        read (its newest published version, else its draft): Coze's template duplicate,
        where any bot you can read is a template. ``name`` defaults to the source's."""
        with self._db.transaction() as session:
            try:
                source = self._visible(session, user_id, bot_id)
            except NotFound:
                raise NotFound(
                    f"template {bot_id} does not exist (templates here are the bots you can read)"
                ) from None
            Access.load(session, user_id).require(workspace_id, Permission.EDIT)
            version = self._newest_version(session, bot_id)
            config = BotConfig.from_dict(version.config if version is not None else source.draft)
            # pins belong to a published version; the copy is a draft
            config = replace(config, plugin_versions={}, workflow_versions={})
            self._check(workspace_id, config, session)
            now = self._clock()
            row = BotRecord(
                id=new_id(),
                owner_id=user_id,
                workspace_id=workspace_id,
                name=source.name if name in (None, "") else self.limits.name(name, "name"),
                description=source.description,
                icon_url=source.icon_url,
                draft=config.to_dict(),
                created_at=now,
                updated_at=now,
            )
            session.add(row)
            session.flush()
            return self._info(session, row)

    def get(self, owner_id: int, bot_id: int, *, published: bool = False) -> BotInfo:
        """The draft, or with ``published`` the newest published version (404 if none)."""
        with self._db.reading() as session:
            row = self._visible(session, owner_id, bot_id)
            info = self._info(session, row)
            if not published:
                return info
            version = self._newest_version(session, bot_id)
            if version is None:
                raise NotPublished(f"bot {bot_id} has not been published")
            return replace(
                info, config=BotConfig.from_dict(version.config), version=version.version
            )

    def list(
        self,
        owner_id: int,
        space_id: int | None = None,
        *,
        publish_status: str = "all",
        connector_id: str | None = None,
        page_num: int = 1,
        page_size: int = 20,
    ) -> tuple[list[BotInfo], int]:
        """One page of the bots of a space the user belongs to (None: the personal one),
        newest first, and the total count."""
        if publish_status not in PUBLISH_STATUSES:
            raise InvalidParameter(f"publish_status must be one of {', '.join(PUBLISH_STATUSES)}")
        with self._db.reading() as session:
            access = Access.load(session, owner_id)
        space_id = access.space(space_id)
        access.require(space_id, Permission.READ)
        query = select(BotRecord).where(BotRecord.workspace_id == space_id)
        # correlated: each of the space's bots is checked by primary key (no connector scan)
        published = exists().where(BotConnector.bot_id == BotRecord.id)
        if connector_id is not None:
            published = published.where(BotConnector.connector_id == connector_id)
        if publish_status in ("published_online", "published_draft") or connector_id:
            query = query.where(published)
        elif publish_status == "unpublished_draft":
            query = query.where(~exists().where(BotConnector.bot_id == BotRecord.id))
        with self._db.reading() as session:
            total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
            rows = session.scalars(
                query.order_by(BotRecord.updated_at.desc(), BotRecord.id.desc())
                .offset((page_num - 1) * page_size)
                .limit(page_size)
            ).all()
            infos = [self._info(session, row) for row in rows]
            if publish_status == "published_online":
                infos = [self._online(session, info) for info in infos]
            return infos, total

    def delete(self, owner_id: int, bot_id: int) -> None:
        with self._db.transaction() as session:
            row = self._visible(session, owner_id, bot_id, lock=True)
            Access.load(session, owner_id).require_delete(
                row.workspace_id, row.owner_id, f"bot {bot_id}"
            )
            session.delete(row)

    # ---- publishing --------------------------------------------------------------------
    def publish(self, owner_id: int, bot_id: int, connector_ids: Sequence[str]) -> int:
        """Freeze the draft into the next version and serve it on ``connector_ids``."""
        targets = [connectors.check_publishable(c) for c in dict.fromkeys(connector_ids)]
        if not targets:
            raise InvalidParameter("connector_ids must name at least one connector")
        with self._db.transaction() as session:
            row = self._editable(session, owner_id, bot_id)
            config = BotConfig.from_dict(row.draft)
            self._check(row.workspace_id, config, session)
            if self._plugin_versions is not None and config.plugin_tools:
                pinned = self._plugin_versions(owner_id, [t.tool_id for t in config.plugin_tools])
                config = replace(config, plugin_versions=pinned)
            if config.workflow_ids:
                config = replace(
                    config, workflow_versions=_newest_workflow_versions(session, config)
                )
            newest = self._newest_version(session, bot_id)
            number = 1 if newest is None else newest.version + 1
            now = self._clock()
            session.add(
                BotVersion(
                    id=new_id(),
                    bot_id=bot_id,
                    version=number,
                    config=config.to_dict(),
                    connector_ids=targets,
                    created_at=now,
                )
            )
            for connector_id in targets:
                binding = session.get(BotConnector, (bot_id, connector_id))
                if binding is None:
                    session.add(
                        BotConnector(
                            bot_id=bot_id,
                            connector_id=connector_id,
                            version=number,
                            published_at=now,
                        )
                    )
                else:
                    binding.version = number
                    binding.published_at = now
            return number

    def unpublish(self, owner_id: int, bot_id: int, connector_id: str) -> None:
        connectors.check_publishable(connector_id)
        with self._db.transaction() as session:
            self._editable(session, owner_id, bot_id)
            result = session.execute(
                delete(BotConnector).where(
                    BotConnector.bot_id == bot_id, BotConnector.connector_id == connector_id
                )
            )
            if not result.rowcount:
                raise NotFound(f"bot {bot_id} is not published to connector {connector_id}")

    def review(
        self, owner_id: int, bot_id: int, connector_id: str, audit_status: Any, reason: Any
    ) -> None:
        """A connector's review of a published bot (Coze's ``audit_status``: 1 pending,
        2 approved, 3 rejected). Our connectors serve a bot as soon as it is published, so
        there is nothing to wait for: approved keeps it served, rejected (with a reason)
        stops serving it on that connector, as an unpublish does; pending is refused."""
        connectors.check_publishable(connector_id)
        if isinstance(audit_status, bool) or audit_status not in AUDIT_STATUSES:
            raise InvalidParameter("audit_status must be 1 (pending), 2 (approved) or 3 (rejected)")
        if audit_status == AUDIT_PENDING:
            raise InvalidParameter(
                "audit_status 1 (pending) is not supported: coze_lab's connectors have no review "
                "queue, a published bot is served at once"
            )
        why = text(reason, "reason", 1000)
        if audit_status == AUDIT_REJECTED and not why.strip():
            raise InvalidParameter("reason is required when audit_status is 3 (rejected)")
        with self._db.transaction() as session:
            self._editable(session, owner_id, bot_id)
            binding = session.get(BotConnector, (bot_id, connector_id))
            if binding is None:
                raise connectors.not_published(bot_id, connector_id)
            if audit_status == AUDIT_REJECTED:
                session.delete(binding)

    def resolve(self, owner_id: int, bot_id: int, connector_id: str) -> ResolvedBot:
        """The configuration a chat on ``connector_id`` runs: the draft on the Playground,
        the version published to that connector everywhere else."""
        with self._db.read() as session:  # a statement built once: on every chat's path
            rows = session.execute(_RESOLVE, {"bot": bot_id, "user": owner_id}).all()
            if not rows:
                raise NotFound(f"bot {bot_id} does not exist")
            info = _build(rows[0], [r for r in rows if r.connector_id is not None])
            if connector_id == connectors.PLAYGROUND:
                return ResolvedBot(info, info.config, None)
            number = info.connectors.get(connector_id)
            if number is None:
                raise connectors.not_published(bot_id, connector_id)
            config = self._versions.get((bot_id, number))
            if config is None:  # versions never change: read each one once
                stored = session.scalars(
                    select(BotVersion.config).where(
                        BotVersion.bot_id == bot_id, BotVersion.version == number
                    )
                ).one()
                config = BotConfig.from_dict(stored)
                if len(self._versions) >= VERSION_CACHE:
                    self._versions.pop(next(iter(self._versions)))
                self._versions[(bot_id, number)] = config
            return ResolvedBot(info, config, number)

    # ---- internals ---------------------------------------------------------------------
    def _check(self, space_id: int, config: BotConfig, session: Any) -> None:
        """The model exists, and every plugin tool, table, knowledge base, MCP server and
        workflow the bot names is in the bot's space (so that every member who may chat with
        the bot may use them)."""
        if self._check_model is not None:
            self._check_model(config.model_id)
        if config.plugin_tools:
            pairs = set(
                session.execute(
                    select(PluginTool.plugin_id, PluginTool.id)
                    .join(PluginRecord, PluginRecord.id == PluginTool.plugin_id)
                    .where(
                        PluginRecord.space_id == space_id,
                        PluginTool.id.in_([t.tool_id for t in config.plugin_tools]),
                    )
                ).tuples()
            )
            unknown = [t for t in config.plugin_tools if (t.plugin_id, t.tool_id) not in pairs]
            if unknown:
                named = ", ".join(f"plugin_id {t.plugin_id} api_id {t.tool_id}" for t in unknown)
                raise InvalidParameter(
                    f"plugin_id_list: no such plugin tool in the bot's space: {named}"
                )
        absent = _absent_in_space(session, UserTable, space_id, [t.table_id for t in config.tables])
        if absent:
            raise NotFound(f"table {absent} does not exist in the bot's space")
        absent = _absent_in_space(session, Dataset, space_id, config.dataset_ids)
        if absent:
            raise NotFound(f"knowledge base {absent} does not exist in the bot's space")
        absent = _absent_in_space(
            session, McpServer, space_id, [m.server_id for m in config.mcp_servers]
        )
        if absent:
            # 400, not 404: Coze reports unusable tool references as a bad parameter
            raise InvalidParameter(f"mcp_servers: no such MCP server in the bot's space: {absent}")
        absent = _absent_in_space(session, WorkflowRecord, space_id, config.workflow_ids)
        if absent:
            raise NotFound(f"workflow {absent} does not exist in the bot's space")

    def _visible(self, session: Any, user_id: int, bot_id: int, *, lock: bool = False) -> BotRecord:
        query = select(BotRecord).where(
            BotRecord.id == bot_id, visible(BotRecord.workspace_id, user_id)
        )
        if lock:
            query = query.with_for_update()
        row = session.scalars(query).first()
        if row is None:
            raise NotFound(f"bot {bot_id} does not exist")
        return row

    def _editable(self, session: Any, user_id: int, bot_id: int) -> BotRecord:
        row = self._visible(session, user_id, bot_id, lock=True)
        Access.load(session, user_id).require(row.workspace_id, Permission.EDIT)
        return row

    def _newest_version(self, session: Any, bot_id: int) -> BotVersion | None:
        return session.scalars(
            select(BotVersion)
            .where(BotVersion.bot_id == bot_id)
            .order_by(BotVersion.version.desc())
        ).first()

    def _online(self, session: Any, info: BotInfo) -> BotInfo:
        version = self._newest_version(session, info.id)
        if version is None:
            return info
        return replace(info, config=BotConfig.from_dict(version.config), version=version.version)

    def _info(self, session: Any, row: BotRecord) -> BotInfo:
        bindings = session.scalars(select(BotConnector).where(BotConnector.bot_id == row.id)).all()
        return _build(row, bindings)


def _newest_workflow_versions(session: Any, config: BotConfig) -> dict[int, int]:
    """workflow_id → its newest published version, for a publish to freeze; NotFound for
    a workflow never published (a published bot could not run it)."""
    rows = session.execute(
        select(WorkflowVersion.workflow_id, func.max(WorkflowVersion.version))
        .where(WorkflowVersion.workflow_id.in_(config.workflow_ids))
        .group_by(WorkflowVersion.workflow_id)
    ).all()
    newest = {row[0]: row[1] for row in rows}
    missing = [str(i) for i in config.workflow_ids if i not in newest]
    if missing:
        raise NotFound(f"workflow {', '.join(missing)} has no published version; publish it")
    return {i: int(newest[i]) for i in config.workflow_ids}


_bots, _bound = BotRecord.__table__, BotConnector.__table__
#: a bot visible to ``user`` (the access rule of ``visible``) with its connectors' versions
_RESOLVE = (
    select(_bots, _bound.c.connector_id, _bound.c.version, _bound.c.published_at)
    .outerjoin(_bound, _bound.c.bot_id == _bots.c.id)
    .where(_bots.c.id == bindparam("bot"), visible(_bots.c.workspace_id, bindparam("user")))
)


def _build(row: Any, bindings: Sequence[Any]) -> BotInfo:
    """A BotInfo from a bot row and its connector rows (ORM objects or plain rows)."""
    return BotInfo(
        id=row.id,
        owner_id=row.owner_id,
        workspace_id=row.workspace_id,
        name=row.name,
        description=row.description,
        icon_url=row.icon_url,
        config=BotConfig.from_dict(row.draft),
        created_at=row.created_at,
        updated_at=row.updated_at,
        version=None,
        connectors={b.connector_id: b.version for b in bindings},
        published_at=max((b.published_at for b in bindings), default=None),
    )


def _absent_in_space(session: Any, model: Any, space_id: int, ids: Sequence[int]) -> str:
    """The ``ids`` of ``model`` rows that are not in ``space_id``, comma-separated ("" if none)."""
    if not ids:
        return ""
    known = set(
        session.scalars(select(model.id).where(model.space_id == space_id, model.id.in_(ids)))
    )
    return ", ".join(str(i) for i in ids if i not in known)
