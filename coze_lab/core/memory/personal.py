"""Long-term personal memory (seed 002 §6): per user and space, ``user.md`` and
``skills/<name>.md``, kept in the database (every replica sees the same memory) and
mirrored to files the user edits in JupyterLab (:mod:`coze_lab.core.memory.mirror`).

The chat path only reads memory (bots with ``memory`` on get it in their prompt) and
queues the user's messages once the answer is complete (:meth:`PersonalMemory.enqueue`);
the :class:`~coze_lab.core.memory.consolidation.MemoryWorker` does the rest.

Memory never crosses users or spaces: every query names both, and the space must be one
the user belongs to.

Example:
    >>> memory = PersonalMemory(db, mirror=None)                       # doctest: +SKIP
    >>> memory.write(alice.id, "user.md", "- Name is Ada\\n")          # doctest: +SKIP
    >>> memory.view(alice.id).documents["user.md"]                     # doctest: +SKIP
    '- Name is Ada\\n'
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.core.ids import new_id
from coze_lab.core.memory.documents import (
    MAX_DOCUMENT_CHARS,
    MAX_SKILLS,
    USER_PATH,
    as_text,
    content_hash,
    render,
    skill_name,
    skill_path,
)
from coze_lab.core.memory.mirror import MemoryMirror
from coze_lab.core.spaces import Access, Permission
from coze_lab.store import Database
from coze_lab.store.models import MemoryChange, MemoryDocument, MemoryJob

log = logging.getLogger("coze_lab.memory")
#: the longest message text a job keeps
MAX_JOB_TEXT_CHARS = 20_000


@dataclass(frozen=True)
class MemoryView:
    """A user's memory in one space: path → Markdown, when each changed, the last changes
    (with the message each came from) and the queue's state."""

    space_id: int
    documents: dict[str, str]
    updated_at: dict[str, datetime]
    changes: list[dict[str, Any]] = field(default_factory=list)
    jobs: dict[str, int] = field(default_factory=dict)

    @property
    def user(self) -> str:
        return self.documents.get(USER_PATH, "")

    @property
    def skills(self) -> dict[str, str]:
        return {name: text for path, text in self.documents.items() if (name := skill_name(path))}


@dataclass(frozen=True)
class QueuedMessage:
    """A user message of a finished chat, for the memory queue."""

    message_id: int
    text: str


class PersonalMemory:
    """Read, edit and queue a user's long-term memory (one per deployment; thread-safe)."""

    def __init__(
        self,
        db: Database,
        *,
        mirror: MemoryMirror | None = None,
        clock: Clock = utcnow,
        max_chars: int = MAX_DOCUMENT_CHARS,
        prompt_chars: int = 8000,
    ) -> None:
        self._db = db
        self.mirror = mirror
        self._clock = clock
        self.max_chars = max_chars
        self.prompt_chars = prompt_chars

    # ---- reading ------------------------------------------------------------------------------
    def space(self, owner_id: int, space_id: int | None) -> int:
        """The space a request names (None: the personal one), when the user belongs to it."""
        with self._db.read() as connection:
            access = Access.load(connection, owner_id)
        space = access.space(space_id)
        access.require(space, Permission.READ)
        return space

    def documents(self, owner_id: int, space_id: int, *, sync: bool = True) -> dict[str, str]:
        """Path → Markdown of the user's memory in the space (files edited since the last
        read are picked up first, when ``sync``)."""
        with self._db.read() as connection:
            stored = load(connection, owner_id, space_id)
        documents = {path: row.content for path, row in stored.items()}
        if sync and self.mirror is not None:
            documents = self._sync(owner_id, space_id, documents)
        return documents

    def view(self, owner_id: int, space_id: int | None = None, changes: int = 20) -> MemoryView:
        """What the user sees: documents, the last ``changes`` and the queue."""
        space = self.space(owner_id, space_id)
        documents = self.documents(owner_id, space)
        with self._db.read() as connection:
            rows = load(connection, owner_id, space)
            recent = connection.execute(
                select(MemoryChange)
                .where(MemoryChange.owner_id == owner_id, MemoryChange.space_id == space)
                .order_by(MemoryChange.applied_at.desc(), MemoryChange.seq.desc())
                .limit(changes)
            ).all()
            counts = connection.execute(
                select(MemoryJob.status, func.count())
                .where(MemoryJob.owner_id == owner_id, MemoryJob.space_id == space)
                .group_by(MemoryJob.status)
            ).all()
        return MemoryView(
            space_id=space,
            documents=documents,
            updated_at={p: r.updated_at for p, r in rows.items() if p in documents},
            changes=[
                {
                    "op": c.op,
                    "kind": c.kind,
                    "name": c.name,
                    "text": c.text,
                    "source": c.source,
                    "message_id": c.message_id,
                    "applied_at": c.applied_at,
                }
                for c in recent
            ],
            jobs={status: int(n) for status, n in counts},
        )

    def prompt(self, owner_id: int, space_id: int) -> str:
        """The prompt section of a bot with memory (empty when nothing is remembered)."""
        try:
            documents = self.documents(owner_id, space_id)
        except OSError as exc:  # a broken mirror never stops a chat
            log.warning("memory files of user %s not read: %s", owner_id, exc)
            documents = self.documents(owner_id, space_id, sync=False)
        return render(documents, self.prompt_chars)

    # ---- editing ------------------------------------------------------------------------------
    def write(
        self, owner_id: int, path: str, content: Any, space_id: int | None = None
    ) -> MemoryView:
        """Replace ``user.md`` or a skill's document with the user's text."""
        if not isinstance(content, str):
            raise InvalidParameter("content must be a string")
        if len(content) > self.max_chars:
            raise InvalidParameter(f"content is longer than {self.max_chars} characters")
        path = check_path(path)
        space = self.space(owner_id, space_id)
        with self._db.write() as connection:
            put(connection, owner_id, space, path, as_text(content, self.max_chars), self._clock())
        self._sync_quietly(owner_id, space)
        return self.view(owner_id, space)

    def delete(self, owner_id: int, path: str, space_id: int | None = None) -> None:
        """Forget ``user.md`` or a skill (404 when there is none)."""
        path = check_path(path)
        space = self.space(owner_id, space_id)
        with self._db.write() as connection:
            gone = drop(connection, owner_id, space, path)
        if not gone:
            raise NotFound(f"no memory document {path} in workspace {space}")
        if self.mirror is not None:
            try:
                self.mirror.forget(owner_id, space, path)
            except OSError as exc:
                log.warning("memory file %s not removed: %s", path, exc)

    # ---- queueing -----------------------------------------------------------------------------
    def enqueue(
        self,
        owner_id: int,
        space_id: int,
        messages: Sequence[QueuedMessage],
        *,
        model_id: str,
        bot_id: int | None = None,
        chat_id: int | None = None,
    ) -> int:
        """Queue user messages of a finished chat (each once: a message queued again is
        ignored); the number queued."""
        now, queued = self._clock(), 0
        for message in messages:
            if not message.text.strip():
                continue
            try:
                with self._db.write() as connection:
                    connection.execute(
                        insert(MemoryJob).values(
                            id=new_id(),
                            owner_id=owner_id,
                            space_id=space_id,
                            bot_id=bot_id,
                            chat_id=chat_id,
                            message_id=message.message_id,
                            text=message.text[:MAX_JOB_TEXT_CHARS],
                            model_id=model_id,
                            status="queued",
                            attempts=0,
                            run_after=now,
                            created_at=now,
                        )
                    )
                queued += 1
            except IntegrityError:
                continue  # queued before
        return queued

    # ---- internals ----------------------------------------------------------------------------
    def _sync(self, owner_id: int, space_id: int, documents: dict[str, str]) -> dict[str, str]:
        assert self.mirror is not None
        edits = self.mirror.sync(owner_id, space_id, documents)
        if not edits:
            return documents
        now = self._clock()
        with self._db.write() as connection:
            for path, text in edits.items():
                if text is None:
                    drop(connection, owner_id, space_id, path)
                else:
                    put(connection, owner_id, space_id, path, text, now, limit=False)
        result = dict(documents)
        for path, text in edits.items():
            if text is None:
                result.pop(path, None)
            else:
                result[path] = text
        return result

    def _sync_quietly(self, owner_id: int, space_id: int) -> None:
        if self.mirror is None:
            return
        try:
            self.documents(owner_id, space_id)
        except OSError as exc:
            log.warning("memory files of user %s not written: %s", owner_id, exc)


