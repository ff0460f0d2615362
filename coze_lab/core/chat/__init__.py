"""Chats: agent runs in conversations, streamed with Coze's events (SPEC §3.4, §3.5).

Example:
    >>> from coze_lab.core.chat import render
    >>> render("Hello {{name}}", {"name": "Ada"})
    'Hello Ada'
"""

from __future__ import annotations

from coze_lab.core.chat.events import ChatChannel, ChatEvent
from coze_lab.core.chat.prompt import render
from coze_lab.core.chat.service import (
    ChatHandle,
    ChatRequest,
    ChatService,
)
from coze_lab.core.chat.store import ChatInfo, ChatStore, NotCancelable

__all__ = [
    "ChatChannel",
    "ChatEvent",
    "ChatHandle",
    "ChatInfo",
    "ChatRequest",
    "ChatService",
    "ChatStore",
    "NotCancelable",
    "render",
]
