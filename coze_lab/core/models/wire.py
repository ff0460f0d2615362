"""OpenAI chat completions spoken directly over httpx: the model client's default path.

Why not the ``openai`` SDK on this path: for a streamed chat it costs several milliseconds
of CPU (it builds request options, then a typed model per chunk), its type modules take
about half a second to import, and a server pays both on every chat. This module does what
a chat needs and nothing else; ``bench/chat.py`` prints the CPU per streamed chat of both
paths, and the model tests run every behaviour on both against the local model server.

Kept from the SDK, so a provider sees the same requests and callers the same failures:

- the body is the request as built (any extra parameter passes through, no ``extra_body``);
  ``Authorization: Bearer <key>``, JSON in, JSON or server-sent events out;
- retries (``max_retries``): connection failures, timeouts, HTTP 408/409/429/5xx;
  ``x-should-retry: true|false`` is obeyed; ``retry-after-ms`` / ``retry-after`` (seconds or
  a date) is honoured up to two minutes (longer: no retry); otherwise 0.5 s doubling up to
  8 s, less up to 25 % jitter. A stream is retried only before its first byte;
- errors: an HTTP error status → :class:`ModelError` ``status`` with the provider's own
  message; an ``{"error": ...}`` event inside a stream → ``protocol``; a refused, reset or
  cut connection → ``connection``; no answer in time → ``timeout``. Keys are redacted;
- after ``[DONE]`` the rest of the body is drained (0.1 s at most) so the kept-alive
  connection is reused; closing the iterator early closes the connection at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import httpx

from coze_lab.core.models.errors import (
    ModelError,
    connection_error,
    redact,
    status_error,
    timeout_error,
)
from coze_lab.core.models.spec import ModelSpec
from coze_lab.core.models.sse import SSEDecoder
from coze_lab.core.models.types import Completion, CompletionChunk, ToolCallDelta

INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 120.0
DRAIN_SECONDS = 0.1
RETRY_STATUSES = frozenset({408, 409, 429})
STREAM_ERROR = "An error occurred during streaming"


class ChatCompletions:
    """``POST {base_url}/chat/completions`` through one pooled ``httpx.AsyncClient``.

    Example:
        >>> async def demo(spec):  # doctest: +SKIP
        ...     async with httpx.AsyncClient() as http:
        ...         wire = ChatCompletions(http, max_retries=2)
        ...         request = {"model": spec.model, "messages": [{"role": "user", "content": "Hi"}]}
        ...         return (await wire.complete(spec, "no-key", request)).content
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        max_retries: int,
        user_agent: str = "coze-lab",
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._http = http
        self._max_retries = max_retries
        self._user_agent = user_agent
        self._sleep = sleep

    async def complete(
        self, spec: ModelSpec, api_key: str, request: Mapping[str, Any]
    ) -> Completion:
        """One non-streamed completion."""
        response = await self._send(spec, api_key, request)
        try:
            body = await response.aread()
        except httpx.RequestError as exc:
            raise _transport_error(exc, spec, api_key) from exc
        finally:
            await response.aclose()
        return Completion.from_openai(_json(body, spec, api_key))

    async def stream(
        self, spec: ModelSpec, api_key: str, request: Mapping[str, Any]
    ) -> AsyncIterator[CompletionChunk]:
        """The chunks of a streamed completion (``request`` must say ``stream: true``)."""
        response = await self._send(spec, api_key, request)
        pieces = response.aiter_bytes()
        try:
            if response.headers.get("content-type", "").startswith("application/json"):
                # a server that ignored "stream": the whole answer as one chunk
                done = Completion.from_openai(_json(await response.aread(), spec, api_key))
                yield _as_chunk(done)
                return
            decoder = SSEDecoder()
            async for piece in pieces:
                for event in decoder.feed(piece):
                    if event.data.startswith(b"[DONE]"):
                        await _drain(pieces)
                        return
                    chunk = _chunk(event.data, spec, api_key)
                    if chunk is not None:
                        yield chunk
            for event in decoder.close():
                if not event.data.startswith(b"[DONE]"):
                    chunk = _chunk(event.data, spec, api_key)
                    if chunk is not None:
                        yield chunk
        except httpx.RequestError as exc:
            raise _transport_error(exc, spec, api_key) from exc
        finally:
            await pieces.aclose()  # type: ignore[attr-defined]
            await response.aclose()

    async def _send(
        self, spec: ModelSpec, api_key: str, request: Mapping[str, Any]
    ) -> httpx.Response:
        """Send with retries; the response is open (streamed) and its status a success."""
        content = json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode()
        headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": self._user_agent,
        }
        url = f"{spec.base_url.rstrip('/')}/chat/completions"
        attempt = 0
        while True:
            left = self._max_retries - attempt
            try:
                http_request = self._http.build_request(
                    "POST", url, content=content, headers=headers
                )
                response = await self._http.send(http_request, stream=True)
            except httpx.RequestError as exc:
                if left > 0 and isinstance(exc, httpx.TransportError):
                    await self._sleep(backoff(attempt))
                    attempt += 1
                    continue
                raise _transport_error(exc, spec, api_key) from exc
            if response.is_success:
                return response
            try:
                body = await response.aread()
            except httpx.RequestError:
                body = b""
            finally:
                await response.aclose()
            delay = retry_after(response.headers)
            if left > 0 and should_retry(response.status_code, response.headers, delay):
                await self._sleep(delay if delay is not None and delay > 0 else backoff(attempt))
                attempt += 1
                continue
            raise status_error(
                spec.where,
                response.status_code,
                _error_body(body),
                f"Error code: {response.status_code}",
                (api_key,),
            )


