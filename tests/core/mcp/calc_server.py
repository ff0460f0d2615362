"""A tiny MCP server built with the ``mcp`` SDK, for the tests: ``python calc_server.py``
serves it over stdio; ``python calc_server.py http PORT TOKEN`` over streamable HTTP on
127.0.0.1:PORT/mcp, for requests that carry ``Authorization: Bearer TOKEN`` only."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("calc")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def environment(name: str) -> str:
    """The value of an environment variable of the server process ('' when unset)."""
    return os.environ.get(name, "")


@server.tool()
def fail(message: str) -> str:
    """Always fails with the message."""
    raise ValueError(message)


@server.tool()
def shout(text: str, times: int = 1) -> str:
    """The text in capitals, repeated."""
    return text.upper() * times


def serve_http(port: int, token: str) -> None:
    import uvicorn

    app = server.streamable_http_app(json_response=True, stateless_http=True)

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        serve_http(int(sys.argv[2]), sys.argv[3])
    else:
        server.run()
