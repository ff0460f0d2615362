"""Test support shipped with coze_lab: a local OpenAI-compatible model server.

Example:
    >>> from coze_lab.testing import ModelServer
    >>> with ModelServer() as srv:
    ...     srv.script(["scripted answer"])
    ...     srv.pending
    1
"""

from __future__ import annotations

from coze_lab.testing.model_server import (
    DEMO_MODEL,
    DEMO_PREFIX,
    ErrorReply,
    ModelServer,
    Reply,
    ScriptedToolCall,
    TextReply,
    ToolCallsReply,
    count_tokens,
    demo_reply,
)

__all__ = [
    "DEMO_MODEL",
    "DEMO_PREFIX",
    "ErrorReply",
    "ModelServer",
    "Reply",
    "ScriptedToolCall",
    "TextReply",
    "ToolCallsReply",
    "count_tokens",
    "demo_reply",
]
