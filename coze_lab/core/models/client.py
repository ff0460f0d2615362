"""The async model client: OpenAI-compatible chat completions, normalised results.

Two paths speak to the provider: by default this package's own lean HTTP client
(:mod:`coze_lab.core.models.wire`: httpx and a small server-sent-events parser), or the
official ``openai`` SDK (:mod:`coze_lab.core.models.sdk`, imported only when chosen). Both
send the same request, normalise into the same types and raise the same errors. The HTTP
transport is injectable (``httpx.MockTransport`` in unit tests); tests against
:mod:`coze_lab.testing.model_server` exercise both real paths.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Protocol

import httpx

from coze_lab._version import __version__
from coze_lab.core.models.errors import ModelNotConfigured
from coze_lab.core.models.lean import LeanTransport
from coze_lab.core.models.spec import ModelSpec
from coze_lab.core.models.types import Completion, CompletionChunk
from coze_lab.core.models.wire import ChatCompletions

Message = Mapping[str, Any]
IMAGE_OMITTED = "[image omitted: this model has no image understanding]"
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 2
BACKENDS = ("httpx", "openai")
BACKEND_ENV = "COZE_LAB_MODEL_CLIENT"
#: ``lean`` (the default: :class:`~coze_lab.core.models.lean.LeanTransport`) or ``httpcore``
#: (httpx's own transport, for a provider or network the lean transport does not suit)
TRANSPORT_ENV = "COZE_LAB_MODEL_TRANSPORT"
TRANSPORTS = ("lean", "httpcore")

#: what the current task calls once its model request is out (see :func:`on_request_sent`)
_ON_SENT: ContextVar[Callable[[], None] | None] = ContextVar("coze_lab_on_sent", default=None)


@contextlib.contextmanager
def on_request_sent(callback: Callable[[], None]) -> Iterator[None]:
    """Within the block, ``callback()`` is called once a model request of this task is on
    its way, the point from which the task only waits on the network: a new connection is
    being opened for it, or its body has been sent and the response is awaited (on a
    transport that does not trace: when the response or the failure arrives). A chat writes
    its rows then, while the model thinks; a model that cannot be reached holds nothing up.
    It may be called more than once (retries, later rounds).

    Example:
        >>> sent = []
        >>> with on_request_sent(lambda: sent.append(True)):  # doctest: +SKIP
        ...     await client.complete(spec, messages)
        >>> sent  # doctest: +SKIP
        [True]
    """
    token = _ON_SENT.set(callback)
    try:
        yield
    finally:
        _ON_SENT.reset(token)


#: httpcore trace steps after which a request only waits on the network
_ON_ITS_WAY = (
    "connect_tcp.started",
    "connect_unix_socket.started",
    "receive_response_headers.started",
)


class _SentSignal(httpx.AsyncBaseTransport):
    """Wraps the transport: tells :func:`on_request_sent`'s callback when a request is on
    its way (httpcore's ``trace`` extension: a connection is being opened, or the response
    headers are awaited)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        notify = _ON_SENT.get()
        if notify is None:
            return await self._inner.handle_async_request(request)
        outer = request.extensions.get("trace")

        async def trace(name: str, info: dict[str, Any]) -> None:
            if name.endswith(_ON_ITS_WAY):
                notify()
            if outer is not None:
                await outer(name, info)

        request.extensions = {**request.extensions, "trace": trace}
        try:
            return await self._inner.handle_async_request(request)
        finally:
            notify()

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Backend(Protocol):
    async def complete(
        self, spec: ModelSpec, api_key: str, request: Mapping[str, Any]
    ) -> Completion: ...

    def stream(
        self, spec: ModelSpec, api_key: str, request: Mapping[str, Any]
    ) -> AsyncGenerator[CompletionChunk, None]: ...


