"""Server-sent events for tornado handlers (works behind nginx and JupyterHub proxies)."""

from __future__ import annotations

import json
from typing import Any

from tornado.iostream import StreamClosedError
from tornado.web import RequestHandler


def start_stream(handler: RequestHandler) -> None:
    handler.set_status(200)
    handler.set_header("Content-Type", "text/event-stream; charset=utf-8")
    handler.set_header("Cache-Control", "no-cache")
    handler.set_header("X-Accel-Buffering", "no")


async def send_event(
    handler: RequestHandler, event_id: int, event: str, data: dict[str, Any] | str
) -> bool:
    """Write one event; False when the client has gone (the run goes on regardless).

    Each field is one line: Coze clients read exactly ``id``, ``event`` and ``data``.
    """
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    try:
        handler.write(f"id: {event_id}\nevent: {event}\ndata: {payload}\n\n")
        await handler.flush()
    except StreamClosedError:
        return False
    return True


def last_event_id(handler: RequestHandler) -> int:
    """The ``Last-Event-ID`` a reconnecting client sent (0 when absent or malformed)."""
    raw = handler.request.headers.get("Last-Event-ID", "")
    return int(raw) if raw.isdigit() else 0