def check_path(path: Any) -> str:
    """``user.md`` or ``skills/<name>.md``.

    Example:
        >>> check_path("skills/units.md")
        'skills/units.md'
    """
    if path == USER_PATH:
        return USER_PATH
    if isinstance(path, str) and path.startswith("skills/") and path.endswith(".md"):
        return skill_path(path[len("skills/") : -3])
    raise InvalidParameter("a memory document is user.md or skills/<name>.md")


def load(connection: Connection, owner_id: int, space_id: int, *, lock: bool = False) -> dict:
    """The user's documents in the space (path → row); ``lock``: for update."""
    query = select(MemoryDocument).where(
        MemoryDocument.owner_id == owner_id, MemoryDocument.space_id == space_id
    )
    if lock:
        query = query.with_for_update()
    return {row.path: row for row in connection.execute(query).all()}


def put(
    connection: Connection,
    owner_id: int,
    space_id: int,
    path: str,
    content: str,
    now: datetime,
    *,
    limit: bool = True,
) -> None:
    """Insert or replace one document (``limit``: refuse a skill beyond the most kept)."""
    where = (
        MemoryDocument.owner_id == owner_id,
        MemoryDocument.space_id == space_id,
        MemoryDocument.path == path,
    )
    values: Mapping[str, Any] = {
        "content": content,
        "content_hash": content_hash(content),
        "updated_at": now,
    }
    if connection.execute(update(MemoryDocument).where(*where).values(**values)).rowcount:
        return
    if limit and path != USER_PATH:
        count = connection.scalar(
            select(func.count(MemoryDocument.id)).where(
                MemoryDocument.owner_id == owner_id,
                MemoryDocument.space_id == space_id,
                MemoryDocument.path != USER_PATH,
            )
        )
        if (count or 0) >= MAX_SKILLS:
            raise InvalidParameter(f"a space keeps at most {MAX_SKILLS} skills")
    connection.execute(
        insert(MemoryDocument).values(
            id=new_id(), owner_id=owner_id, space_id=space_id, path=path, created_at=now, **values
        )
    )


def drop(connection: Connection, owner_id: int, space_id: int, path: str) -> bool:
    result = connection.execute(
        delete(MemoryDocument).where(
            MemoryDocument.owner_id == owner_id,
            MemoryDocument.space_id == space_id,
            MemoryDocument.path == path,
        )
    )
    return bool(result.rowcount)