def should_retry(status: int, headers: Mapping[str, str], delay: float | None) -> bool:
    """Whether an error status is worth another attempt (the ``openai`` SDK's rule).

    Example:
        >>> should_retry(429, {}, None), should_retry(400, {}, None)
        (True, False)
        >>> should_retry(503, {"x-should-retry": "false"}, None), should_retry(503, {}, 600.0)
        (False, False)
    """
    if delay is not None and delay > MAX_RETRY_AFTER:
        return False
    verdict = headers.get("x-should-retry")
    if verdict in ("true", "false"):
        return verdict == "true"
    return status in RETRY_STATUSES or status >= 500


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the provider asks us to wait: ``retry-after-ms``, then ``retry-after``
    (a number of seconds or an HTTP date); ``None`` when absent or unreadable.

    Example:
        >>> retry_after({"retry-after-ms": "250"}), retry_after({"retry-after": "2"})
        (0.25, 2.0)
    """
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value)
        except ValueError:
            continue
        if not math.isfinite(seconds):
            return MAX_RETRY_AFTER + 1
        return seconds / divisor
    date = headers.get("retry-after")
    parsed = email.utils.parsedate_tz(date) if date else None
    if parsed is None:
        return None
    return email.utils.mktime_tz(parsed) - time.time()


def backoff(attempt: int) -> float:
    """Seconds before retry number ``attempt + 1``: 0.5 s doubling to 8 s, less ≤ 25 % jitter.

    Example:
        >>> 0.375 <= backoff(0) <= 0.5 and 6.0 <= backoff(10) <= 8.0
        True
    """
    return min(INITIAL_RETRY_DELAY * 2.0 ** min(attempt, 32), MAX_RETRY_DELAY) * (
        1 - 0.25 * random.random()
    )


def _chunk(data: bytes, spec: ModelSpec, api_key: str) -> CompletionChunk | None:
    value = _json(data, spec, api_key)
    if type(value) is dict and value.get("error"):
        error = value["error"]
        message = error.get("message") if isinstance(error, Mapping) else None
        if not isinstance(message, str) or not message:
            message = STREAM_ERROR
        raise ModelError(redact(f"{spec.where} failed: {message}", (api_key,)), kind="protocol")
    return CompletionChunk.from_openai(value)


def _json(data: bytes, spec: ModelSpec, api_key: str) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        text = redact(data[:80].decode("utf-8", "replace"), (api_key,))
        raise ModelError(
            f"{spec.where} sent something that is not JSON: {text!r}", kind="protocol"
        ) from exc


def _error_body(body: bytes) -> object:
    text = body.decode("utf-8", "replace").strip()
    try:
        return json.loads(text)
    except ValueError:
        return text


def _transport_error(exc: httpx.RequestError, spec: ModelSpec, api_key: str) -> ModelError:
    if isinstance(exc, httpx.TimeoutException):
        return timeout_error(spec.where)
    return connection_error(spec.where, exc, (api_key,))


def _as_chunk(done: Completion) -> CompletionChunk:
    deltas = [
        ToolCallDelta(index, call.id, call.name, call.arguments_json)
        for index, call in enumerate(done.tool_calls)
    ]
    return CompletionChunk(done.content, deltas, done.usage, done.finish_reason)


async def _drain(pieces: AsyncIterator[bytes]) -> None:
    """Read what follows ``[DONE]`` (the chunked terminator) so the connection is reused."""

    async def rest() -> None:
        async for _ in pieces:
            pass

    with contextlib.suppress(asyncio.TimeoutError, httpx.HTTPError, httpx.StreamError):
        await asyncio.wait_for(rest(), DRAIN_SECONDS)
