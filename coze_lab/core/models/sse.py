"""A minimal incremental decoder of server-sent events, for model streams.

Follows the HTML event-stream rules that model providers rely on: lines end with ``\\n``,
``\\r\\n`` or ``\\r``; ``data:`` lines of one event are joined with ``\\n``; a blank line
ends the event; lines starting with ``:`` are comments (keep-alive pings); one space after
the colon is dropped. ``id`` and ``retry`` are ignored (a model stream is never resumed).
Data stays ``bytes``: ``json.loads`` reads bytes directly, so no text decoding happens twice.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One event: its ``event`` field (``""`` when absent) and its data.

    Example:
        >>> ServerSentEvent("", b'{"a": 1}').data
        b'{"a": 1}'
    """

    event: str
    data: bytes


class SSEDecoder:
    """Feed bytes as they arrive; get the events completed so far.

    Example:
        >>> decoder = SSEDecoder()
        >>> decoder.feed(b"data: one\\n\\nda")
        [ServerSentEvent(event='', data=b'one')]
        >>> decoder.feed(b"ta: two\\r\\n: ping\\r\\n\\r\\n")
        [ServerSentEvent(event='', data=b'two')]
    """

    __slots__ = ("_data", "_event", "_partial")

    def __init__(self) -> None:
        self._partial = b""
        self._data: list[bytes] = []
        self._event = ""

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode ``chunk``; an incomplete last line waits for the next chunk."""
        buffer = self._partial + chunk if self._partial else chunk
        lines = buffer.splitlines(keepends=True)
        # a last line without its ending waits; so does one ending in "\r", whose "\n" may
        # be the first byte of the next chunk ("\r\n" split across reads)
        if lines and not lines[-1].endswith(b"\n"):
            self._partial = lines.pop()
        else:
            self._partial = b""
        events: list[ServerSentEvent] = []
        for raw in lines:
            event = self._line(raw.rstrip(b"\r\n"))
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[ServerSentEvent]:
        """End of stream: a pending line is complete, an event without its blank line too."""
        events = self.feed(b"\n") if self._partial else []
        event = self._line(b"")
        return [*events, event] if event is not None else events

    def _line(self, line: bytes) -> ServerSentEvent | None:
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = ServerSentEvent(self._event, b"\n".join(self._data))
            self._data = []
            self._event = ""
            return event
        if line[0] == 58:  # b":" — a comment
            return None
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        return None
