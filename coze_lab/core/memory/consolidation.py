"""The durable background job that turns queued messages into memory.

A job (one user message, ``memory_jobs``) is **claimed** with a lease: on PostgreSQL and
MariaDB the candidate row is read ``FOR UPDATE SKIP LOCKED`` (two replicas never pick the
same job), and everywhere the claim itself is a conditional update (``lease_until`` past or
empty), so a job claimed by a process that died is claimed again once its lease expires.
A worker renews its lease while the model thinks.

Applying is one transaction: the job is marked done only if this worker still holds its
claim, each change is written with its message id and position (unique: a change is never
applied twice), and the documents are merged (duplicates skipped). A failed model call (an
error, a timeout) puts the job back with exponential backoff; after ``max_attempts`` the
rule-based fallback (:func:`~coze_lab.core.memory.detection.rule_changes`) applies what it
finds, so nothing asked for is lost. An answer that is not the JSON asked for gets the
fallback at once: the same prompt would not change the model's mind.

Example:
    >>> worker = MemoryWorker(db, memory, completer)        # doctest: +SKIP
    >>> worker.start()          # in the server's event loop # doctest: +SKIP
    >>> worker.wake()           # a job was queued           # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.ids import new_id
from coze_lab.core.memory.detection import (
    Change,
    Completer,
    DetectionError,
    detect,
    rule_changes,
)
from coze_lab.core.memory.documents import (
    USER_PATH,
    merge_fact,
    merge_skill,
    skill_name,
    skill_path,
)
from coze_lab.core.memory.personal import PersonalMemory, drop, load, put
from coze_lab.store import Database
from coze_lab.store.models import MemoryChange, MemoryJob

log = logging.getLogger("coze_lab.memory")


@dataclass(frozen=True)
class JobSettings:
    """How jobs are claimed and retried (``memory_*`` settings)."""

    lease_s: float = 60.0
    poll_s: float = 2.0
    max_attempts: int = 5
    backoff_s: float = 2.0
    max_backoff_s: float = 300.0
    #: the model that detects memory signals ("": the bot's own model)
    model_id: str = ""
    model_timeout_s: float = 60.0


@dataclass(frozen=True)
class ClaimedJob:
    id: int
    owner_id: int
    space_id: int
    message_id: int
    text: str
    model_id: str
    attempts: int
    token: str


class MemoryJobs:
    """The queue's operations: claim, finish (applying changes), put back."""

    def __init__(
        self,
        db: Database,
        memory: PersonalMemory,
        *,
        settings: JobSettings | None = None,
        clock: Clock = utcnow,
    ) -> None:
        self._db = db
        self.memory = memory
        self.settings = settings or JobSettings()
        self._clock = clock
        self._skip_locked = db.dialect in ("postgresql", "mysql", "mariadb")

    def claim(self, worker: str = "") -> ClaimedJob | None:
        """The next due job, claimed for ``lease_s`` (None: nothing due)."""
        now = self._clock()
        due = (
            MemoryJob.status.in_(("queued", "running")),
            MemoryJob.run_after <= now,
            or_(MemoryJob.lease_until.is_(None), MemoryJob.lease_until < now),
        )
        query = select(MemoryJob).where(*due).order_by(MemoryJob.run_after, MemoryJob.id).limit(1)
        if self._skip_locked:
            query = query.with_for_update(skip_locked=True)
        token = f"{worker}:{secrets.token_hex(6)}"[-64:]
        with self._db.write() as connection:
            row = connection.execute(query).first()
            if row is None:
                return None
            job = row[0] if not hasattr(row, "id") else row
            claimed = connection.execute(
                update(MemoryJob)
                .where(MemoryJob.id == job.id, *due)
                .values(
                    status="running",
                    claimed_by=token,
                    lease_until=now + timedelta(seconds=self.settings.lease_s),
                    attempts=MemoryJob.attempts + 1,
                )
            ).rowcount
        if claimed != 1:
            return None
        return ClaimedJob(
            job.id,
            job.owner_id,
            job.space_id,
            job.message_id,
            job.text,
            job.model_id,
            job.attempts + 1,
            token,
        )

    def renew(self, job: ClaimedJob) -> bool:
        """Extend the lease; False when the claim was lost (another worker has the job)."""
        until = self._clock() + timedelta(seconds=self.settings.lease_s)
        with self._db.write() as connection:
            return bool(
                connection.execute(
                    update(MemoryJob)
                    .where(MemoryJob.id == job.id, MemoryJob.claimed_by == job.token)
                    .where(MemoryJob.status == "running")
                    .values(lease_until=until)
                ).rowcount
            )

    def finish(
        self, job: ClaimedJob, changes: list[Change], *, source: str = "model", error: str = ""
    ) -> bool:
        """Apply the changes and mark the job done, in one transaction; False (nothing
        written) when this worker no longer holds the job or a change was applied before."""
        now = self._clock()
        try:
            with self._db.write() as connection:
                done = connection.execute(
                    update(MemoryJob)
                    .where(
                        MemoryJob.id == job.id,
                        MemoryJob.claimed_by == job.token,
                        MemoryJob.status == "running",
                    )
                    .values(status="done", lease_until=None, finished_at=now, error=error or None)
                ).rowcount
                if done != 1:
                    return False
                rows = load(connection, job.owner_id, job.space_id, lock=True)
                documents = {path: row.content for path, row in rows.items()}
                changed = apply(documents, changes)
                for path in sorted(changed):
                    text = changed[path]
                    if text is None:
                        drop(connection, job.owner_id, job.space_id, path)
                    else:
                        put(connection, job.owner_id, job.space_id, path, text, now, limit=False)
                for seq, change in enumerate(changes):
                    connection.execute(
                        insert(MemoryChange).values(
                            id=new_id(),
                            owner_id=job.owner_id,
                            space_id=job.space_id,
                            job_id=job.id,
                            message_id=job.message_id,
                            seq=seq,
                            op=change.op,
                            kind=change.kind,
                            name=change.name,
                            text=change.text,
                            source=source,
                            applied_at=now,
                        )
                    )
        except IntegrityError:  # another job of the user wrote the same document first
            log.warning("memory job %s: a concurrent write won; it is tried again", job.id)
            return False
        return True

    def retry(self, job: ClaimedJob, error: str) -> None:
        """Put the job back with exponential backoff (if this worker still holds it)."""
        delay = min(
            self.settings.backoff_s * 2 ** max(job.attempts - 1, 0), self.settings.max_backoff_s
        )
        with self._db.write() as connection:
            connection.execute(
                update(MemoryJob)
                .where(MemoryJob.id == job.id, MemoryJob.claimed_by == job.token)
                .where(MemoryJob.status == "running")
                .values(
                    status="queued",
                    lease_until=None,
                    claimed_by=None,
                    run_after=self._clock() + timedelta(seconds=delay),
                    error=error[:2000],
                )
            )

    def status(self, message_id: int) -> str | None:
        with self._db.read() as connection:
            return connection.scalar(
                select(MemoryJob.status).where(MemoryJob.message_id == message_id)
            )


