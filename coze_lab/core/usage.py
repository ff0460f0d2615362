"""Usage per user, for administrators: how many runs and chats, how many model tokens.

Counts only: an administrator sees who uses how much, never what anyone asked or got
(no conversation, message or run content crosses this service).

>>> report = UsageService(db).report()            # doctest: +SKIP
>>> report[0].name, report[0].chats               # doctest: +SKIP
('alice', 12)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from coze_lab.store import Database
from coze_lab.store.models import Chat, User, WorkflowRun


@dataclass(frozen=True)
class UserUsage:
    user_id: int
    name: str
    runs: int
    chats: int
    #: model tokens of the user's chats (Coze ``usage.token_count``)
    chat_tokens: int
    #: model tokens of the user's workflow runs (sum of their nodes' ``total_tokens``)
    run_tokens: int

    @property
    def tokens(self) -> int:
        return self.chat_tokens + self.run_tokens


class UsageService:
    """Aggregates the chats and runs tables per owner (an O(history) read: for admins).

    Example:
        >>> [u.name for u in UsageService(db).report(since=last_month)]   # doctest: +SKIP
        ['alice', 'bob']
    """

    def __init__(self, db: Database) -> None:
        self._db = db

    def report(self, *, since: datetime | None = None) -> list[UserUsage]:
        """Every user with their counts (created at or after ``since`` when given), by name."""
        chats = select(
            Chat.owner_id.label("owner_id"),
            func.count().label("n"),
            func.coalesce(func.sum(Chat.usage["token_count"].as_integer()), 0).label("tokens"),
        )
        runs = select(
            WorkflowRun.owner_id.label("owner_id"),
            func.count().label("n"),
            func.coalesce(func.sum(WorkflowRun.usage["total_tokens"].as_integer()), 0).label(
                "tokens"
            ),
        ).where(WorkflowRun.parent_run_id.is_(None))  # a sub-workflow's tokens are its root's
        if since is not None:
            chats = chats.where(Chat.created_at >= since)
            runs = runs.where(WorkflowRun.created_at >= since)
        with self._db.read() as conn:
            users = conn.execute(select(User.id, User.name).order_by(User.name)).all()
            chat_rows = {r.owner_id: r for r in conn.execute(chats.group_by(Chat.owner_id))}
            run_rows = {r.owner_id: r for r in conn.execute(runs.group_by(WorkflowRun.owner_id))}
        report = []
        for user in users:
            chat, run = chat_rows.get(user.id), run_rows.get(user.id)
            report.append(
                UserUsage(
                    user_id=user.id,
                    name=user.name,
                    runs=int(run.n) if run else 0,
                    chats=int(chat.n) if chat else 0,
                    chat_tokens=int(chat.tokens) if chat else 0,
                    run_tokens=int(run.tokens) if run else 0,
                )
            )
        return report
