"""File tools of a bot that enables them (``file_tools``): the model lists, reads (paged) and
writes files of the conversation's session workspace.

``read_file`` reads any file of the session; ``write_file`` writes only to ``scratchpad/``
or ``output/`` (``input/`` holds the user's uploads). Every path goes through
:meth:`SessionWorkspace.resolve`, so nothing outside the session is read or written.
Each write is reported to ``record`` (the ``file_history``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from coze_lab.core.chat.tools import Tool, ToolOutcome
from coze_lab.core.errors import InvalidParameter
from coze_lab.core.workspace import FOLDERS, SessionWorkspace

READ_DEFAULT_CHARS = 8_000
READ_MAX_CHARS = 16_000
WRITE_MAX_CHARS = 1_000_000


@dataclass(frozen=True)
class CallContext:
    """The chat and function_call message a tool is running for (set by the agent)."""

    chat_id: int
    message_id: int | None = None


#: set by the agent around each tool invocation
CURRENT_CALL: ContextVar[CallContext | None] = ContextVar("coze_lab_tool_call", default=None)


@dataclass(frozen=True)
class FileWrite:
    """One file the write tool wrote (an entry of ``file_history``)."""

    path: str
    size: int
    chat_id: int | None
    message_id: int | None


def file_tools(
    workspace: Callable[[], SessionWorkspace],
    record: Callable[[FileWrite], None] | None = None,
) -> list[Tool]:
    """``list_files``, ``read_file`` and ``write_file`` on the workspace ``workspace()``
    returns (created on first use)."""

    async def list_files(args: dict[str, Any]) -> ToolOutcome:
        folder = args.get("folder") or None
        if folder is not None and not isinstance(folder, str):
            raise InvalidParameter("folder must be a string")
        files = await asyncio.to_thread(lambda: workspace().list(folder))
        listing = [{"path": path, "size": size} for path, size in files]
        return ToolOutcome(json.dumps({"files": listing}, ensure_ascii=False))

    async def read_file(args: dict[str, Any]) -> ToolOutcome:
        path = args.get("path")
        offset = _int(args.get("offset", 0), "offset", 0, None)
        limit = _int(args.get("limit", READ_DEFAULT_CHARS), "limit", 1, READ_MAX_CHARS)
        data = await asyncio.to_thread(lambda: workspace().read(path))  # type: ignore[arg-type]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidParameter(f"{path} is not a UTF-8 text file") from None
        if offset > len(text):
            return ToolOutcome(f"{path}: offset {offset} is past the end ({len(text)} characters)")
        page = text[offset : offset + limit]
        end = offset + len(page)
        head = f"{path}: characters {offset}..{end} of {len(text)}"
        if end < len(text):
            head += f" (more: read again with offset={end})"
        return ToolOutcome(f"{head}\n{page}")

    async def write_file(args: dict[str, Any]) -> ToolOutcome:
        path, content = args.get("path"), args.get("content")
        if not isinstance(content, str) or len(content) > WRITE_MAX_CHARS:
            raise InvalidParameter(
                f"content must be a string of at most {WRITE_MAX_CHARS} characters"
            )
        data = content.encode("utf-8")
        await asyncio.to_thread(lambda: workspace().write(path, data))  # type: ignore[arg-type]
        if record is not None:
            call = CURRENT_CALL.get()
            entry = FileWrite(
                str(path),
                len(data),
                call.chat_id if call else None,
                call.message_id if call else None,
            )
            await asyncio.to_thread(record, entry)
        return ToolOutcome(f"wrote {len(data)} bytes to {path}")

    folders = ", ".join(f"{f}/" for f in FOLDERS)
    return [
        Tool(
            "list_files",
            f"List the files of this session's workspace ({folders}) with their sizes.",
            {
                "type": "object",
                "properties": {"folder": {"type": "string", "enum": list(FOLDERS)}},
            },
            "file",
            list_files,
        ),
        Tool(
            "read_file",
            "Read a UTF-8 text file of the workspace, a page at a time: `offset` and "
            f"`limit` count characters (limit at most {READ_MAX_CHARS}).",
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "e.g. input/sales.csv"},
                    "offset": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 1, "maximum": READ_MAX_CHARS},
                },
                "required": ["path"],
            },
            "file",
            read_file,
        ),
        Tool(
            "write_file",
            "Write a text file to scratchpad/ or output/ of the workspace (replacing it). "
            "input/ is read-only.",
            {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "e.g. output/summary.md"},
                    "content": {"type": "string"},
                },
                "required": ["path", "content"],
            },
            "file",
            write_file,
        ),
    ]


def _int(value: Any, name: str, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidParameter(f"{name} must be an integer of at least {low}")
    return value if high is None else min(value, high)
