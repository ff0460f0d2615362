"""A lean HTTP/1.1 transport for httpx: the model client's connections to providers.

Why: httpcore (httpx's own transport) spends about 0.8 ms of CPU between a request handed
to it and its last byte on the wire (its connection pool's locks and events, anyio's
checkpoints, h11's state machine, headers and body in two writes), and a chat waits for
that before its model can start thinking. This transport writes the request in one write
on a kept-alive ``asyncio`` connection (about 10 µs) and reads the response with the
stream reader; everything above the transport (the client's timeouts, redirects, content
decoding, errors) is httpx's as before.

What it speaks: HTTP/1.1 over TCP or TLS (httpx's default certificate checks), bodies
framed by ``Content-Length``, ``chunked`` or the end of the connection. Proxies from the
environment keep httpx's own transport (the client mounts it for them). Failures are
httpx's exceptions (``ConnectError``, ``ReadTimeout``, ``RemoteProtocolError``...), so
callers cannot tell the transports apart. A kept-alive connection the server closed while
idle is never reused; one it closes as the request arrives (no byte of an answer) is
replaced once, on a new connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import httpx

T = TypeVar("T")
#: idle kept-alive connections kept (all hosts together)
MAX_IDLE = 100
#: the longest response head (status line and headers) read
MAX_HEAD = 64 * 1024
_STREAM_LIMIT = 1024 * 1024


class _Connection:
    """One HTTP/1.1 connection: its reader, its writer, and the host it goes to."""

    __slots__ = ("key", "reader", "writer")

    def __init__(
        self, key: tuple[str, str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.key = key
        self.reader = reader
        self.writer = writer

    def reusable(self) -> bool:
        return not (self.writer.is_closing() or self.reader.at_eof())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


async def _within(work: Awaitable[T], seconds: float | None) -> T:
    """``await work``, raising ``asyncio.TimeoutError`` after ``seconds`` (None: no limit)."""
    if seconds is None:
        return await work
    timeout = getattr(asyncio, "timeout", None)
    if timeout is None:  # Python 3.10
        return await asyncio.wait_for(work, seconds)
    async with timeout(seconds):
        return await work


class LeanTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 with kept-alive connections, each request in one write.

    Example:
        >>> async def demo(url):  # doctest: +SKIP
        ...     async with httpx.AsyncClient(transport=LeanTransport()) as http:
        ...         return (await http.get(url)).status_code
    """

    def __init__(self, *, max_idle: int = MAX_IDLE, nodelay: bool = True) -> None:
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._idle_count = 0
        self._max_idle = max_idle
        self._nodelay = nodelay
        self._ssl: ssl.SSLContext | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        scheme = url.scheme
        if scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {scheme!r}", request=request)
        port = url.port or (443 if scheme == "https" else 80)
        key = (scheme, url.host, port)
        timeouts = request.extensions.get("timeout") or {}
        trace = request.extensions.get("trace")
        head = _head(request, await request.aread())
        for attempt in (1, 2):
            connection = self._checkout(key)
            reused = connection is not None
            if connection is None:
                if trace is not None:
                    await trace("connection.connect_tcp.started", {})
                connection = await self._connect(key, timeouts.get("connect"), request)
            try:
                connection.writer.write(head)
                if trace is not None:
                    await trace("http11.receive_response_headers.started", {})
                status, reason, headers, raw, old = await _read_head(
                    connection.reader, timeouts.get("read"), request, first=reused
                )
            except _Unanswered:
                connection.close()
                if attempt == 1:  # closed by the server while the request was on its way
                    continue
                raise httpx.RemoteProtocolError(
                    "Server disconnected without sending a response.", request=request
                ) from None
            except BaseException:
                connection.close()
                raise
            body = _Body(self, connection, request, headers, status, timeouts.get("read"))
            if old and dict(headers).get(b"connection", b"").lower() != b"keep-alive":
                body.keep = False  # HTTP/1.0 closes unless asked to keep the connection
            return httpx.Response(
                status,
                headers=raw,
                stream=body,
                extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason},
                request=request,
            )
        raise AssertionError("unreachable")

    def _checkout(self, key: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            self._idle_count -= 1
            if connection.reusable():
                return connection
            connection.close()
        return None

    def release(self, connection: _Connection) -> None:
        """Keep ``connection`` for the next request to its host (its answer is read)."""
        if not connection.reusable() or self._idle_count >= self._max_idle:
            connection.close()
            return
        self._idle.setdefault(connection.key, []).append(connection)
        self._idle_count += 1

    async def _connect(
        self, key: tuple[str, str, int], seconds: float | None, request: httpx.Request
    ) -> _Connection:
        scheme, host, port = key
        context = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = httpx.create_ssl_context()
            context = self._ssl
        try:
            reader, writer = await _within(
                asyncio.open_connection(
                    host,
                    port,
                    ssl=context,
                    server_hostname=host if context is not None else None,
                    limit=_STREAM_LIMIT,
                ),
                seconds,
            )
        except asyncio.TimeoutError as exc:
            message = f"connecting to {host}:{port} timed out"
            raise httpx.ConnectTimeout(message, request=request) from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        sock = writer.get_extra_info("socket")
        if self._nodelay and sock is not None:
            # no Nagle: a small request would otherwise wait for the server's delayed ACK
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Connection(key, reader, writer)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        self._idle_count = 0
        for connections in idle.values():
            for connection in connections:
                connection.close()


class _Unanswered(Exception):
    """A reused connection ended before any byte of the answer."""


def _head(request: httpx.Request, body: bytes) -> bytes:
    """The request as it goes on the wire: request line, headers, body."""
    lines = [b"%s %s HTTP/1.1\r\n" % (request.method.encode(), request.url.raw_path)]
    lines += [b"%s: %s\r\n" % (name, value) for name, value in request.headers.raw]
    lines.append(b"\r\n")
    lines.append(body)
    return b"".join(lines)


async def _read_head(
    reader: asyncio.StreamReader, seconds: float | None, request: httpx.Request, *, first: bool
) -> tuple[int, bytes, list[tuple[bytes, bytes]], list[tuple[bytes, bytes]], bool]:
    """Status, reason phrase, headers (names lower-cased), headers as sent and whether the
    answer is HTTP/1.0; a ``100 Continue`` or other informational answer is skipped."""
    while True:
        try:
            block = await _within(reader.readuntil(b"\r\n\r\n"), seconds)
        except asyncio.TimeoutError as exc:
            raise httpx.ReadTimeout("timed out reading the response", request=request) from exc
        except asyncio.IncompleteReadError as exc:
            if first and not exc.partial:
                raise _Unanswered from exc
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            ) from exc
        except asyncio.LimitOverrunError as exc:
            raise httpx.RemoteProtocolError("response head too long", request=request) from exc
        except OSError as exc:
            if first:
                raise _Unanswered from exc
            raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc
        if len(block) > MAX_HEAD:
            raise httpx.RemoteProtocolError("response head too long", request=request)
        status_line, *lines = block[:-4].split(b"\r\n")
        version, _, rest = status_line.partition(b" ")
        code, _, reason = rest.partition(b" ")
        if not version.startswith(b"HTTP/1.") or not code.isdigit() or len(code) != 3:
            message = f"malformed status line {status_line[:80]!r}"
            raise httpx.RemoteProtocolError(message, request=request)
        status = int(code)
        raw: list[tuple[bytes, bytes]] = []
        for line in lines:
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip():
                raise httpx.RemoteProtocolError(f"malformed header {line[:80]!r}", request=request)
            raw.append((name, value.strip()))
        if 100 <= status < 200 and status != 101:
            first = False
            continue
        headers = [(name.lower(), value) for name, value in raw]
        return status, reason, headers, raw, version == b"HTTP/1.0"


