"""``file_history``: who wrote which file of a session workspace, when, and from which
message (a chat's upload, the write_file tool) or workflow node.

Example:
    >>> history = FileHistory(db)                                        # doctest: +SKIP
    >>> history.record(space_id=1, session_id=2, path="output/a.md", action="write",
    ...                size=7, actor_id=3, chat_id=4, message_id=5)      # doctest: +SKIP
    >>> [e.path for e in history.list(3, 2)]                             # doctest: +SKIP
    ['output/a.md']
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import NotFound
from coze_lab.core.ids import new_id
from coze_lab.store import Database
from coze_lab.store.models import Conversation, FileHistoryEntry

ACTIONS = ("upload", "write")
MAX_ENTRIES = 1000


@dataclass(frozen=True)
class FileEvent:
    id: int
    space_id: int
    session_id: int
    path: str
    action: str
    size: int
    actor_id: int
    chat_id: int | None
    message_id: int | None
    run_id: int | None
    node_id: str | None
    created_at: datetime


class FileHistory:
    """The file history of every session workspace."""

    def __init__(self, db: Database, *, clock: Clock = utcnow) -> None:
        self._db = db
        self._clock = clock

    def record(
        self,
        *,
        space_id: int,
        session_id: int,
        path: str,
        action: str,
        size: int,
        actor_id: int,
        chat_id: int | None = None,
        message_id: int | None = None,
        run_id: int | None = None,
        node_id: str | None = None,
    ) -> FileEvent:
        if action not in ACTIONS:
            raise ValueError(f"unknown file history action {action!r}")
        event = FileEvent(
            new_id(),
            space_id,
            session_id,
            path,
            action,
            size,
            actor_id,
            chat_id,
            message_id,
            run_id,
            node_id,
            self._clock(),
        )
        with self._db.transaction() as session:
            session.add(FileHistoryEntry(**event.__dict__))
        return event

    def list(self, owner_id: int, conversation_id: int) -> list[FileEvent]:
        """The owner's conversation's file history, oldest first (NotFound for a
        conversation that is not the owner's)."""
        with self._db.reading() as session:
            owned = session.scalar(
                select(Conversation.id).where(
                    Conversation.id == conversation_id, Conversation.owner_id == owner_id
                )
            )
            if owned is None:
                raise NotFound(f"conversation {conversation_id} not found")
            rows = session.scalars(
                select(FileHistoryEntry)
                .where(FileHistoryEntry.session_id == conversation_id)
                .order_by(FileHistoryEntry.created_at, FileHistoryEntry.id)
                .limit(MAX_ENTRIES)
            ).all()
            return [
                FileEvent(
                    r.id,
                    r.space_id,
                    r.session_id,
                    r.path,
                    r.action,
                    r.size,
                    r.actor_id,
                    r.chat_id,
                    r.message_id,
                    r.run_id,
                    r.node_id,
                    r.created_at,
                )
                for r in rows
            ]
