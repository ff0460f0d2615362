"""Durable run state: runs, node records (checkpoint writes), interrupts and events.

Every method is one short transaction. A node's record is committed before the engine
looks at its successors; an interrupt is committed together with its node's record.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import QUESTION_EXPIRED, RUN_CANCELED, Conflict, NotFound
from coze_lab.core.ids import new_id
from coze_lab.store import Database
from coze_lab.store.bulk import BulkInsert, Prepared
from coze_lab.store.models import (
    Interrupt,
    NodeRun,
    RunEvent,
    WorkflowRecord,
    WorkflowRun,
    Workspace,
)
from coze_lab.store.signals import Signals

FINISHED = ("succeeded", "failed", "canceled")


class InterruptGone(Conflict):
    """The interrupt was answered already, expired, or its run was canceled."""


@dataclass(frozen=True)
class NodeRecord:
    node_key: str
    node_id: str
    node_type: str
    status: str
    inputs: dict[str, Any] | None
    outputs: dict[str, Any] | None
    port: str | None
    error: dict[str, Any] | None
    attempts: int
    usage: dict[str, Any] | None
    started_at: datetime | None
    finished_at: datetime | None

    @property
    def latency_ms(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds() * 1000


@dataclass(frozen=True)
class InterruptInfo:
    event_id: int
    run_id: int
    root_run_id: int
    node_key: str
    node_id: str
    type: str
    data: dict[str, Any]
    status: str
    resume_data: Any
    created_at: datetime
    expires_at: datetime


@dataclass
class NodeWrite:
    """A node's final record for ``commit_step`` (``exists``: update instead of insert)."""

    node_key: str
    node_id: str
    node_type: str
    status: str
    inputs: dict[str, Any] | None = None
    outputs: dict[str, Any] | None = None
    port: str | None = None
    error: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    attempts: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    exists: bool = False

    def record(self) -> NodeRecord:
        return NodeRecord(
            self.node_key,
            self.node_id,
            self.node_type,
            self.status,
            self.inputs,
            self.outputs,
            self.port,
            self.error,
            self.attempts,
            self.usage,
            self.started_at,
            self.finished_at,
        )


@dataclass(frozen=True)
class InterruptWrite:
    event_id: int
    root_run_id: int
    node_key: str
    node_id: str
    type: str
    data: dict[str, Any]
    ttl: timedelta
    owner_id: int


@dataclass
class RunInfo:
    id: int
    owner_id: int
    workflow_id: int | None
    version: int | None
    definition: dict[str, Any]
    status: str
    inputs: dict[str, Any]
    outputs: dict[str, Any] | None
    error: dict[str, Any] | None
    usage: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    parent_run_id: int | None = None
    parent_node_key: str | None = None
    root_run_id: int | None = None
    #: the run this one retries from a node (None for a fresh run)
    retry_of: int | None = None
    #: {bot_id, connector_id, connector_uid}: whose variables its nodes read and write
    bot_context: dict[str, str] | None = None
    nodes: dict[str, NodeRecord] = field(default_factory=dict)

    @property
    def root(self) -> int:
        return self.root_run_id or self.id


#: a run's step commits wake other replicas at most this often (seconds): a NOTIFY makes
#: PostgreSQL take a global lock while the transaction commits, so one per step serializes
#: the commits of concurrent runs. A later step, the run's end or the engine's trailing
#: wake-up (``Engine``) carries the events of the steps in between.
STEP_WAKE_EVERY_S = 0.1


