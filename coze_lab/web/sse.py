"""Server-sent events for tornado handlers (works behind nginx and JupyterHub proxies)."""

from __future__ import annotations

import json
from typing import Any

from tornado.iostream import StreamClosedError
from tornado.web import RequestHandler


def start_stream(handler: RequestHandler) -> None:
    """Event-stream headers, and no Nagle: each small event goes out at once instead of
    waiting for the client's delayed ACK (tens of ms on a kept-alive connection)."""
    stream = getattr(handler.request.connection, "stream", None)
    if stream is not None:
        stream.set_nodelay(True)
    handler.set_status(200)
    handler.set_header("Content-Type", "text/event-stream; charset=utf-8")
    handler.set_header("Cache-Control", "no-cache")
    handler.set_header("X-Accel-Buffering", "no")


async def send_event(
    handler: RequestHandler,
    event_id: int | None,
    event: str,
    data: dict[str, Any] | str,
    *,
    flush: bool = True,
) -> bool:
    """Write one event; False when the client has gone (the run goes on regardless).

    Each field is one line: Coze clients read exactly ``id``, ``event`` and ``data`` (chat
    streams carry no ``id``: cozepy's chat reader refuses one).
    """
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = "" if event_id is None else f"id: {event_id}\n"
    try:
        handler.write(f"{head}event: {event}\ndata: {payload}\n\n")
        if flush:
            await handler.flush()
    except StreamClosedError:
        return False
    return True


def last_event_id(handler: RequestHandler) -> int:
    """The ``Last-Event-ID`` a reconnecting client sent (0 when absent or malformed)."""
    raw = handler.request.headers.get("Last-Event-ID", "")
    return int(raw) if raw.isdigit() else 0
