"""The registry and client behind one call: what workflow llm nodes use."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from coze_lab.core.models.client import ModelClient
from coze_lab.core.models.registry import ModelRegistry
from coze_lab.core.models.spec import ModelSpec
from coze_lab.core.models.types import CompletionAccumulator, Usage


class RegistryCompleter:
    """``await completer(model_id, messages, **params) -> (text, usage)``.

    ``"default"`` means the registry's default model. The client is created on first use,
    inside the event loop that calls it.

    Example:
        >>> completer = RegistryCompleter(ModelRegistry.load())      # doctest: +SKIP
        >>> messages = [{"role": "user", "content": "hi"}]
        >>> text, usage = await completer("default", messages)  # doctest: +SKIP
    """

    def __init__(self, registry: ModelRegistry, *, client: ModelClient | None = None) -> None:
        self.registry = registry
        self._client = client

    async def __call__(
        self, model_id: str, messages: list[dict[str, Any]], **params: Any
    ) -> tuple[str, dict[str, Any]]:
        spec = self.registry.resolve(model_id)
        if self._client is None:
            self._client = ModelClient()
        completion = await self._client.complete(spec, messages, **params)
        return completion.content, _spent(spec, completion.usage)

    async def stream(
        self,
        model_id: str,
        messages: list[dict[str, Any]],
        on_delta: Callable[[str], None],
        **params: Any,
    ) -> tuple[str, dict[str, Any]]:
        """The same call streamed: ``on_delta(text)`` hears every piece of the answer as it
        arrives; the whole text and the usage are returned at the end.

        Example:
            >>> text, usage = await completer.stream("default", messages, print)  # doctest: +SKIP
        """
        spec = self.registry.resolve(model_id)
        if self._client is None:
            self._client = ModelClient()
        acc = CompletionAccumulator()
        async with contextlib.aclosing(self._client.stream(spec, messages, **params)) as chunks:
            async for chunk in chunks:
                acc.add(chunk)
                if chunk.content_delta:
                    on_delta(chunk.content_delta)
        done = acc.completion()
        return done.content, _spent(spec, done.usage)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _spent(spec: ModelSpec, usage: Usage) -> dict[str, Any]:
    spent: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "model": spec.id,
    }
    if spec.prices is not None:
        spent["cost"] = spec.prices.cost(spent)
    return spent
