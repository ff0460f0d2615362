"""The async model client: OpenAI-compatible chat completions through the ``openai`` SDK.

The HTTP transport is injectable (``httpx.MockTransport`` in unit tests); everything else is
the real SDK, so tests against :mod:`coze_lab.testing.model_server` exercise the real path.
"""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx
import openai

from coze_lab.core.models.errors import ModelError, redact
from coze_lab.core.models.spec import ModelSpec
from coze_lab.core.models.types import (
    Completion,
    CompletionChunk,
    ToolCall,
    ToolCallDelta,
    Usage,
)

Message = Mapping[str, Any]
IMAGE_OMITTED = "[image omitted: this model has no image understanding]"
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 2
PROVIDER_ERRORS = (openai.OpenAIError, httpx.HTTPError)


class ModelClient:
    """Calls models described by :class:`ModelSpec`; one instance per event loop.

    Capability gating (never an error, so a bot keeps working when its model changes):
    ``tools``/``tool_choice`` are sent only when ``capabilities.function_call`` is true,
    ``response_format`` only when ``capabilities.json_mode`` is true, and image parts of
    messages are replaced by a short text note unless ``capabilities.image_understanding``.
    Provider failures raise :class:`ModelError` (kind ``connection``, ``timeout``, ``status``
    or ``protocol``); a declared but unset key variable raises ``ModelNotConfigured``.

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
    ) -> None:
        self._transport = transport
        self._timeout = timeout
        self._max_retries = max_retries
        self._environ = environ
        self._http: httpx.AsyncClient | None = None
        self._sdk_clients: dict[tuple[str, str], openai.AsyncOpenAI] = {}

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close pooled connections."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        self._sdk_clients.clear()

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
        sdk = self._sdk(spec, api_key)
        try:
            response = await sdk.chat.completions.create(**request)
        except PROVIDER_ERRORS as exc:
            raise to_model_error(exc, spec, api_key) from exc
        return completion_from_response(response)

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
        sdk = self._sdk(spec, api_key)
        try:
            sdk_stream = await sdk.chat.completions.create(**request)
        except PROVIDER_ERRORS as exc:
            raise to_model_error(exc, spec, api_key) from exc
        try:
            async for raw in sdk_stream:
                chunk = chunk_from_response(raw)
                if chunk is not None:
                    yield chunk
        except PROVIDER_ERRORS as exc:
            raise to_model_error(exc, spec, api_key) from exc
        finally:
            await sdk_stream.close()

    def _sdk(self, spec: ModelSpec, api_key: str) -> openai.AsyncOpenAI:
        key = (spec.base_url, api_key)
        client = self._sdk_clients.get(key)
        if client is None:
            client = openai.AsyncOpenAI(
                base_url=spec.base_url,
                api_key=api_key,
                http_client=self._http_client(),
                max_retries=self._max_retries,
                timeout=self._timeout,
            )
            self._sdk_clients[key] = client
        return client

    def _http_client(self) -> httpx.AsyncClient:
        if self._http is None:
            limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
            # no Nagle: on a kept-alive connection the request body would otherwise wait for
            # the provider's delayed ACK (~40 ms before every first token)
            transport = self._transport or httpx.AsyncHTTPTransport(
                limits=limits, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
            )
            self._http = httpx.AsyncClient(
                transport=transport,
                timeout=httpx.Timeout(self._timeout, connect=min(self._timeout, 10.0)),
                limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100),
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


def completion_from_response(response: Any) -> Completion:
    """Normalise an SDK ``ChatCompletion``."""
    if not getattr(response, "choices", None):
        raise ModelError("the model provider returned no choices", kind="protocol")
    choice = response.choices[0]
    message = choice.message
    tool_calls = [
        ToolCall(call.id or f"call_{i}", call.function.name, call.function.arguments or "")
        for i, call in enumerate(message.tool_calls or [])
        if getattr(call, "function", None) is not None
    ]
    finish = choice.finish_reason or ("tool_calls" if tool_calls else "stop")
    return Completion(
        content=message.content or "",
        tool_calls=tool_calls,
        usage=usage_from_response(response.usage) or Usage(),
        finish_reason=finish,
        model=response.model or "",
    )


def chunk_from_response(raw: Any) -> CompletionChunk | None:
    """Normalise an SDK ``ChatCompletionChunk``; ``None`` when it carries nothing."""
    usage = usage_from_response(getattr(raw, "usage", None))
    if not raw.choices:
        return CompletionChunk(usage=usage) if usage is not None else None
    choice = raw.choices[0]
    delta = choice.delta
    deltas = [
        ToolCallDelta(
            index=call.index,
            id=call.id,
            name=call.function.name if call.function else None,
            arguments_delta=(call.function.arguments or "") if call.function else "",
        )
        for call in (delta.tool_calls or [])
    ]
    return CompletionChunk(
        content_delta=delta.content or "",
        tool_call_deltas=deltas,
        usage=usage,
        finish_reason=choice.finish_reason,
    )


def usage_from_response(usage: Any) -> Usage | None:
    """Normalise an SDK ``CompletionUsage`` (``None`` stays ``None``)."""
    if usage is None:
        return None
    prompt = usage.prompt_tokens or 0
    completion = usage.completion_tokens or 0
    return Usage(prompt, completion, usage.total_tokens or prompt + completion)


def to_model_error(exc: Exception, spec: ModelSpec, api_key: str | None) -> ModelError:
    """Map an SDK or transport failure (:data:`PROVIDER_ERRORS`) to :class:`ModelError`.

    The message names the model and endpoint and never contains the API key.
    """
    where = f"model '{spec.id}' at {spec.base_url}"
    secrets = (api_key,)
    if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
        return ModelError(f"{where} did not answer in time", kind="timeout")
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        cause = exc.__cause__ or exc
        return ModelError(
            redact(f"cannot connect to {where}: {type(cause).__name__}: {cause}", secrets),
            kind="connection",
        )
    if isinstance(exc, openai.APIStatusError):
        detail = redact(_provider_message(exc), secrets)
        return ModelError(
            f"{where} answered HTTP {exc.status_code}: {detail}",
            kind="status",
            provider_status=exc.status_code,
        )
    return ModelError(redact(f"{where} failed: {exc}", secrets), kind="protocol")


def _provider_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str) and body.strip():
        text = " ".join(re.sub(r"<[^>]*>", " ", body).split())
        return text[:200] or exc.message
    return exc.message