class ModelClient:
    """Calls models described by :class:`ModelSpec`; one instance per event loop.

    Capability gating (never an error, so a bot keeps working when its model changes):
    ``tools``/``tool_choice`` are sent only when ``capabilities.function_call`` is true,
    ``response_format`` only when ``capabilities.json_mode`` is true, and image parts of
    messages are replaced by a short text note unless ``capabilities.image_understanding``.
    Provider failures raise :class:`ModelError` (kind ``connection``, ``timeout``, ``status``
    or ``protocol``); a declared but unset key variable raises ``ModelNotConfigured``.

    ``backend``: ``"httpx"`` (the default: the lean path) or ``"openai"`` (the official SDK);
    unset, the ``COZE_LAB_MODEL_CLIENT`` environment variable decides. Another value raises
    ``ModelNotConfigured``, so a mistyped variable fails each chat with a clear message.
    ``COZE_LAB_MODEL_TRANSPORT`` picks what carries the requests: ``lean`` (the default, one
    write per request on a kept-alive connection) or ``httpcore`` (httpx's own transport).

    Example:
        >>> async def demo(spec):  # doctest: +SKIP
        ...     async with ModelClient() as client:
        ...         done = await client.complete(spec, [{"role": "user", "content": "Hi"}])
        ...         return done.content, done.usage.total_tokens
    """

    def __init__(
        self,
        transport: httpx.AsyncBaseTransport | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        environ: Mapping[str, str] | None = None,
        backend: str | None = None,
    ) -> None:
        if backend is None:
            backend = (os.environ if environ is None else environ).get(BACKEND_ENV) or "httpx"
        if backend not in BACKENDS:
            raise ModelNotConfigured(
                f"the model client must be 'httpx' or 'openai' (ModelClient(backend=...) or "
                f"{BACKEND_ENV}), not {backend!r}"
            )
        self.backend = backend
        if transport is None:
            kind = (os.environ if environ is None else environ).get(TRANSPORT_ENV) or "lean"
            if kind not in TRANSPORTS:
                raise ModelNotConfigured(
                    f"{TRANSPORT_ENV} must be 'lean' or 'httpcore', not {kind!r}"
                )
            if kind == "httpcore":
                # no Nagle: on a kept-alive connection the request body would otherwise wait
                # for the provider's delayed ACK (~40 ms before every first token)
                transport = httpx.AsyncHTTPTransport(
                    limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100),
                    socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                )
        self._transport = transport
        self._timeout = timeout
        self._max_retries = max_retries
        self._environ = environ
        self._http: httpx.AsyncClient | None = None
        self._wire: _Backend | None = None
        self._embedder: Any = None

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close pooled connections."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        self._wire = None
        self._embedder = None

    async def complete(
        self,
        spec: ModelSpec,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Completion:
        """One non-streamed completion.

        ``params`` (``temperature``, ``max_tokens``, ...) override ``spec.parameters``; a
        ``None`` value removes a default.

        Example:
            >>> done = await client.complete(spec, [{"role": "user", "content": "Hi"}])  # doctest: +SKIP
            >>> done.content, done.finish_reason  # doctest: +SKIP
            ('[demo model] You said: Hi', 'stop')
        """  # noqa: E501
        api_key = spec.api_key(self._environ)
        request = build_request(spec, messages, tools, tool_choice, response_format, params)
        return await self._backend().complete(spec, api_key, request)

    async def stream(
        self,
        spec: ModelSpec,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> AsyncIterator[CompletionChunk]:
        """Stream a completion chunk by chunk; the last chunks carry finish reason and usage.

        Cancelling the consuming task closes the HTTP response at once. When you stop
        iterating early, close the generator (``async with contextlib.aclosing(...)``) so
        the connection is released immediately rather than at garbage collection.

        Example:
            >>> async for chunk in client.stream(spec, messages):  # doctest: +SKIP
            ...     print(chunk.content_delta, end="")
        """
        api_key = spec.api_key(self._environ)
        request = build_request(spec, messages, tools, tool_choice, response_format, params)
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
        chunks = self._backend().stream(spec, api_key, request)
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            await chunks.aclose()

    async def embed(self, spec: ModelSpec, texts: Sequence[str]) -> list[list[float]]:
        """The embeddings of ``texts`` (``POST /v1/embeddings`` through the ``openai`` SDK,
        on this client's connection pool), in order.

        Example:
            >>> vectors = await client.embed(spec, ["a cat", "a dog"])  # doctest: +SKIP
            >>> len(vectors), len(vectors[0])  # doctest: +SKIP
            (2, 256)
        """
        from coze_lab.core.models.sdk import OpenAISDK

        api_key = spec.api_key(self._environ)
        if self._embedder is None:
            self._embedder = OpenAISDK(
                self._http_client(), timeout=self._timeout, max_retries=self._max_retries
            )
        return await self._embedder.embed(spec, api_key, texts)

    def _backend(self) -> _Backend:
        if self._wire is None:
            http = self._http_client()
            if self.backend == "openai":
                from coze_lab.core.models.sdk import OpenAISDK

                self._wire = OpenAISDK(http, timeout=self._timeout, max_retries=self._max_retries)
            else:
                self._wire = ChatCompletions(
                    http, max_retries=self._max_retries, user_agent=f"coze-lab/{__version__}"
                )
        return self._wire

    def _http_client(self) -> httpx.AsyncClient:
        if self._http is None:
            limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
            # the lean transport writes each request at once on a kept-alive connection
            # (httpcore took about 0.8 ms of CPU per request before the model could start),
            # with no Nagle: a small request would otherwise wait for the provider's delayed
            # ACK (~40 ms before every first token)
            transport = self._transport or LeanTransport(
                max_idle=limits.max_keepalive_connections or 100
            )
            self._http = httpx.AsyncClient(
                transport=_SentSignal(transport),
                timeout=httpx.Timeout(self._timeout, connect=min(self._timeout, 10.0)),
                limits=limits,
                follow_redirects=True,
            )
        return self._http


def build_request(
    spec: ModelSpec,
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None,
    tool_choice: str | Mapping[str, Any] | None,
    response_format: Mapping[str, Any] | None,
    params: Mapping[str, Any],
) -> dict[str, Any]:
    """The keyword arguments for ``chat.completions.create``, after capability gating.

    Example:
        >>> from coze_lab.core.models.spec import ModelCapabilities
        >>> spec = ModelSpec(id="m", name="m", base_url="http://x/v1", model="m",
        ...                  parameters={"temperature": 0.3},
        ...                  capabilities=ModelCapabilities(function_call=False))
        >>> req = build_request(spec, [{"role": "user", "content": "hi"}],
        ...                     [{"type": "function", "function": {"name": "f"}}], None, None, {})
        >>> sorted(req)
        ['messages', 'model', 'temperature']
    """
    caps = spec.capabilities
    merged = {**spec.parameters, **params}
    request: dict[str, Any] = {k: v for k, v in merged.items() if v is not None}
    request["model"] = spec.model
    request["messages"] = (
        [_gate_images(m) for m in messages]
        if not caps.image_understanding
        else [dict(m) for m in messages]
    )
    if tools and caps.function_call:
        request["tools"] = [dict(tool) for tool in tools]
        if tool_choice is not None:
            request["tool_choice"] = tool_choice
    if response_format is not None and (caps.json_mode or response_format.get("type") == "text"):
        request["response_format"] = dict(response_format)
    return request


def _gate_images(message: Message) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return dict(message)
    parts = [
        {"type": "text", "text": IMAGE_OMITTED}
        if isinstance(part, Mapping) and part.get("type") in {"image_url", "input_image"}
        else part
        for part in content
    ]
    return {**message, "content": parts}
