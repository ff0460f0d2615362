"""The file tools on a real session workspace (the chat path is in
``tests/web/test_file_tools.py``): paging, text-only reads, what a write records."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from coze_lab.core.chat.file_tools import (
    CURRENT_CALL,
    READ_MAX_CHARS,
    CallContext,
    FileWrite,
    file_tools,
)
from coze_lab.core.errors import InvalidParameter
from coze_lab.core.workspace import WorkspaceRoot


def test_paging_text_only_and_recorded_writes(tmp_path: Path) -> None:
    ws = WorkspaceRoot(tmp_path).session(1, 2)
    written: list[FileWrite] = []
    tools = {t.name: t for t in file_tools(lambda: ws, written.append)}

    async def scenario() -> list[str]:
        assert tools["write_file"].invoke is not None and tools["read_file"].invoke is not None
        CURRENT_CALL.set(CallContext(chat_id=7, message_id=8))
        out = [
            (
                await tools["write_file"].invoke({"path": "scratchpad/a.txt", "content": "é" * 5})
            ).output
        ]
        out.append((await tools["read_file"].invoke({"path": "scratchpad/a.txt"})).output)
        out.append(
            (await tools["read_file"].invoke({"path": "scratchpad/a.txt", "offset": 9})).output
        )
        big = await tools["read_file"].invoke(
            {"path": "scratchpad/a.txt", "limit": READ_MAX_CHARS * 10}
        )
        out.append(big.output)
        return out

    wrote, page, past_end, clamped = asyncio.run(scenario())
    assert wrote == "wrote 10 bytes to scratchpad/a.txt"
    assert page == "scratchpad/a.txt: characters 0..5 of 5\n" + "é" * 5
    assert past_end == "scratchpad/a.txt: offset 9 is past the end (5 characters)"
    assert clamped == page
    assert written == [FileWrite("scratchpad/a.txt", 10, 7, 8)]

    (ws.root / "output" / "blob.bin").write_bytes(b"\xff\xfe\x00")
    invoke = tools["read_file"].invoke
    assert invoke is not None
    with pytest.raises(InvalidParameter, match="not a UTF-8 text file"):
        asyncio.run(invoke({"path": "output/blob.bin"}))
    with pytest.raises(InvalidParameter, match="offset must be an integer"):
        asyncio.run(invoke({"path": "output/blob.bin", "offset": -1}))