class RunStore:
    def __init__(self, db: Database, *, clock: Clock = utcnow) -> None:
        self.db = db
        self.clock = clock
        #: wakes followers and workers on other replicas (set by the engine)
        self.signals: Signals | None = None
        #: run id → when its last step wake-up was sent (time.monotonic)
        self._woke: dict[int, float] = {}

    def _step_wake_due(self, run_id: int) -> bool:
        """Whether this step of the run sends a wake-up (always, where they are local)."""
        if self.signals is None or not self.signals.shared or STEP_WAKE_EVERY_S <= 0:
            return True
        now = time.monotonic()
        # a run's first step opens the window: a run that ends within it wakes once, at
        # its end
        last = self._woke.setdefault(run_id, now)
        if now - last < STEP_WAKE_EVERY_S or last == now:
            return False
        self._woke[run_id] = now
        return True

    def woke_at(self, run_id: int) -> float | None:
        """When the run's last step wake-up was sent (None: none since it ended)."""
        return self._woke.get(run_id)

    def wake(self, run_id: int) -> None:
        """Wake the run's followers on every replica now (a trailing wake-up)."""
        if self.signals is None:
            return
        self._woke[run_id] = time.monotonic()
        if self.signals.shared:  # a hot write: part of a group commit where there is one
            with self.db.hot_write() as conn:
                self.signals.notify(conn, f"run:{run_id}")
        else:
            self.signals.publish(f"run:{run_id}")

    def _wake(self, conn: Any, topic: str) -> None:
        """Tell other replicas, with this transaction's commit (PostgreSQL only: in one
        process the engine wakes its own followers)."""
        if self.signals is not None:
            self.signals.notify(conn, topic)

    # ---- runs ---------------------------------------------------------------------------
    def create(
        self,
        owner_id: int,
        definition: dict[str, Any],
        inputs: dict[str, Any],
        *,
        workflow_id: int | None = None,
        version: int | None = None,
        lease_owner: str | None = None,
        lease_s: float = 30,
        parent: tuple[int, str, int] | None = None,
        notes: Sequence[dict[str, Any]] = (),
        retry_of: int | None = None,
        seed: Sequence[NodeWrite] = (),
        bot_context: dict[str, str] | None = None,
        first_step: tuple[Sequence[NodeWrite], Sequence[tuple[int, str, dict[str, Any]]]] = (
            (),
            (),
        ),
    ) -> int:
        """A new running run; ``parent`` = (parent run, child key, root run) for child runs;
        ``notes`` become its first events (``note``), written with it. A retry names the run
        it retries (``retry_of``) and starts with ``seed``, the node records it reuses.
        ``first_step`` (node records, numbered events after the notes): its first step,
        written with it."""
        now = self.clock()
        run_id = new_id()
        with self.db.hot_write() as conn:
            _RUNS.run(
                conn,
                [
                    {
                        "id": run_id,
                        "owner_id": owner_id,
                        "workflow_id": workflow_id,
                        "version": version,
                        "parent_run_id": parent[0] if parent else None,
                        "parent_node_key": parent[1] if parent else None,
                        "root_run_id": parent[2] if parent else run_id,
                        "retry_of": retry_of,
                        "bot_context": bot_context,
                        "definition": definition,
                        "status": "running",
                        "inputs": inputs,
                        "outputs": None,
                        "error": None,
                        "usage": None,
                        "lease_owner": lease_owner,
                        "lease_until": now + timedelta(seconds=lease_s) if lease_owner else None,
                        "created_at": now,
                        "updated_at": now,
                        "finished_at": None,
                    }
                ],
            )
            _NODES.run(conn, [_node_row(run_id, n) for n in seed])
            if notes:
                _EVENTS.run(
                    conn,
                    [
                        {
                            "id": new_id(),
                            "run_id": run_id,
                            "seq": seq,
                            "event": "note",
                            "data": note,
                            "created_at": now,
                        }
                        for seq, note in enumerate(notes, 1)
                    ],
                )
            if first_step[0] or first_step[1]:
                _write_step(conn, run_id, first_step[0], first_step[1], (), now)
        return run_id

    def child(self, parent_run_id: int, key: str) -> RunInfo | None:
        """The child run a node started under ``key`` (a sub-workflow, a loop iteration)."""
        with self.db.read() as conn:
            row = conn.execute(
                select(WorkflowRun.id).where(
                    WorkflowRun.parent_run_id == parent_run_id, WorkflowRun.parent_node_key == key
                )
            ).first()
        return None if row is None else self.get(row.id)

    def team_space(self, workflow_id: int) -> int | None:
        """The team space a workflow belongs to; None for a personal one (or none left)."""
        query = (
            select(WorkflowRecord.space_id)
            .join(Workspace, Workspace.id == WorkflowRecord.space_id)
            .where(WorkflowRecord.id == workflow_id, Workspace.workspace_type == "team")
        )
        with self.db.read() as conn:
            return conn.execute(query).scalar_one_or_none()

    def get(self, run_id: int, owner_id: int | None = None, *, nodes: bool = True) -> RunInfo:
        query = select(WorkflowRun.__table__).where(WorkflowRun.id == run_id)
        if owner_id is not None:
            query = query.where(WorkflowRun.owner_id == owner_id)
        with self.db.read() as conn:
            row = conn.execute(query).mappings().first()
            if row is None:
                raise NotFound(f"run {run_id} does not exist")
            info = RunInfo(**{k: row[k] for k in _RUN_FIELDS})
            if nodes:
                for node in conn.execute(
                    select(NodeRun.__table__).where(NodeRun.run_id == run_id)
                ).mappings():
                    info.nodes[node["node_key"]] = NodeRecord(**{k: node[k] for k in _NODE_FIELDS})
        return info

    def list(
        self, owner_id: int, *, workflow_id: int | None = None, limit: int = 20, offset: int = 0
    ) -> list[RunInfo]:
        query = select(WorkflowRun.__table__).where(WorkflowRun.owner_id == owner_id)
        if workflow_id is not None:
            query = query.where(WorkflowRun.workflow_id == workflow_id)
        with self.db.read() as conn:
            rows = conn.execute(
                query.order_by(WorkflowRun.id.desc()).limit(limit).offset(offset)
            ).mappings()
            return [RunInfo(**{k: row[k] for k in _RUN_FIELDS}) for row in rows]

    def claim(self, run_id: int, worker: str, lease_s: float) -> bool:
        """Take the run's lease unless a live worker holds it; only running runs are taken."""
        now = self.clock()
        with self.db.hot_write() as conn:
            result = _CLAIM.run(
                conn,
                {
                    "run": run_id,
                    "worker": worker,
                    "now": now,
                    "until": now + timedelta(seconds=lease_s),
                },
            )
            return result.rowcount == 1

    def canceled(self, run_ids: Sequence[int]) -> list[int]:
        """The runs of ``run_ids`` that were canceled."""
        if not run_ids:
            return []
        with self.db.read() as connection:
            return list(
                connection.scalars(
                    select(WorkflowRun.id).where(
                        WorkflowRun.id.in_(run_ids), WorkflowRun.status == "canceled"
                    )
                )
            )

    def renew(self, run_id: int, worker: str, lease_s: float) -> str | None:
        """Extend the lease; return the run's status (None when the lease was lost)."""
        now = self.clock()
        with self.db.transaction() as session:
            session.execute(
                update(WorkflowRun)
                .where(WorkflowRun.id == run_id, WorkflowRun.lease_owner == worker)
                .values(lease_until=now + timedelta(seconds=lease_s))
            )
            row = session.execute(
                select(WorkflowRun.status, WorkflowRun.lease_owner).where(WorkflowRun.id == run_id)
            ).first()
        if row is None or row.lease_owner != worker:
            return None
        return row.status

    def stale_runs(self, limit: int = 50) -> list[int]:
        """Running top-level runs whose worker stopped renewing its lease (it died).

        Child runs are driven by their root's worker, so only roots are listed.
        """
        now = self.clock()
        with self.db.read() as conn:
            return list(
                conn.execute(
                    select(WorkflowRun.id)
                    .where(
                        WorkflowRun.status == "running",
                        WorkflowRun.parent_run_id.is_(None),
                        or_(WorkflowRun.lease_until.is_(None), WorkflowRun.lease_until < now),
                    )
                    .order_by(WorkflowRun.id)
                    .limit(limit)
                ).scalars()
            )

    def finish(
        self,
        run_id: int,
        worker: str,
        status: str,
        *,
        outputs: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        usage: dict[str, Any] | None = None,
        event: tuple[int, str, dict[str, Any]] | None = None,
        step: tuple[Sequence[NodeWrite], Sequence[tuple[int, str, dict[str, Any]]]] = ((), ()),
    ) -> datetime | None:
        """Record the run's end (or its pause as ``interrupted``) and release the lease.

        ``event`` is stored in the same transaction, and only if the run was finished.
        ``step`` (node records, numbered events): the run's last step, committed in the
        same transaction in every case (also when the run is not finished here).
        Returns the time written, or None when the run was not this worker's to finish.
        """
        now = self.clock()
        nodes, events = step
        with self.db.hot_write() as conn:
            if nodes or events:
                _write_step(conn, run_id, nodes, events, (), now)
            if (
                status == "interrupted"
                and _PENDING_NODE.run(conn, {"run": run_id}).fetchone() is not None
            ):
                if events:
                    self._wake(conn, f"run:{run_id}")
                return None  # an answer arrived meanwhile: the worker drives on
            result = _FINISH.run(
                conn,
                {
                    "run": run_id,
                    "worker": worker,
                    "new_status": status,
                    "new_outputs": outputs,
                    "new_error": error,
                    "new_usage": usage,
                    "now": now,
                    "finished": now if status in FINISHED else None,
                },
            )
            if result.rowcount != 1:
                if events:
                    self._wake(conn, f"run:{run_id}")
                return None
            if event is not None:
                _EVENTS.run(
                    conn,
                    [
                        {
                            "id": new_id(),
                            "run_id": run_id,
                            "seq": event[0],
                            "event": event[1],
                            "data": event[2],
                            "created_at": now,
                        }
                    ],
                )
                self._wake(conn, f"run:{run_id}")
                self._woke.pop(run_id, None)  # its last wake-up carries every step's events
            return now

    def cancel(self, run_id: int, owner_id: int) -> bool:
        now = self.clock()
        with self.db.transaction() as session:
            exists = session.execute(
                select(WorkflowRun.status).where(
                    WorkflowRun.id == run_id, WorkflowRun.owner_id == owner_id
                )
            ).first()
            if exists is None:
                raise NotFound(f"run {run_id} does not exist")
            # the run and the runs it started (sub-workflows, loop iterations) stop together
            session.execute(
                update(WorkflowRun)
                .where(
                    or_(WorkflowRun.id == run_id, WorkflowRun.root_run_id == run_id),
                    WorkflowRun.status.in_(("running", "interrupted")),
                )
                .values(
                    status="canceled",
                    lease_owner=None,
                    lease_until=None,
                    updated_at=now,
                    finished_at=now,
                    error={"code": RUN_CANCELED, "msg": "canceled"},
                )
            )
            session.execute(
                update(Interrupt)
                .where(
                    or_(Interrupt.run_id == run_id, Interrupt.root_run_id == run_id),
                    Interrupt.status == "pending",
                )
                .values(status="canceled", resolved_at=now)
            )
            # the replica executing it stops at once (LISTEN/NOTIFY), not at its next renewal
            self._wake(session.connection(), f"cancel-run:{run_id}")
            return exists.status in ("running", "interrupted")

    # ---- nodes --------------------------------------------------------------------------
    def commit_step(
        self,
        run_id: int,
        nodes: list[NodeWrite],
        events: list[tuple[int, str, dict[str, Any]]],
        *,
        interrupts: list[InterruptWrite] | None = None,
    ) -> bool:
        """One transaction: finished and skipped node records, their events, the events of
        the nodes they unlock, and new interrupts. Plain INSERTs: this is the hot path.
        False when its events woke no other replica (see ``STEP_WAKE_EVERY_S``)."""
        now = self.clock()
        wake = bool(events) and self._step_wake_due(run_id)
        with self.db.hot_write() as conn:
            _write_step(conn, run_id, nodes, events, interrupts or [], now)
            if wake:
                self._wake(conn, f"run:{run_id}")
        return wake or not events

    def interrupt(self, event_id: int | str, owner_id: int) -> InterruptInfo:
        event_id = _event_id(event_id)
        with self.db.read() as conn:
            row = conn.execute(
                select(Interrupt.__table__).where(
                    Interrupt.id == event_id, Interrupt.owner_id == owner_id
                )
            ).first()
        if row is None:
            raise NotFound(f"interrupt {event_id} does not exist")
        return _interrupt_info(row)

    def resolve(self, event_id: int | str, owner_id: int, resume_data: Any) -> InterruptInfo:
        """Mark a pending interrupt answered and its run runnable; exactly one caller wins."""
        event_id = _event_id(event_id)
        now = self.clock()
        with self.db.transaction() as session:
            row = session.scalars(
                select(Interrupt).where(Interrupt.id == event_id, Interrupt.owner_id == owner_id)
            ).first()
            if row is None:
                raise NotFound(f"interrupt {event_id} does not exist")
            won = (
                session.execute(
                    update(Interrupt)
                    .where(
                        Interrupt.id == event_id,
                        Interrupt.status == "pending",
                        Interrupt.expires_at > now,
                    )
                    .values(status="resumed", resume_data={"value": resume_data}, resolved_at=now)
                ).rowcount
                == 1
            )
            if not won:
                state = "expired" if row.status == "pending" else row.status
                raise InterruptGone(f"question {event_id} {_GONE.get(state, 'is ' + state)}")
            session.execute(
                update(NodeRun)
                .where(NodeRun.run_id == row.run_id, NodeRun.node_key == row.node_key)
                .values(status="pending")
            )
            _reopen(session, row.run_id, row.node_key, now)
            session.refresh(row)
            return _interrupt_info(row)

    def answered(self, run_id: int, node_key: str) -> Any:
        """The newest answer given to the node's interrupt (what a re-run node reads)."""
        with self.db.read() as conn:
            row = conn.execute(
                select(Interrupt.resume_data)
                .where(
                    Interrupt.run_id == run_id,
                    Interrupt.node_key == node_key,
                    Interrupt.status.in_(("resumed", "expired")),
                    Interrupt.resume_data.is_not(None),
                )
                .order_by(Interrupt.resolved_at.desc(), Interrupt.id.desc())
                .limit(1)
            ).first()
        return None if row is None or row.resume_data is None else row.resume_data["value"]

    def pending(self, owner_id: int, run_id: int | None = None) -> list[InterruptInfo]:
        """Pending questions of a user, or of one run and every run it started."""
        query = select(Interrupt.__table__).where(
            Interrupt.owner_id == owner_id, Interrupt.status == "pending"
        )
        if run_id is not None:
            with self.db.read() as conn:
                root = conn.execute(
                    select(WorkflowRun.root_run_id).where(WorkflowRun.id == run_id)
                ).scalar()
            query = query.where(Interrupt.root_run_id == (root or run_id))
        with self.db.read() as conn:
            found = [_interrupt_info(r) for r in conn.execute(query.order_by(Interrupt.id))]
        if run_id is None:
            return found
        return [i for i in found if self._under(i.run_id, run_id)]

    def _under(self, run_id: int | None, ancestor: int) -> bool:
        """Whether ``run_id`` is ``ancestor`` or a run started (transitively) by it."""
        with self.db.read() as conn:
            while run_id is not None:
                if run_id == ancestor:
                    return True
                run_id = conn.execute(
                    select(WorkflowRun.parent_run_id).where(WorkflowRun.id == run_id)
                ).scalar()
        return False

    def expire_due(self) -> list[InterruptInfo]:
        """Mark pending interrupts past their expiry as expired; return them."""
        now = self.clock()
        with self.db.transaction() as session:
            rows = session.scalars(
                select(Interrupt).where(Interrupt.status == "pending", Interrupt.expires_at <= now)
            ).all()
            for row in rows:
                row.status, row.resolved_at = "expired", now
            return [_interrupt_info(r) for r in rows]

    def take_timeout_branch(self, event_id: int) -> None:
        """An expired question whose node has a timeout branch: continue down that branch."""
        now = self.clock()
        with self.db.transaction() as session:
            row = session.get(Interrupt, event_id)
            if row is None or row.status != "expired":
                return
            row.resume_data = {"value": TIMED_OUT}
            _reopen(session, row.run_id, row.node_key, now)

    def fail_expired(self, info: InterruptInfo) -> bool:
        """An expired question without a timeout branch fails its (root) run, visibly."""
        now = self.clock()
        error = {
            "code": QUESTION_EXPIRED,
            "msg": f"question {info.event_id} on node '{info.node_id}' expired unanswered",
            "node_id": info.node_id,
        }
        with self.db.transaction() as session:
            failed = session.execute(
                update(WorkflowRun)
                .where(
                    WorkflowRun.root_run_id == info.root_run_id, WorkflowRun.status == "interrupted"
                )
                .values(status="failed", error=error, updated_at=now, finished_at=now)
            ).rowcount
            session.execute(
                update(Interrupt)
                .where(Interrupt.root_run_id == info.root_run_id, Interrupt.status == "pending")
                .values(status="canceled", resolved_at=now)
            )
            return failed > 0

    # ---- events -------------------------------------------------------------------------
    def add_event(self, run_id: int, event: str, data: dict[str, Any]) -> int:
        """Append an event after the newest one (retrying if a worker took that number)."""
        for _ in range(5):
            try:
                with self.db.transaction() as session:
                    seq = (
                        session.execute(
                            select(func.coalesce(func.max(RunEvent.seq), 0)).where(
                                RunEvent.run_id == run_id
                            )
                        ).scalar_one()
                        + 1
                    )
                    session.add(
                        RunEvent(
                            id=new_id(),
                            run_id=run_id,
                            seq=seq,
                            event=event,
                            data=data,
                            created_at=self.clock(),
                        )
                    )
                    self._wake(session.connection(), f"run:{run_id}")
                return seq
            except IntegrityError:
                continue
        raise RuntimeError(f"could not append an event to run {run_id}")

    def last_seq(self, run_id: int) -> int:
        with self.db.read() as conn:
            return conn.execute(
                select(func.coalesce(func.max(RunEvent.seq), 0)).where(RunEvent.run_id == run_id)
            ).scalar_one()

    def events(self, run_id: int, after: int = 0) -> list[tuple[int, str, dict[str, Any]]]:
        with self.db.read() as conn:
            rows = conn.execute(
                select(RunEvent.seq, RunEvent.event, RunEvent.data)
                .where(RunEvent.run_id == run_id, RunEvent.seq > after)
                .order_by(RunEvent.seq)
            ).all()
        return [(r.seq, r.event, r.data) for r in rows]


