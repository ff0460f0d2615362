"""The model registry: models from a YAML/JSON file plus a ``default`` model from env vars."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from coze_lab.core.models.errors import (
    CONFIGURE_HINT,
    NO_MODEL_CONFIGURED,
    InvalidModelRegistry,
    ModelNotConfigured,
)
from coze_lab.core.models.spec import ModelCapabilities, ModelSpec

DEFAULT_ID = "default"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_MODEL = "COZE_LAB_DEFAULT_MODEL"
ENV_REGISTRY_FILE = "COZE_LAB_MODELS_FILE"


class ModelRegistry:
    """The models a deployment offers, by id.

    Example:
        >>> spec = ModelSpec(id="local", name="Local", base_url="http://127.0.0.1:9/v1",
        ...                  model="llama3.1")
        >>> registry = ModelRegistry([spec])
        >>> registry.get("local").model, [m.id for m in registry.list()]
        ('llama3.1', ['local'])
    """

    def __init__(self, specs: Iterable[ModelSpec] = (), default_id: str | None = None) -> None:
        self._specs: dict[str, ModelSpec] = {}
        for spec in specs:
            if spec.id in self._specs:
                raise InvalidModelRegistry(f"duplicate model id '{spec.id}'")
            self._specs[spec.id] = spec
        if default_id is not None and default_id not in self._specs:
            raise InvalidModelRegistry(f"default model '{default_id}' is not among the models")
        self._default_id = default_id

    @classmethod
    def load(
        cls, path: str | Path | None = None, environ: Mapping[str, str] | None = None
    ) -> ModelRegistry:
        """Models from ``path`` (or ``$COZE_LAB_MODELS_FILE``) plus the env ``default`` model.

        The env model is added when ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` or
        ``COZE_LAB_DEFAULT_MODEL`` is set and the file does not define the id ``default``.

        Example:
            >>> registry = ModelRegistry.load(environ={"OPENAI_API_KEY": "sk-x"})
            >>> registry.get("default").base_url
            'https://api.openai.com/v1'
        """
        env = os.environ if environ is None else environ
        path = path or env.get(ENV_REGISTRY_FILE) or None
        specs, default_id = read_registry_file(path) if path else ([], None)
        env_spec = default_from_env(env)
        if env_spec is not None and all(spec.id != env_spec.id for spec in specs):
            specs.append(env_spec)
        return cls(specs, default_id)

    def get(self, model_id: str) -> ModelSpec:
        """The model with this id, or :class:`ModelNotConfigured` saying how to add one.

        Example:
            >>> ModelRegistry().get("gpt-x")
            Traceback (most recent call last):
            ...
            coze_lab.core.models.errors.ModelNotConfigured: model 'gpt-x' is not configured ...
        """
        spec = self._specs.get(model_id)
        if spec is None:
            known = ", ".join(sorted(self._specs)) or "none"
            raise ModelNotConfigured(
                f"model '{model_id}' is not configured (configured: {known}). {CONFIGURE_HINT}"
            )
        return spec

    def list(self) -> list[ModelSpec]:
        """All models, in file order (the env ``default`` model last)."""
        return list(self._specs.values())

    def __contains__(self, model_id: object) -> bool:
        return model_id in self._specs

    def __len__(self) -> int:
        return len(self._specs)

    @property
    def default_id(self) -> str | None:
        """The file's ``default:``, else ``default`` if present, else the first model."""
        if self._default_id is not None:
            return self._default_id
        if DEFAULT_ID in self._specs:
            return DEFAULT_ID
        return next(iter(self._specs), None)

    def resolve(self, model_id: str) -> ModelSpec:
        """The model a bot or node that names ``model_id`` runs on: the one rule for
        ``"default"`` (or nothing): the model of that id if the registry has one, else the
        registry's default model.

        Example:
            >>> local = ModelSpec(id="local", name="Local", base_url="http://127.0.0.1:9/v1",
            ...                   model="llama3.1")
            >>> registry = ModelRegistry([local])
            >>> registry.resolve("").id, registry.resolve("default").id
            ('local', 'local')
        """
        if model_id in ("", DEFAULT_ID) and DEFAULT_ID not in self._specs:
            return self.default()
        return self.get(model_id)

    def default(self) -> ModelSpec:
        """The model to use when a bot or node names none.

        Example:
            >>> ModelRegistry.load(environ={"COZE_LAB_DEFAULT_MODEL": "qwen2.5"}).default().model
            'qwen2.5'
        """
        model_id = self.default_id
        if model_id is None:
            raise ModelNotConfigured(NO_MODEL_CONFIGURED)
        return self._specs[model_id]


def default_from_env(environ: Mapping[str, str]) -> ModelSpec | None:
    """The ``default`` model described by ``OPENAI_*`` / ``COZE_LAB_DEFAULT_MODEL``, if any.

    Example:
        >>> default_from_env({}) is None
        True
        >>> default_from_env({"OPENAI_API_KEY": "sk-x"}).api_key_env
        'OPENAI_API_KEY'
        >>> default_from_env({"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}).api_key_env is None
        True
    """
    if not any(environ.get(name) for name in (ENV_BASE_URL, ENV_API_KEY, ENV_MODEL)):
        return None
    model = environ.get(ENV_MODEL) or DEFAULT_MODEL
    base_url = (environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL).rstrip("/")
    return ModelSpec(
        id=DEFAULT_ID,
        name=f"{model} (from environment)",
        base_url=base_url,
        model=model,
        api_key_env=ENV_API_KEY if environ.get(ENV_API_KEY) else None,
        capabilities=ModelCapabilities(),
    )


def read_registry_file(path: str | Path) -> tuple[list[ModelSpec], str | None]:
    """Parse a registry file: ``{"models": [...], "default": "id"}`` or a bare list of models.

    ``.yaml``/``.yml`` files need PyYAML; anything else is read as JSON. Every problem is an
    :class:`InvalidModelRegistry` that names the file and the field.

    Example:
        >>> import json, tempfile
        >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        ...     json.dump([{"id": "m", "base_url": "http://x/v1", "model": "m"}], f)
        >>> [spec.id for spec in read_registry_file(f.name)[0]]
        ['m']
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidModelRegistry(
            f"cannot read model registry {path}: {exc.strerror or exc}"
        ) from exc
    data = _parse(text, path)
    models: Any = data
    default_id: Any = None
    if isinstance(data, Mapping):
        unknown = sorted(str(key) for key in data if key not in {"models", "default"})
        if unknown:
            raise InvalidModelRegistry(
                f"{path}: unknown top-level field(s) {', '.join(unknown)} "
                "(allowed: models, default)"
            )
        models, default_id = data.get("models"), data.get("default")
    if not isinstance(models, list):
        raise InvalidModelRegistry(
            f"{path}: expected a list of models or a mapping with a 'models' list"
        )
    if default_id is not None and not isinstance(default_id, str):
        raise InvalidModelRegistry(f"{path}: 'default' must be a model id string")
    specs = [ModelSpec.from_dict(entry, f"{path}: models[{i}]") for i, entry in enumerate(models)]
    seen: set[str] = set()
    for spec in specs:
        if spec.id in seen:
            raise InvalidModelRegistry(f"{path}: duplicate model id '{spec.id}'")
        seen.add(spec.id)
    if default_id is not None and default_id not in seen:
        raise InvalidModelRegistry(f"{path}: default model '{default_id}' is not among the models")
    return specs, default_id


def _parse(text: str, path: Path) -> Any:
    if path.suffix.lower() in {".yaml", ".yml"}:
        try:
            import yaml
        except ImportError as exc:  # pragma: no cover - PyYAML ships with jupyter_server
            raise InvalidModelRegistry(
                f"{path}: reading YAML needs PyYAML (pip install pyyaml); or use a .json file"
            ) from exc
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InvalidModelRegistry(f"{path}: invalid YAML: {exc}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidModelRegistry(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
