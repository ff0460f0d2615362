"""What a model is: where it lives, how to authenticate, its default parameters and abilities."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from coze_lab.core.models.errors import InvalidModelRegistry, ModelNotConfigured

PROVIDERS = frozenset({"openai-compatible"})
NO_KEY = "no-key"  # sent when a model declares no api_key_env (Ollama, vLLM, LM Studio, demo)


@dataclass(frozen=True)
class ModelCapabilities:
    """What a model can do; the client only sends what the model supports.

    Example:
        >>> ModelCapabilities(function_call=False).json_mode
        True
    """

    function_call: bool = True
    json_mode: bool = True
    image_understanding: bool = False
    input_tokens: int = 128_000
    output_tokens: int = 4_096

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class ModelPrices:
    """What a model costs, per one million input (prompt) and output (completion) tokens,
    in whatever currency the registry uses (USD by convention).

    Example:
        >>> ModelPrices(input=2.5, output=10).cost({"input_tokens": 1000, "output_tokens": 100})
        0.0035
    """

    input: float = 0.0
    output: float = 0.0

    def cost(self, usage: Mapping[str, Any]) -> float:
        """The cost of one call's token usage (``input_tokens``, ``output_tokens``)."""
        spent = int(usage.get("input_tokens", 0)) * self.input
        spent += int(usage.get("output_tokens", 0)) * self.output
        return round(spent / 1_000_000, 10)

    def to_dict(self) -> dict[str, Any]:
        return {"input": self.input, "output": self.output}


@dataclass(frozen=True)
class ModelSpec:
    """One configured model. The API key itself is never stored: only the env var's name.

    ``parameters`` are request defaults (``temperature``, ``max_tokens``, ``top_p``, ...)
    that call-time parameters override.

    Example:
        >>> spec = ModelSpec(id="local", name="Local", base_url="http://127.0.0.1:11434/v1",
        ...                  model="llama3.1", parameters={"temperature": 0.2})
        >>> (spec.provider, spec.api_key_env, spec.capabilities.function_call)
        ('openai-compatible', None, True)
    """

    id: str
    name: str
    base_url: str
    model: str
    provider: str = "openai-compatible"
    api_key_env: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    capabilities: ModelCapabilities = field(default_factory=ModelCapabilities)
    #: per one million tokens (None: unknown, runs report no cost for this model)
    prices: ModelPrices | None = None

    @property
    def where(self) -> str:
        """How error messages name this model: its id and endpoint, never a key.

        Example:
            >>> ModelSpec(id="m", name="m", base_url="http://x/v1", model="m").where
            "model 'm' at http://x/v1"
        """
        return f"model '{self.id}' at {self.base_url}"

    def api_key(self, environ: Mapping[str, str] | None = None) -> str:
        """The key to send: the value of ``api_key_env``, or a placeholder when none is declared.

        Raises :class:`ModelNotConfigured` when the declared variable is unset or empty.

        Example:
            >>> spec = ModelSpec(id="m", name="m", base_url="http://x/v1", model="m",
            ...                  api_key_env="MY_KEY")
            >>> spec.api_key({"MY_KEY": "sk-123"})
            'sk-123'
        """
        if not self.api_key_env:
            return NO_KEY
        env = os.environ if environ is None else environ
        value = env.get(self.api_key_env, "")
        if not value:
            raise ModelNotConfigured(
                f"model '{self.id}' reads its API key from the environment variable "
                f"{self.api_key_env}, which is not set; set it before starting the server"
            )
        return value

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (safe to show: it holds no secret).

        Example:
            >>> ModelSpec(id="m", name="M", base_url="http://x/v1", model="m").to_dict()["id"]
            'm'
        """
        return {
            "id": self.id,
            "name": self.name,
            "provider": self.provider,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "model": self.model,
            "parameters": dict(self.parameters),
            "capabilities": self.capabilities.to_dict(),
            "prices": None if self.prices is None else self.prices.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: object, where: str = "model") -> ModelSpec:
        """Validate one registry entry; errors name ``where`` and the offending field.

        Example:
            >>> ModelSpec.from_dict({"id": "m", "base_url": "http://x/v1", "model": "m"}).name
            'm'
        """
        entry = _mapping(data, where)
        _no_unknown_keys(entry, {f.name for f in fields(cls)}, where)
        model_id = _text(entry, "id", where)
        spec = cls(
            id=model_id,
            name=_text(entry, "name", where, default=model_id),
            base_url=_text(entry, "base_url", where).rstrip("/"),
            model=_text(entry, "model", where),
            provider=_text(entry, "provider", where, default="openai-compatible"),
            api_key_env=_optional_text(entry, "api_key_env", where),
            parameters=dict(_mapping(entry.get("parameters", {}), f"{where}.parameters")),
            capabilities=_capabilities(entry.get("capabilities", {}), f"{where}.capabilities"),
            prices=_prices(entry.get("prices"), f"{where}.prices"),
        )
        if spec.provider not in PROVIDERS:
            raise InvalidModelRegistry(
                f"{where}.provider: unsupported provider '{spec.provider}' "
                f"(supported: {', '.join(sorted(PROVIDERS))})"
            )
        if not spec.base_url.startswith(("http://", "https://")):
            raise InvalidModelRegistry(f"{where}.base_url: must start with http:// or https://")
        return spec


def _capabilities(data: object, where: str) -> ModelCapabilities:
    block = _mapping(data, where)
    known = {f.name: f for f in fields(ModelCapabilities)}
    _no_unknown_keys(block, set(known), where)
    values: dict[str, Any] = {}
    for name, value in block.items():
        expected = bool if name in {"function_call", "json_mode", "image_understanding"} else int
        if expected is int and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise InvalidModelRegistry(
                f"{where}.{name}: must be a non-negative integer, got {value!r}"
            )
        if expected is bool and not isinstance(value, bool):
            raise InvalidModelRegistry(f"{where}.{name}: must be true or false, got {value!r}")
        values[name] = value
    return ModelCapabilities(**values)


def _prices(data: object, where: str) -> ModelPrices | None:
    if data is None:
        return None
    block = _mapping(data, where)
    _no_unknown_keys(block, {"input", "output"}, where)
    values: dict[str, float] = {}
    for name, value in block.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise InvalidModelRegistry(
                f"{where}.{name}: must be a non-negative number (per 1M tokens), got {value!r}"
            )
        values[name] = float(value)
    return ModelPrices(**values)


def _mapping(data: object, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise InvalidModelRegistry(f"{where}: must be a mapping, got {type(data).__name__}")
    return data


def _no_unknown_keys(entry: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(str(key) for key in entry if key not in known)
    if unknown:
        raise InvalidModelRegistry(
            f"{where}: unknown field(s) {', '.join(unknown)} (allowed: {', '.join(sorted(known))})"
        )


def _text(entry: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = entry.get(key, default)
    if value is None:
        raise InvalidModelRegistry(f"{where}: '{key}' is required")
    if not isinstance(value, str) or not value.strip():
        raise InvalidModelRegistry(f"{where}.{key}: must be a non-empty string, got {value!r}")
    return value.strip()


def _optional_text(entry: Mapping[str, Any], key: str, where: str) -> str | None:
    if entry.get(key) is None:
        return None
    return _text(entry, key, where)