#: what a question node reads when its question expired and it has a timeout branch
TIMED_OUT = {"__timeout__": True}


#: why a question can no longer be answered, as the person asking reads it
_GONE = {
    "resumed": "was already answered",
    "expired": "expired unanswered",
    "canceled": "was canceled with its run",
}


def _reopen(session: Any, run_id: int | None, node_key: str, now: datetime) -> None:
    """Make the node runnable again, and every node (up to the root) waiting on its run."""
    while run_id is not None:
        session.execute(
            update(NodeRun)
            .where(
                NodeRun.run_id == run_id,
                NodeRun.node_key == node_key,
                NodeRun.status.in_(("interrupted", "pending")),
            )
            .values(status="pending")
        )
        session.execute(
            update(WorkflowRun)
            .where(WorkflowRun.id == run_id, WorkflowRun.status.in_(("interrupted", "running")))
            .values(status="running", updated_at=now)
        )
        parent = session.execute(
            select(WorkflowRun.parent_run_id, WorkflowRun.parent_node_key).where(
                WorkflowRun.id == run_id
            )
        ).first()
        run_id = parent.parent_run_id if parent else None
        node_key = (parent.parent_node_key or "").split("#", 1)[0]


_RUNS = BulkInsert(WorkflowRun.__table__)
_CLAIM = Prepared(
    update(WorkflowRun)
    .where(
        WorkflowRun.id == bindparam("run"),
        WorkflowRun.status == "running",
        or_(
            WorkflowRun.lease_owner.is_(None),
            WorkflowRun.lease_owner == bindparam("worker"),
            WorkflowRun.lease_until < bindparam("now"),
        ),
    )
    .values(
        lease_owner=bindparam("worker"), lease_until=bindparam("until"), updated_at=bindparam("now")
    )
)
_FINISH = Prepared(
    update(WorkflowRun)
    .where(
        WorkflowRun.id == bindparam("run"),
        WorkflowRun.status == "running",
        WorkflowRun.lease_owner == bindparam("worker"),
    )
    .values(
        status=bindparam("new_status"),
        outputs=bindparam("new_outputs"),
        error=bindparam("new_error"),
        usage=bindparam("new_usage"),
        lease_owner=None,
        lease_until=None,
        updated_at=bindparam("now"),
        finished_at=bindparam("finished"),
    )
)
_PENDING_NODE = Prepared(
    select(NodeRun.id)
    .where(NodeRun.run_id == bindparam("run"), NodeRun.status == "pending")
    .limit(1)
)
#: a node's record written again (a node that runs again after a question was answered)
_NODE_UPDATE = Prepared(
    update(NodeRun)
    .where(NodeRun.run_id == bindparam("run_id"), NodeRun.node_key == bindparam("node_key"))
    .values(
        {
            column.name: bindparam(column.name)
            for column in NodeRun.__table__.columns
            if column.name not in ("id", "run_id", "node_key")
        }
    )
)
_NODES = BulkInsert(NodeRun.__table__)
_EVENTS = BulkInsert(RunEvent.__table__)
_INTERRUPTS = BulkInsert(Interrupt.__table__)
_RUN_FIELDS = (
    "id",
    "owner_id",
    "workflow_id",
    "version",
    "definition",
    "status",
    "inputs",
    "outputs",
    "error",
    "usage",
    "created_at",
    "updated_at",
    "finished_at",
    "parent_run_id",
    "parent_node_key",
    "root_run_id",
    "retry_of",
    "bot_context",
)
_NODE_FIELDS = (
    "node_key",
    "node_id",
    "node_type",
    "status",
    "inputs",
    "outputs",
    "port",
    "error",
    "attempts",
    "usage",
    "started_at",
    "finished_at",
)


