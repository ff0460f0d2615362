"""The test MCP server (calc_server.py, built with the ``mcp`` SDK) over streamable HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

CALC_SERVER = Path(__file__).with_name("calc_server.py")


def stdio_server(name: str = "calc", **extra: object) -> dict[str, object]:
    """A studio body adding the calc server over stdio (this Python runs it)."""
    return {"name": name, "command": sys.executable, "args": [str(CALC_SERVER)], **extra}


class HttpCalcServer:
    """calc_server.py under uvicorn on a free loopback port; requests need ``token``."""

    def __init__(self, token: str = "calc-secret") -> None:
        self.token = token
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def __enter__(self) -> HttpCalcServer:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.proc = subprocess.Popen(
            [sys.executable, str(CALC_SERVER), "http", str(port), self.token],
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("calc_server.py exited") from None
                time.sleep(0.05)
        else:
            raise RuntimeError("calc_server.py did not listen")
        self.url = f"http://127.0.0.1:{port}/mcp"
        return self

    def __exit__(self, *_: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
