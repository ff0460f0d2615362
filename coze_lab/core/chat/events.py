"""Chat events (Coze's names) and the in-process channel a running chat publishes them on."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

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


class ChatChannel:
    """Every event of one running chat, for any number of followers (a follower that joins
    late sees everything from the start; one that leaves changes nothing for the chat)."""

    def __init__(self) -> None:
        self.events: list[ChatEvent] = []
        self.closed = False
        self._wake = asyncio.Event()

    def put(self, event: ChatEvent) -> None:
        self.events.append(event)
        self._wake.set()

    def close(self) -> None:
        self.closed = True
        self._wake.set()

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
