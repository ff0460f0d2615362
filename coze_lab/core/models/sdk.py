"""The official ``openai`` SDK as the model client's second path, imported on first use.

It is the reference the default path (:mod:`coze_lab.core.models.wire`) is held to: the
model tests run every behaviour on both paths against the local model server. Choose it with
``ModelClient(backend="openai")`` or ``COZE_LAB_MODEL_CLIENT=openai`` when a provider needs
something only the SDK does. It shares the client's ``httpx.AsyncClient`` (connection pool,
``TCP_NODELAY``) and leaves retries to the SDK.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx

from coze_lab.core.models.errors import (
    ModelError,
    connection_error,
    redact,
    status_error,
    timeout_error,
)
from coze_lab.core.models.spec import ModelSpec
from coze_lab.core.models.types import Completion, CompletionChunk

if TYPE_CHECKING:
    import openai


class OpenAISDK:
    """``chat.completions.create`` of one ``openai.AsyncOpenAI`` per endpoint and key.

    Example:
        >>> async def demo(spec):  # doctest: +SKIP
        ...     async with httpx.AsyncClient() as http:
        ...         sdk = OpenAISDK(http, timeout=60, max_retries=2)
        ...         request = {"model": spec.model, "messages": [{"role": "user", "content": "Hi"}]}
        ...         return (await sdk.complete(spec, "no-key", request)).content
    """

    def __init__(self, http: httpx.AsyncClient, *, timeout: float, max_retries: int) -> None:
        import openai  # the SDK's type modules take ~0.5 s to import: only on this path

        self._openai = openai
        # a stream event that is not JSON surfaces from the SDK as a bare JSONDecodeError
        self._errors = (openai.OpenAIError, httpx.HTTPError, json.JSONDecodeError)
        create = openai.resources.chat.AsyncCompletions.create
        sdk_only = {"self", "extra_body", "extra_headers", "extra_query", "timeout"}
        self._known = frozenset(inspect.signature(create).parameters) - sdk_only
        self._http = http
        self._timeout = timeout
        self._max_retries = max_retries
        self._clients: dict[tuple[str, str], openai.AsyncOpenAI] = {}

    async def complete(
        self, spec: ModelSpec, api_key: str, request: Mapping[str, Any]
    ) -> Completion:
        """One non-streamed completion."""
        try:
            response = await self._client(spec, api_key).chat.completions.create(
                **self._arguments(request)
            )
        except self._errors as exc:
            raise self._error(exc, spec, api_key) from exc
        return Completion.from_openai(response)

    async def stream(
        self, spec: ModelSpec, api_key: str, request: Mapping[str, Any]
    ) -> AsyncIterator[CompletionChunk]:
        """The chunks of a streamed completion (``request`` must say ``stream: true``)."""
        try:
            sdk_stream = await self._client(spec, api_key).chat.completions.create(
                **self._arguments(request)
            )
        except self._errors as exc:
            raise self._error(exc, spec, api_key) from exc
        try:
            async for raw in sdk_stream:
                chunk = CompletionChunk.from_openai(raw)
                if chunk is not None:
                    yield chunk
        except self._errors as exc:
            raise self._error(exc, spec, api_key) from exc
        finally:
            await sdk_stream.close()

    async def embed(self, spec: ModelSpec, api_key: str, texts: Sequence[str]) -> list[list[float]]:
        """``embeddings.create`` for ``texts``: the vectors, in the order of the texts."""
        try:
            response = await self._client(spec, api_key).embeddings.create(
                model=spec.model, input=list(texts), encoding_format="float"
            )
        except self._errors as exc:
            raise self._error(exc, spec, api_key) from exc
        ordered = sorted(response.data, key=lambda item: item.index)
        if len(ordered) != len(texts):
            raise ModelError(
                f"{spec.where} returned {len(ordered)} embeddings for {len(texts)} texts",
                kind="protocol",
            )
        return [list(item.embedding) for item in ordered]

    def _arguments(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """``create``'s keywords; parameters it does not know (``top_k``, ...) go in
        ``extra_body``, so both paths send the same body."""
        arguments = {k: v for k, v in request.items() if k in self._known}
        extra = {k: v for k, v in request.items() if k not in self._known}
        if extra:
            arguments["extra_body"] = extra
        return arguments

    def _client(self, spec: ModelSpec, api_key: str) -> openai.AsyncOpenAI:
        key = (spec.base_url, api_key)
        client = self._clients.get(key)
        if client is None:
            client = self._openai.AsyncOpenAI(
                base_url=spec.base_url,
                api_key=api_key,
                http_client=self._http,
                max_retries=self._max_retries,
                timeout=self._timeout,
            )
            self._clients[key] = client
        return client

    def _error(self, exc: Exception, spec: ModelSpec, api_key: str) -> ModelError:
        """Map an SDK or transport failure to :class:`ModelError`, the key redacted."""
        openai, secrets = self._openai, (api_key,)
        if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
            return timeout_error(spec.where)
        if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
            return connection_error(spec.where, exc.__cause__ or exc, secrets)
        if isinstance(exc, openai.APIStatusError):
            return status_error(spec.where, exc.status_code, exc.body, exc.message, secrets)
        return ModelError(redact(f"{spec.where} failed: {exc}", secrets), kind="protocol")