class _Body(httpx.AsyncByteStream):
    """A response body as it arrives; the connection goes back to the pool once it is read
    to its end (and is closed when the body is dropped before)."""

    def __init__(
        self,
        transport: LeanTransport,
        connection: _Connection,
        request: httpx.Request,
        headers: list[tuple[bytes, bytes]],
        status: int,
        seconds: float | None,
    ) -> None:
        self._transport = transport
        self._connection: _Connection | None = connection
        self._request = request
        self._seconds = seconds
        self._done = False
        values = dict(headers)
        self.keep = values.get(b"connection", b"").lower() != b"close"
        encoding = values.get(b"transfer-encoding", b"").lower()
        length = values.get(b"content-length")
        self._chunked = b"chunked" in encoding
        self._length: int | None = None
        if request.method == "HEAD" or status in (204, 304):
            self._length = 0
        elif not self._chunked and length is not None:
            if not length.isdigit():
                raise httpx.RemoteProtocolError("malformed Content-Length", request=request)
            self._length = int(length)
        elif not self._chunked:
            self.keep = False  # the body ends with the connection

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None or self._done:
            return
        reader = connection.reader
        try:
            if self._chunked:
                async for piece in self._chunks(reader):
                    yield piece
            elif self._length is not None:
                left = self._length
                while left:
                    piece = await self._read(reader.read(min(left, 65536)))
                    if not piece:
                        raise httpx.RemoteProtocolError(
                            "peer closed connection without sending complete message body",
                            request=self._request,
                        )
                    left -= len(piece)
                    yield piece
            else:
                while piece := await self._read(reader.read(65536)):
                    yield piece
            self._done = True
        finally:
            self._finish()

    async def _chunks(self, reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
        while True:
            line = await self._read(reader.readline())
            if not line.endswith(b"\n"):
                raise self._incomplete()
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise httpx.RemoteProtocolError(
                    f"malformed chunk size {size_text[:20]!r}", request=self._request
                ) from None
            if size == 0:
                while (await self._read(reader.readline())).strip():  # trailers
                    pass
                return
            try:
                data = await self._read(reader.readexactly(size + 2))
            except asyncio.IncompleteReadError:
                raise self._incomplete() from None
            yield data[:-2]

    async def _read(self, work: Awaitable[T]) -> T:
        try:
            return await _within(work, self._seconds)
        except asyncio.TimeoutError as exc:
            message = "timed out reading the response"
            raise httpx.ReadTimeout(message, request=self._request) from exc
        except asyncio.IncompleteReadError:
            raise
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__, request=self._request) from exc

    def _incomplete(self) -> httpx.RemoteProtocolError:
        return httpx.RemoteProtocolError(
            "peer closed connection without sending complete message body", request=self._request
        )

    def _finish(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._done and self.keep:
            self._transport.release(connection)
        else:
            connection.close()

    async def aclose(self) -> None:
        self._finish()
