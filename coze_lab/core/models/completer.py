"""The registry and client behind one call: what workflow llm nodes use."""

from __future__ import annotations

from typing import Any

from coze_lab.core.models.client import ModelClient
from coze_lab.core.models.registry import ModelRegistry


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
        usage = completion.usage
        spent: dict[str, Any] = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            "model": spec.id,
        }
        if spec.prices is not None:
            spent["cost"] = spec.prices.cost(spent)
        return completion.content, spent

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
