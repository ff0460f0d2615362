"""Chat events (Coze's names) and the in-process channel a running chat publishes them on."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from coze_lab.core.chat.store import ChatInfo
from coze_lab.core.conversations import MessageInfo

CHAT_CREATED = "conversation.chat.created"
CHAT_IN_PROGRESS = "conversation.chat.in_progress"
MESSAGE_DELTA = "conversation.message.delta"
MESSAGE_COMPLETED = "conversation.message.completed"
CHAT_COMPLETED = "conversation.chat.completed"
CHAT_FAILED = "conversation.chat.failed"
CHAT_REQUIRES_ACTION = "conversation.chat.requires_action"
DONE = "done"


@dataclass(frozen=True)
class ChatEvent:
    """One stream event, with its chat or its message (``done`` has neither)."""

    event: str
    chat: ChatInfo | None = None
    message: MessageInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        """The event as JSON-ready data (how ``chat_events`` keeps it).

        Example:
            >>> ChatEvent("done").to_dict()
            {'event': 'done'}
        """
        out: dict[str, Any] = {"event": self.event}
        if self.chat is not None:
            out["chat"] = _plain(self.chat)
        if self.message is not None:
            out["message"] = _plain(self.message)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatEvent:
        """The event :meth:`to_dict` described.

        Example:
            >>> ChatEvent.from_dict({"event": "done"})
            ChatEvent(event='done', chat=None, message=None)
        """
        chat = data.get("chat")
        message = data.get("message")
        return cls(
            data["event"],
            chat=None if chat is None else ChatInfo(**_dated(ChatInfo, chat)),
            message=None if message is None else MessageInfo(**_dated(MessageInfo, message)),
        )


def _plain(record: ChatInfo | MessageInfo) -> dict[str, Any]:
    """The record's fields, dates as ISO text. Not ``dataclasses.asdict``: its deep copy
    cost about 50 µs per event (every delta of every chat is logged); the fields hold no
    dataclasses, and their dicts and lists are copied one level down, which is as deep as
    they go but for the JSON of ``required_action``, which nothing changes once written."""
    out: dict[str, Any] = {}
    for name in _FIELDS[type(record)]:
        value = getattr(record, name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, dict):
            value = dict(value)
        elif isinstance(value, list):
            value = list(value)
        out[name] = value
    return out


_FIELDS = {kind: tuple(f.name for f in fields(kind)) for kind in (ChatInfo, MessageInfo)}


def _dated(kind: type, values: dict[str, Any]) -> dict[str, Any]:
    known = {f.name for f in fields(kind)}
    return {
        k: datetime.fromisoformat(v) if k.endswith("_at") and isinstance(v, str) else v
        for k, v in values.items()
        if k in known
    }


class ChatChannel:
    """Every event of one running chat, for any number of followers (a follower that joins
    late sees everything from the start; one that leaves changes nothing for the chat)."""

    def __init__(self, base: int = 0) -> None:
        #: the number of the event before the first one here (a continued chat's events
        #: follow those of its earlier runs: numbers are per chat)
        self.base = base
        self.events: list[ChatEvent] = []
        #: how many of ``events`` are in the chat's log already (written with its rows)
        self.logged = 0
        self.closed = False
        self._wake = asyncio.Event()
        #: set when an event other than a delta arrives (the event log writes it at once)
        self.urgent = asyncio.Event()

    def put(self, event: ChatEvent) -> None:
        self.events.append(event)
        self._wake.set()
        if event.event != MESSAGE_DELTA:
            self.urgent.set()

    def close(self) -> None:
        self.closed = True
        self._wake.set()
        self.urgent.set()

    async def follow(self, idle_s: float | None = None) -> AsyncIterator[ChatEvent | None]:
        """The events in order; ``None`` after each ``idle_s`` without one (for keep-alives)."""
        index = 0
        while True:
            while index < len(self.events):
                yield self.events[index]
                index += 1
            if self.closed:
                return
            self._wake.clear()
            if idle_s is None:
                await self._wake.wait()
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), idle_s)
            if not self._wake.is_set():
                yield None
