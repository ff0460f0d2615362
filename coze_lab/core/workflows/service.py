"""Stored workflows: editable drafts, immutable numbered versions, atomic publish."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, exists, func, select
from sqlalchemy.exc import IntegrityError

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import Conflict, InvalidParameter, NotFound
from coze_lab.core.ids import new_id
from coze_lab.core.limits import Limits
from coze_lab.core.spaces import Access, Permission, visible
from coze_lab.core.workflows.spec import WorkflowDefinitionError, WorkflowSpec
from coze_lab.core.workflows.validate import validate
from coze_lab.store import Database
from coze_lab.store.models import User, WorkflowRecord, WorkflowVersion

#: parsed published versions kept in memory
VERSION_CACHE = 1024
#: Coze's ``publish_status`` filter of the workflow and version lists
PUBLISH_STATUSES = ("all", "published_online", "unpublished_draft")


#: the newest published version of a workflow the user may run (its space is one of theirs),
#: built once: every published run reads it
_PUBLISHED = (
    select(WorkflowVersion.id, WorkflowVersion.version)
    .join(WorkflowRecord, WorkflowRecord.id == WorkflowVersion.workflow_id)
    .where(
        WorkflowVersion.workflow_id == bindparam("workflow_id"),
        visible(WorkflowRecord.space_id, bindparam("user_id")),
    )
    .order_by(WorkflowVersion.version.desc())
    .limit(1)
)
#: the same, for one published version number
_PUBLISHED_AT = _PUBLISHED.where(WorkflowVersion.version == bindparam("version"))


@dataclass(frozen=True)
class WorkflowInfo:
    id: int
    owner_id: int
    name: str
    description: str
    draft: dict[str, Any]
    published_version: int | None
    created_at: datetime
    updated_at: datetime
    #: the space the workflow belongs to (its members read, run and edit it)
    space_id: int = 0
    #: the name of the member who made it
    owner_name: str = ""


@dataclass(frozen=True)
class VersionInfo:
    """A published version of a workflow (Coze's WorkflowVersionInfo).

    No publisher is recorded per version: ``creator_id`` is the workflow's maker."""

    workflow_id: int
    version: int
    description: str
    created_at: datetime
    creator_id: int
    creator_name: str


class WorkflowService:
    """Save drafts, publish versions and pick the definition a run uses.

    A workflow belongs to a space: the members of the space read, run and edit it
    (``coze_lab.core.spaces``); ``owner_id`` is the member who made it.

    Example:
        >>> info = workflows.save(user.id, wf.to_json())       # doctest: +SKIP
        >>> workflows.publish(user.id, info.id)                # doctest: +SKIP
        1
    """

    def __init__(
        self, db: Database, *, clock: Clock = utcnow, limits: Limits | None = None
    ) -> None:
        self._db = db
        self._clock = clock
        self.limits = limits or Limits()
        self._versions: dict[int, WorkflowSpec] = {}  # version row id → parsed definition
        self._versions_lock = threading.Lock()  # runnable() runs in reader threads too

    def save(
        self, owner_id: int, definition: dict[str, Any], *, space_id: int | None = None
    ) -> WorkflowInfo:
        """Create the workflow, or replace the draft of the space's workflow of that name
        (``space_id`` None: the user's personal space)."""
        spec = WorkflowSpec.from_dict(definition)
        check_size(spec, self.limits)
        validate(spec)
        canonical = spec.to_dict()
        now = self._clock()
        try:
            with self._db.transaction() as session:
                access = Access.load(session, owner_id)
                space = access.space(space_id)
                access.require(space, Permission.EDIT)
                row = session.scalars(
                    select(WorkflowRecord)
                    .where(WorkflowRecord.space_id == space, WorkflowRecord.name == spec.name)
                    .with_for_update()
                ).first()
                if row is None:
                    row = WorkflowRecord(
                        id=new_id(),
                        owner_id=owner_id,
                        space_id=space,
                        name=spec.name,
                        created_at=now,
                    )
                    session.add(row)
                row.description, row.draft, row.updated_at = spec.description, canonical, now
                session.flush()
                return self._info(session, row)
        except IntegrityError as exc:  # the same name created concurrently
            raise Conflict(f"workflow '{spec.name}' was created concurrently; retry") from exc

    def publish(self, owner_id: int, workflow_id: int) -> int:
        """Snapshot the draft as the next version, in one transaction; return its number."""
        with self._db.transaction() as session:
            row = self._visible(session, owner_id, workflow_id)
            Access.load(session, owner_id).require(row.space_id, Permission.EDIT)
            latest = session.execute(
                select(func.max(WorkflowVersion.version)).where(
                    WorkflowVersion.workflow_id == workflow_id
                )
            ).scalar()
            number = (latest or 0) + 1
            session.add(
                WorkflowVersion(
                    id=new_id(),
                    workflow_id=workflow_id,
                    version=number,
                    definition=row.draft,
                    created_at=self._clock(),
                )
            )
        return number

    def get(self, owner_id: int, workflow_id: int) -> WorkflowInfo:
        with self._db.reading() as session:
            return self._info(session, self._visible(session, owner_id, workflow_id))

    def list(self, owner_id: int, *, space_id: int | None = None) -> list[WorkflowInfo]:
        """The workflows of a space the user belongs to (None: the personal one), newest
        first."""
        with self._db.reading() as session:
            access = Access.load(session, owner_id)
            space = access.space(space_id)
            access.require(space, Permission.READ)
            rows = session.scalars(
                select(WorkflowRecord)
                .where(WorkflowRecord.space_id == space)
                .order_by(WorkflowRecord.id.desc())
            ).all()
            return [self._info(session, row) for row in rows]

    def page(
        self,
        user_id: int,
        *,
        space_id: int | None = None,
        publish_status: str = "all",
        page_num: int = 1,
        page_size: int = 100,
    ) -> tuple[list[WorkflowInfo], bool]:
        """One page of a space's workflows (Coze's ``/v1/workflows``), newest first, and
        whether more follow. ``publish_status``: all, published_online (published at least
        once) or unpublished_draft (never published)."""
        if publish_status not in PUBLISH_STATUSES:
            raise InvalidParameter(f"publish_status must be one of {', '.join(PUBLISH_STATUSES)}")
        with self._db.reading() as session:
            access = Access.load(session, user_id)
            space = access.space(space_id)
            access.require(space, Permission.READ)
            query = select(WorkflowRecord).where(WorkflowRecord.space_id == space)
            published = exists().where(WorkflowVersion.workflow_id == WorkflowRecord.id)
            if publish_status == "published_online":
                query = query.where(published)
            elif publish_status == "unpublished_draft":
                query = query.where(~published)
            rows = session.scalars(
                query.order_by(WorkflowRecord.id.desc())
                .offset((page_num - 1) * page_size)
                .limit(page_size + 1)
            ).all()
            return [self._info(session, row) for row in rows[:page_size]], len(rows) > page_size

    def versions(
        self,
        user_id: int,
        workflow_id: int,
        *,
        publish_status: str = "published_online",
        page_size: int = 10,
        before: int | None = None,
    ) -> tuple[list[VersionInfo], bool]:
        """The workflow's published versions, newest first, below version ``before`` (the
        page token), and whether more follow. The draft is not a version:
        ``unpublished_draft`` lists none."""
        if publish_status not in PUBLISH_STATUSES:
            raise InvalidParameter(f"publish_status must be one of {', '.join(PUBLISH_STATUSES)}")
        with self._db.reading() as session:
            row = self._visible(session, user_id, workflow_id)
            if publish_status == "unpublished_draft":
                return [], False
            query = select(
                WorkflowVersion.version, WorkflowVersion.created_at, WorkflowVersion.definition
            ).where(WorkflowVersion.workflow_id == workflow_id)
            if before is not None:
                query = query.where(WorkflowVersion.version < before)
            found = session.execute(
                query.order_by(WorkflowVersion.version.desc()).limit(page_size + 1)
            ).all()
            maker = session.get(User, row.owner_id)
            items = [
                VersionInfo(
                    workflow_id=workflow_id,
                    version=v.version,
                    description=str((v.definition or {}).get("description", "")),
                    created_at=v.created_at,
                    creator_id=row.owner_id,
                    creator_name=maker.name if maker else "",
                )
                for v in found[:page_size]
            ]
            return items, len(found) > page_size

    def delete(self, owner_id: int, workflow_id: int) -> None:
        with self._db.transaction() as session:
            row = self._visible(session, owner_id, workflow_id)
            Access.load(session, owner_id).require_delete(
                row.space_id, row.owner_id, f"workflow {workflow_id}"
            )
            session.delete(row)

    def runnable(
        self,
        owner_id: int,
        workflow_id: int,
        *,
        draft: bool = False,
        version: int | None = None,
    ) -> tuple[WorkflowSpec, int | None]:
        """The definition a run uses: the newest published version, the published
        ``version`` given, or the draft."""
        if draft:
            with self._db.reading() as session:
                row = self._visible(session, owner_id, workflow_id)
                return WorkflowSpec.from_dict(row.draft), None
        # the hot path of every published run: one indexed read, a parsed spec from the cache.
        # The read stays: it checks that the caller is still a member of the workflow's space
        # (a removal counts from the next request) and finds the newest published version;
        # only a version's definition, which never changes once published, is cached.
        with self._db.read() as conn:
            found = conn.execute(
                _PUBLISHED if version is None else _PUBLISHED_AT,
                {"workflow_id": workflow_id, "user_id": owner_id, "version": version},
            ).first()
            if found is None:
                with self._db.reading() as session:
                    self._visible(session, owner_id, workflow_id)  # NotFound if not theirs
                if version is not None:
                    raise NotFound(f"workflow {workflow_id} has no published version {version}")
                raise NotFound(f"workflow {workflow_id} has no published version; publish it")
            spec = self._versions.get(found.id)
            if spec is None:  # versions never change: read and parse each one once
                spec = WorkflowSpec.from_dict(
                    conn.scalar(
                        select(WorkflowVersion.definition).where(WorkflowVersion.id == found.id)
                    )
                )
                with self._versions_lock:
                    while len(self._versions) >= VERSION_CACHE:
                        self._versions.pop(next(iter(self._versions)))
                    self._versions[found.id] = spec
            return spec, found.version

    def _visible(self, session: Any, user_id: int, workflow_id: int) -> WorkflowRecord:
        row = session.scalars(
            select(WorkflowRecord).where(
                WorkflowRecord.id == workflow_id, visible(WorkflowRecord.space_id, user_id)
            )
        ).first()
        if row is None:
            raise NotFound(f"workflow {workflow_id} does not exist")
        return row

    def _info(self, session: Any, row: WorkflowRecord) -> WorkflowInfo:
        published = session.execute(
            select(func.max(WorkflowVersion.version)).where(WorkflowVersion.workflow_id == row.id)
        ).scalar()
        return WorkflowInfo(
            id=row.id,
            owner_id=row.owner_id,
            name=row.name,
            description=row.description,
            draft=row.draft,
            published_version=published,
            created_at=row.created_at,
            updated_at=row.updated_at,
            space_id=row.space_id,
            owner_name=getattr(session.get(User, row.owner_id), "name", ""),
        )


def check_size(spec: WorkflowSpec, limits: Limits) -> None:
    """InvalidParameter when a definition is larger than ``limits`` allow: its name,
    description, node and edge counts, node titles, input descriptions."""
    limits.name(spec.name, "the workflow name")
    limits.description(spec.description, "the workflow description")
    if len(spec.nodes) > limits.workflow_nodes:
        raise WorkflowDefinitionError(
            f"a workflow has at most {limits.workflow_nodes} nodes, this one {len(spec.nodes)} "
            "(setting: max_workflow_nodes)"
        )
    if len(spec.edges) > 4 * limits.workflow_nodes:
        raise WorkflowDefinitionError(
            f"a workflow has at most {4 * limits.workflow_nodes} edges, this one {len(spec.edges)}"
        )
    for node in spec.nodes:
        if isinstance(node.title, str) and len(node.title) > limits.name_chars:
            raise WorkflowDefinitionError(
                f"the title is longer than {limits.name_chars} characters", str(node.id)[:64]
            )
    for item in spec.inputs:
        limits.description(item.description, f"the description of input '{str(item.name)[:64]}'")
