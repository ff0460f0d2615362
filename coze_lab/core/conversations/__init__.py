"""Conversations, sections and messages (SPEC §3.4).

Example:
    >>> from coze_lab.core.conversations import parse_message
    >>> parse_message({"role": "user", "content": "hi"}, "m").message_type
    'question'
"""

from __future__ import annotations

from coze_lab.core.conversations.service import (
    ConversationInfo,
    ConversationService,
    MessageInfo,
    MessagePage,
    NewMessage,
    message_info,
    message_row,
    new_message,
    parse_message,
)

__all__ = [
    "ConversationInfo",
    "ConversationService",
    "MessageInfo",
    "MessagePage",
    "NewMessage",
    "message_info",
    "message_row",
    "new_message",
    "parse_message",
]
