"""Conversations, sections and messages (SPEC §3.4).

Example:
    >>> from coze_lab.core.conversations import NewMessage
    >>> NewMessage("user", "hi").message_type
    'question'
"""

from __future__ import annotations

from coze_lab.core.conversations.service import (
    ConversationInfo,
    ConversationService,
    MessageEdit,
    MessageInfo,
    MessagePage,
    NewMessage,
    Turn,
    message_info,
    message_row,
    new_message,
)

__all__ = [
    "ConversationInfo",
    "ConversationService",
    "MessageEdit",
    "MessageInfo",
    "MessagePage",
    "NewMessage",
    "Turn",
    "message_info",
    "message_row",
    "new_message",
]
