"""Activity: what happened in a session, as one ordered timeline, and its run state.

Built only from what is already stored: a conversation's chats (status, duration, token
usage), its messages (questions, tool calls with their arguments, tool results, answers),
the workflow runs its tools started (every node's record: inputs, outputs, duration,
usage; questions waiting for a person) and its ``file_history``. A workflow run's timeline
is the same without the chat part.

A session's **state** is what its newest chat (or run) is doing: ``running``, ``waiting``
(for you: tool outputs, or a workflow question nobody answered yet), ``done``, ``failed``,
``canceled``, or ``idle`` (no chat yet).

Example:
    >>> activity = Activity(db)                                          # doctest: +SKIP
    >>> timeline = activity.conversation(user.id, conversation_id)       # doctest: +SKIP
    >>> timeline.state, [i.kind for i in timeline.items][:3]              # doctest: +SKIP
    ('done', ['chat', 'message', 'tool_call'])
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import select

from coze_lab.core.conversations.content import file_ids
from coze_lab.core.errors import CozeLabError, NotFound
from coze_lab.store import Database
from coze_lab.store.models import (
    Chat,
    Conversation,
    File,
    FileHistoryEntry,
    Interrupt,
    Message,
    NodeRun,
    WorkflowRun,
)

#: longest text an item carries (a message, a tool's arguments or result, a node's outputs)
DETAIL_CHARS = 2000
#: at most this many chats (the newest) and items per timeline
MAX_CHATS = 50
MAX_ITEMS = 2000
STATES = ("idle", "running", "waiting", "done", "failed", "canceled")
_CHAT_STATE = {
    "created": "running",
    "in_progress": "running",
    "requires_action": "waiting",
    "completed": "done",
    "failed": "failed",
    "canceled": "canceled",
}
_RUN_STATE = {
    "running": "running",
    "interrupted": "waiting",
    "succeeded": "done",
    "failed": "failed",
    "canceled": "canceled",
}


@dataclass(frozen=True)
class ActivityItem:
    """One entry of a timeline.

    ``kind``: ``chat``, ``message`` (the user's), ``tool_call``, ``tool_result``, ``answer``,
    ``run``, ``node``, ``question`` or ``file``.
    """

    kind: str
    at: datetime
    title: str
    detail: str = ""
    status: str = ""
    duration_ms: float | None = None
    usage: dict[str, Any] | None = None
    chat_id: int | None = None
    run_id: int | None = None
    node_id: str | None = None
    path: str | None = None
    #: the id of the row it comes from: ties at one moment keep the order rows were made
    order: int = field(default=0, compare=False, repr=False)


@dataclass(frozen=True)
class SessionState:
    """What a session is doing: its ``state`` and the chat (or run) that decides it."""

    state: str
    chat_id: int | None = None
    run_id: int | None = None


@dataclass(frozen=True)
class Timeline:
    state: SessionState
    items: list[ActivityItem] = field(default_factory=list)
    #: token usage over the whole timeline (chats, or a run's nodes)
    usage: dict[str, int] = field(default_factory=dict)


class Activity:
    """Timelines and run states of sessions (conversations and workflow runs), always
    scoped to their owner."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # ---- states ---------------------------------------------------------------------------
    def states(self, owner_id: int, conversation_ids: Sequence[int]) -> dict[int, SessionState]:
        """The state of each of the owner's conversations (``idle`` without a chat).

        Example:
            >>> activity.states(user.id, [conversation_id])      # doctest: +SKIP
            {7301...: SessionState(state='running', chat_id=7301..., run_id=None)}
        """
        ids = list(dict.fromkeys(conversation_ids))
        if not ids:
            return {}
        with self._db.reading() as session:
            rows = session.execute(
                select(Chat.conversation_id, Chat.id, Chat.status)
                .where(Chat.owner_id == owner_id, Chat.conversation_id.in_(ids))
                .order_by(Chat.conversation_id, Chat.created_at.desc(), Chat.id.desc())
            ).all()
            newest: dict[int, tuple[int, str]] = {}
            for conversation_id, chat_id, status in rows:
                newest.setdefault(conversation_id, (chat_id, status))
            done_chats = [c for c, s in newest.values() if s == "completed"]
            waiting = self._chats_waiting(session, owner_id, done_chats)
        out = {}
        for conversation_id in ids:
            if conversation_id not in newest:
                out[conversation_id] = SessionState("idle")
                continue
            chat_id, status = newest[conversation_id]
            state = _CHAT_STATE.get(status, "done")
            if chat_id in waiting:
                state = "waiting"
            out[conversation_id] = SessionState(state, chat_id=chat_id)
        return out

    def _chats_waiting(self, session: Any, owner_id: int, chat_ids: list[int]) -> set[int]:
        """Finished chats whose workflow runs still wait for a person."""
        if not chat_ids:
            return set()
        runs = _runs_of(
            session.execute(
                select(Message.chat_id, Message.meta_data).where(
                    Message.owner_id == owner_id,
                    Message.chat_id.in_(chat_ids),
                    Message.type == "tool_response",
                )
            ).all()
        )
        if not runs:
            return set()
        pending = set(
            session.scalars(
                select(Interrupt.root_run_id).where(
                    Interrupt.owner_id == owner_id,
                    Interrupt.status == "pending",
                    Interrupt.root_run_id.in_(list(runs)),
                )
            ).all()
        )
        return {runs[r] for r in pending}

    # ---- timelines ------------------------------------------------------------------------
    def conversation(self, owner_id: int, conversation_id: int) -> Timeline:
        """The owner's conversation's timeline, oldest first (NotFound when it is not theirs)."""
        with self._db.reading() as session:
            owned = session.scalar(
                select(Conversation.id).where(
                    Conversation.id == conversation_id, Conversation.owner_id == owner_id
                )
            )
            if owned is None:
                raise NotFound(f"conversation {conversation_id} not found")
            chats = list(
                session.scalars(
                    select(Chat)
                    .where(Chat.conversation_id == conversation_id, Chat.owner_id == owner_id)
                    .order_by(Chat.created_at.desc(), Chat.id.desc())
                    .limit(MAX_CHATS)
                ).all()
            )
            chat_ids = [c.id for c in chats]
            messages = (
                session.scalars(
                    select(Message)
                    .where(Message.owner_id == owner_id, Message.chat_id.in_(chat_ids))
                    .order_by(Message.created_at, Message.id)
                ).all()
                if chat_ids
                else []
            )
            runs = _runs_of((m.chat_id, m.meta_data) for m in messages if m.type == "tool_response")
            run_items, _ = self._run_items(session, owner_id, list(runs), runs)
            files = session.scalars(
                select(FileHistoryEntry)
                .where(
                    FileHistoryEntry.session_id == conversation_id,
                    FileHistoryEntry.actor_id == owner_id,
                )
                .order_by(FileHistoryEntry.created_at, FileHistoryEntry.id)
            ).all()
            named = [
                f
                for m in messages
                if m.role == "user" and m.content_type == "object_string"
                for f in _file_ids(m.content)
            ]
            names = (
                dict(
                    session.execute(
                        select(File.id, File.file_name).where(
                            File.user_id == owner_id, File.id.in_(named)
                        )
                    ).all()
                )
                if named
                else {}
            )
            # a chat heads its messages: it starts no later than the first of them
            first: dict[int, datetime] = {}
            for m in messages:
                if m.chat_id is not None and m.chat_id not in first:
                    first[m.chat_id] = m.created_at
            items = [_chat_item(c, first.get(c.id)) for c in chats]
            items += [
                replace(item, order=m.id)
                for m in messages
                if (item := _message_item(m, names)) is not None
            ]
            items += run_items
            items += [_file_item(f) for f in files]
            states = self.states(owner_id, [conversation_id]) if chats else {}
        usage = _total(c.usage for c in chats)
        state = states.get(conversation_id, SessionState("idle"))
        return Timeline(state, _ordered(items), usage)

    def run(self, owner_id: int, run_id: int) -> Timeline:
        """The owner's workflow run's timeline: the run, its nodes (and those of the runs it
        started), its questions and the files its code nodes wrote."""
        with self._db.reading() as session:
            run = session.scalar(
                select(WorkflowRun).where(
                    WorkflowRun.id == run_id, WorkflowRun.owner_id == owner_id
                )
            )
            if run is None:
                raise NotFound(f"run {run_id} not found")
            root = run.root_run_id or run.id
            items, usage = self._run_items(session, owner_id, [root], {})
            files = session.scalars(
                select(FileHistoryEntry)
                .where(FileHistoryEntry.run_id.is_not(None), FileHistoryEntry.actor_id == owner_id)
                .where(FileHistoryEntry.session_id == root)
                .order_by(FileHistoryEntry.created_at, FileHistoryEntry.id)
            ).all()
            items += [_file_item(f) for f in files]
            status = session.scalar(select(WorkflowRun.status).where(WorkflowRun.id == root))
        state = SessionState(_RUN_STATE.get(status or "", "done"), run_id=root)
        return Timeline(state, _ordered(items), usage)

    def _run_items(
        self, session: Any, owner_id: int, roots: list[int], chat_of: dict[int, int]
    ) -> tuple[list[ActivityItem], dict[str, int]]:
        if not roots:
            return [], {}
        runs = session.scalars(
            select(WorkflowRun).where(
                WorkflowRun.owner_id == owner_id, WorkflowRun.root_run_id.in_(roots)
            )
        ).all()
        ids = {r.id: r for r in runs}
        if not ids:
            return [], {}
        nodes = session.scalars(
            select(NodeRun)
            .where(NodeRun.run_id.in_(list(ids)))
            .order_by(NodeRun.started_at, NodeRun.id)
        ).all()
        questions = session.scalars(
            select(Interrupt).where(
                Interrupt.owner_id == owner_id, Interrupt.root_run_id.in_(roots)
            )
        ).all()
        items: list[ActivityItem] = []
        for r in runs:
            if r.parent_run_id is not None:
                continue
            items.append(
                ActivityItem(
                    "run",
                    r.created_at,
                    f"{(r.definition or {}).get('name') or 'workflow'} (run {r.id})",
                    _text(r.outputs if r.outputs is not None else r.inputs),
                    status=r.status,
                    duration_ms=_ms(r.created_at, r.finished_at),
                    usage=r.usage,
                    chat_id=chat_of.get(r.id),
                    run_id=r.id,
                    order=r.id,
                )
            )
        for n in nodes:
            if n.node_type in ("start", "end") and n.error is None:
                continue
            root = ids[n.run_id].root_run_id or n.run_id
            detail = {"inputs": n.inputs, "outputs": n.outputs}
            if n.error:
                detail["error"] = n.error
            items.append(
                ActivityItem(
                    "node",
                    n.started_at or n.finished_at or ids[n.run_id].created_at,
                    f"{n.node_id} ({n.node_type})",
                    _text(detail),
                    status=n.status,
                    duration_ms=_ms(n.started_at, n.finished_at),
                    usage=n.usage,
                    chat_id=chat_of.get(root),
                    run_id=n.run_id,
                    node_id=n.node_id,
                    order=n.id,
                )
            )
        for q in questions:
            items.append(
                ActivityItem(
                    "question",
                    q.created_at,
                    f"{(q.data or {}).get('question') or 'a question'} (at {q.node_id})",
                    _text(q.data),
                    status=q.status,
                    chat_id=chat_of.get(q.root_run_id),
                    run_id=q.run_id,
                    node_id=q.node_id,
                    order=q.id,
                )
            )
        usage = _total(n.usage for n in nodes)
        return items, usage


def _runs_of(rows: Iterable[tuple[int | None, dict[str, Any] | None]]) -> dict[int, int]:
    """run id → chat id, for the workflow runs tool results name (``execute_id``)."""
    out: dict[int, int] = {}
    for chat_id, meta in rows:
        raw = (meta or {}).get("execute_id")
        if chat_id is not None and isinstance(raw, str) and raw.isdigit():
            out[int(raw)] = chat_id
    return out


def _chat_item(chat: Chat, first_message_at: datetime | None = None) -> ActivityItem:
    end = chat.completed_at or chat.failed_at
    if end is None and chat.status not in ("created", "in_progress", "requires_action"):
        end = chat.updated_at
    error = (chat.last_error or {}).get("msg") or ""
    return ActivityItem(
        "chat",
        min(chat.created_at, first_message_at or chat.created_at),
        "chat started",
        error,
        status=chat.status,
        duration_ms=_ms(chat.created_at, end),
        usage=chat.usage,
        chat_id=chat.id,
        order=0,  # before what happened at the same moment
    )


def _message_item(m: Message, names: dict[int, str]) -> ActivityItem | None:
    meta = m.meta_data or {}
    if m.role == "user":
        text = _question_text(m.content, m.content_type, names)
        return ActivityItem("message", m.created_at, _line(text), _cut(text), chat_id=m.chat_id)
    if m.type == "function_call":
        try:
            call = json.loads(m.content)
        except ValueError:
            call = {}
        name = call.get("name") if isinstance(call, dict) else None
        args = call.get("arguments", call) if isinstance(call, dict) else m.content
        return ActivityItem(
            "tool_call",
            m.created_at,
            str(name or meta.get("tool_kind") or "tool"),
            _text(args),
            chat_id=m.chat_id,
        )
    if m.type == "tool_response":
        status = "ok" if meta.get("ok", "true") == "true" else "error"
        run = meta.get("execute_id")
        return ActivityItem(
            "tool_result",
            m.created_at,
            str(meta.get("name") or "tool"),
            _cut(m.content),
            status=status,
            chat_id=m.chat_id,
            run_id=int(run) if isinstance(run, str) and run.isdigit() else None,
        )
    if m.type == "answer":
        status = "canceled" if meta.get("canceled") else ""
        return ActivityItem(
            "answer", m.created_at, _line(m.content), _cut(m.content), status, chat_id=m.chat_id
        )
    return None


def _file_ids(content: str) -> list[int]:
    with contextlib.suppress(CozeLabError):
        return file_ids(content, "object_string")
    return []


def _question_text(content: str, content_type: str, names: dict[int, str]) -> str:
    """A user message as text: an ``object_string`` message's text parts and file names."""
    if content_type != "object_string":
        return content
    try:
        parts = json.loads(content)
    except ValueError:
        return content
    if not isinstance(parts, list):
        return content
    out = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            out.append(str(part.get("text") or ""))
        else:
            raw = str(part.get("file_id") or "")
            name = names.get(int(raw)) if raw.isdigit() else None
            out.append(f"[{part.get('type')}: {name or part.get('name') or raw}]")
    return " ".join(p for p in out if p)


def _line(text: str, chars: int = 80) -> str:
    """The first line of ``text``, shortened for a title."""
    first = text.strip().split("\n", 1)[0]
    return first if len(first) <= chars else first[: chars - 1] + "…"


def _file_item(f: FileHistoryEntry) -> ActivityItem:
    who = f"node {f.node_id}" if f.node_id else ("upload" if f.action == "upload" else "tool")
    return ActivityItem(
        "file",
        f.created_at,
        f"{'uploaded' if f.action == 'upload' else 'wrote'} {f.path}",
        f"{f.size} bytes, by {who}",
        status=f.action,
        chat_id=f.chat_id,
        run_id=f.run_id,
        node_id=f.node_id,
        path=f.path,
        order=f.id,
    )


def _ordered(items: list[ActivityItem]) -> list[ActivityItem]:
    return sorted(items, key=lambda i: (i.at, i.order))[-MAX_ITEMS:]


def _ms(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return round((end - start).total_seconds() * 1000, 1)


def _total(usages: Iterable[dict[str, Any] | None]) -> dict[str, int]:
    total: dict[str, int] = {}
    for usage in usages:
        for key, value in (usage or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total


def _text(value: Any) -> str:
    if isinstance(value, str):
        return _cut(value)
    return _cut(json.dumps(value, ensure_ascii=False, default=str))


def _cut(text: str) -> str:
    if len(text) <= DETAIL_CHARS:
        return text
    return text[:DETAIL_CHARS] + f"… ({len(text) - DETAIL_CHARS} more characters)"