def apply(documents: dict[str, str], changes: list[Change]) -> dict[str, str | None]:
    """The documents the changes touch, merged (path → new text, None: deleted).

    Example:
        >>> apply({}, [Change("add", "fact", "Name is Ada"), Change("add", "fact", "name is ada")])
        {'user.md': '# About me\\n\\n- Name is Ada\\n'}
    """
    current: dict[str, str | None] = dict(documents)
    touched: set[str] = set()
    for change in changes:
        if change.kind == "fact":
            before = current.get(USER_PATH) or ""
            after = merge_fact(before, change.op, change.text, change.old or None)
            if after != before:
                current[USER_PATH] = after
                touched.add(USER_PATH)
        else:
            path = skill_path(change.name)
            before_skill = current.get(path)
            merged = merge_skill(before_skill, change.name, change.op, change.text)
            if merged != before_skill:
                current[path] = merged
                touched.add(path)
    return {path: current[path] for path in touched if path in documents or current[path]}


class MemoryWorker:
    """Processes jobs in the server's event loop, never in a chat's way."""

    def __init__(
        self,
        jobs: MemoryJobs,
        completer: Completer | Any,
        *,
        name: str = "",
    ) -> None:
        self.jobs = jobs
        self._completer = completer
        self.name = name or secrets.token_hex(4)
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="memory")

    def wake(self) -> None:
        """Look for a job now (one was just queued here)."""
        self._wake.set()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run_once(self) -> bool:
        """Claim and process one job; False when none was due."""
        job = await asyncio.to_thread(self.jobs.claim, self.name)
        if job is None:
            return False
        await self.process(job)
        return True

    async def process(self, job: ClaimedJob) -> None:
        settings = self.jobs.settings
        keeper = asyncio.get_running_loop().create_task(self._keep(job))
        try:
            documents = await asyncio.to_thread(
                self.jobs.memory.documents, job.owner_id, job.space_id
            )
            skills = sorted(n for p in documents if (n := skill_name(p)))
            model_id = settings.model_id or job.model_id
            try:
                changes = await asyncio.wait_for(
                    detect(
                        self._completer, model_id, job.text, documents.get(USER_PATH, ""), skills
                    ),
                    settings.model_timeout_s,
                )
                source, error = "model", ""
            except DetectionError as exc:  # it answered, but not in the form asked for
                changes, source, error = rule_changes(job.text), "rules", str(exc)[:2000]
            except Exception as exc:  # the model's failure: retried, then the rules
                error = f"{type(exc).__name__}: {exc}"[:2000]
                if job.attempts < settings.max_attempts:
                    log.warning(
                        "memory job %s failed (attempt %s): %s", job.id, job.attempts, error
                    )
                    await asyncio.to_thread(self.jobs.retry, job, error)
                    return
                changes, source = rule_changes(job.text), "rules"
        finally:
            keeper.cancel()
        if not await asyncio.to_thread(self.jobs.finish, job, changes, source=source, error=error):
            # a concurrent write won, or the claim was lost (then this changes nothing)
            await asyncio.to_thread(self.jobs.retry, job, "a concurrent write won")
            return
        with contextlib.suppress(OSError):  # the files show it at once
            await asyncio.to_thread(self.jobs.memory.documents, job.owner_id, job.space_id)

    async def _keep(self, job: ClaimedJob) -> None:
        every = max(self.jobs.settings.lease_s / 3, 0.05)
        while True:
            await asyncio.sleep(every)
            try:
                if not await asyncio.to_thread(self.jobs.renew, job):
                    return
            except Exception:  # the next renewal tries again
                log.exception("memory job %s: lease not renewed", job.id)

    async def _loop(self) -> None:
        while True:
            try:
                while await self.run_once():
                    pass
            except asyncio.CancelledError:
                raise
            except Exception:  # the next round tries again
                log.exception("memory worker round failed")
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.jobs.settings.poll_s)