def _write_step(
    conn: Any,
    run_id: int,
    nodes: Sequence[NodeWrite],
    events: Sequence[tuple[int, str, dict[str, Any]]],
    interrupts: Sequence[InterruptWrite],
    now: datetime,
) -> None:
    """A step's node records (inserted, or updated when ``exists``), new interrupts and
    numbered events, inside the caller's transaction."""
    _NODES.run(conn, [_node_row(run_id, n) for n in nodes if not n.exists])
    for node in nodes:
        if node.exists:
            _NODE_UPDATE.run(conn, _node_row(run_id, node))
    if interrupts:
        _INTERRUPTS.run(
            conn,
            [
                {
                    "id": i.event_id,
                    "run_id": run_id,
                    "root_run_id": i.root_run_id,
                    "owner_id": i.owner_id,
                    "node_key": i.node_key,
                    "node_id": i.node_id,
                    "type": i.type,
                    "data": i.data,
                    "status": "pending",
                    "resume_data": None,
                    "created_at": now,
                    "expires_at": now + i.ttl,
                    "resolved_at": None,
                }
                for i in interrupts
            ],
        )
    _EVENTS.run(
        conn,
        [
            {
                "id": new_id(),
                "run_id": run_id,
                "seq": seq,
                "event": event,
                "data": data,
                "created_at": now,
            }
            for seq, event, data in events
        ],
    )


def _node_row(run_id: int, node: NodeWrite) -> dict[str, Any]:
    return {
        "id": new_id(),
        "run_id": run_id,
        "node_key": node.node_key,
        "node_id": node.node_id,
        "node_type": node.node_type,
        "status": node.status,
        "inputs": node.inputs,
        "outputs": node.outputs,
        "port": node.port,
        "error": node.error,
        "usage": node.usage,
        "attempts": node.attempts,
        "started_at": node.started_at,
        "finished_at": node.finished_at,
    }


def _event_id(event_id: int | str) -> int:
    """Event ids travel as strings on the wire (JSON-safe); the column is a big integer."""
    try:
        return int(event_id)
    except (TypeError, ValueError):
        raise NotFound(f"interrupt {event_id} does not exist") from None


def _interrupt_info(row: Any) -> InterruptInfo:
    return InterruptInfo(
        event_id=row.id,
        run_id=row.run_id,
        root_run_id=row.root_run_id,
        node_key=row.node_key,
        node_id=row.node_id,
        type=row.type,
        data=row.data,
        status=row.status,
        resume_data=None if row.resume_data is None else row.resume_data.get("value"),
        created_at=row.created_at,
        expires_at=row.expires_at,
    )
