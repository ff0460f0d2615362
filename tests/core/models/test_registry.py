"""ModelRegistry: files (YAML, JSON), env defaults, clear errors — and a file model in use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coze_lab.core.models import (
    InvalidModelRegistry,
    ModelClient,
    ModelNotConfigured,
    ModelRegistry,
)
from coze_lab.testing import ModelServer

YAML = """
default: local
models:
  - id: local
    name: Local demo
    base_url: {url}
    model: coze-lab-demo
    parameters: {{temperature: 0.1, max_tokens: 64}}
    capabilities:
      function_call: false
      json_mode: true
      image_understanding: false
      input_tokens: 8192
      output_tokens: 1024
  - id: gpt
    base_url: https://api.openai.com/v1/
    api_key_env: OPENAI_API_KEY
    model: gpt-4o-mini
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_file(tmp_path: Path) -> None:
    path = write(tmp_path, "models.yaml", YAML.format(url="http://127.0.0.1:9/v1"))
    registry = ModelRegistry.load(path, environ={})
    assert [m.id for m in registry.list()] == ["local", "gpt"]
    local = registry.get("local")
    assert local.name == "Local demo"
    assert local.parameters == {"temperature": 0.1, "max_tokens": 64}
    assert local.capabilities.function_call is False
    assert local.capabilities.input_tokens == 8192
    assert local.api_key_env is None
    gpt = registry.get("gpt")
    assert gpt.name == "gpt"
    assert gpt.base_url == "https://api.openai.com/v1"
    assert gpt.capabilities.function_call is True
    assert registry.default().id == "local"
    assert "local" in registry and len(registry) == 2


def test_json_file_as_a_bare_list(tmp_path: Path) -> None:
    models = [{"id": "a", "base_url": "http://127.0.0.1:9/v1", "model": "m"}]
    path = write(tmp_path, "models.json", json.dumps(models))
    registry = ModelRegistry.load(path, environ={})
    assert [m.to_dict()["id"] for m in registry.list()] == ["a"]
    assert registry.default().id == "a"


def test_file_from_env_variable(tmp_path: Path) -> None:
    path = write(tmp_path, "models.yml", YAML.format(url="http://127.0.0.1:9/v1"))
    registry = ModelRegistry.load(environ={"COZE_LAB_MODELS_FILE": str(path)})
    assert [m.id for m in registry.list()] == ["local", "gpt"]


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("m.yaml", "models: [\n  - id: x\n   bad", "invalid YAML"),
        ("m.json", '{"models": [', "invalid JSON at line 1"),
        ("m.json", '{"modles": []}', "unknown top-level field(s) modles"),
        ("m.json", '{"models": {"id": "x"}}', "expected a list of models"),
        ("m.json", '[{"id": "x", "model": "m"}]', "models[0]: 'base_url' is required"),
        ("m.json", '[{"id": "x", "model": "m", "base_url": "ftp://x"}]', "models[0].base_url"),
        (
            "m.json",
            '[{"id": "x", "model": "m", "base_url": "http://x", "capabilites": {}}]',
            "models[0]: unknown field(s) capabilites",
        ),
        (
            "m.json",
            '[{"id": "x", "model": "m", "base_url": "http://x", '
            '"capabilities": {"function_call": "yes"}}]',
            "models[0].capabilities.function_call: must be true or false, got 'yes'",
        ),
        (
            "m.json",
            '[{"id": "x", "model": "m", "base_url": "http://x", '
            '"capabilities": {"input_tokens": -1}}]',
            "capabilities.input_tokens: must be a non-negative integer",
        ),
        (
            "m.json",
            '[{"id": "x", "model": "m", "base_url": "http://x", "provider": "anthropic"}]',
            "unsupported provider 'anthropic'",
        ),
        (
            "m.json",
            '[{"id": "x", "model": "m", "base_url": "http://x"},'
            ' {"id": "x", "model": "n", "base_url": "http://y"}]',
            "duplicate model id 'x'",
        ),
        (
            "m.json",
            '{"default": "nope", "models": [{"id": "x", "model": "m", "base_url": "http://x"}]}',
            "default model 'nope' is not among the models",
        ),
        ("m.json", '[{"id": 3, "model": "m", "base_url": "http://x"}]', "models[0].id"),
    ],
)
def test_bad_files_name_the_problem(tmp_path: Path, name: str, text: str, problem: str) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(InvalidModelRegistry) as caught:
        ModelRegistry.load(path, environ={})
    assert problem in caught.value.msg
    assert str(path) in caught.value.msg
    assert (caught.value.code, caught.value.status) == (4051, 400)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidModelRegistry, match="cannot read model registry"):
        ModelRegistry.load(tmp_path / "absent.yaml", environ={})


def test_unknown_model_says_how_to_configure(tmp_path: Path) -> None:
    registry = ModelRegistry.load(environ={})
    assert registry.list() == []
    with pytest.raises(ModelNotConfigured) as caught:
        registry.get("gpt-5")
    err = caught.value
    assert (err.code, err.status) == (4012, 400)
    assert "model 'gpt-5' is not configured (configured: none)" in err.msg
    assert "OPENAI_API_KEY" in err.msg and "registry file" in err.msg
    assert "docs/guides/models.md" in err.msg  # a page that exists (tests/test_docs.py)
    with pytest.raises(ModelNotConfigured, match="no model is configured") as caught:
        registry.default()
    # with nothing configured, the way to try it offline: the demo model, and how to start it
    assert "demo model" in caught.value.msg
    assert "python -m coze_lab.testing.model_server" in caught.value.msg
    assert "COZE_LAB_DEFAULT_MODEL=coze-lab-demo" in caught.value.msg


def test_default_model_from_env() -> None:
    env = {
        "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1/",
        "OPENAI_API_KEY": "sk-env-key-123456789",
        "COZE_LAB_DEFAULT_MODEL": "qwen2.5",
    }
    registry = ModelRegistry.load(environ=env)
    spec = registry.get("default")
    assert spec.base_url == "http://127.0.0.1:11434/v1"
    assert spec.model == "qwen2.5"
    assert spec.api_key_env == "OPENAI_API_KEY"
    assert spec.api_key(env) == "sk-env-key-123456789"
    assert "sk-env" not in json.dumps(spec.to_dict())
    assert registry.default() is spec

    only_key = ModelRegistry.load(environ={"OPENAI_API_KEY": "k"}).get("default")
    assert (only_key.base_url, only_key.model) == ("https://api.openai.com/v1", "gpt-4o-mini")
    only_url = ModelRegistry.load(environ={"OPENAI_BASE_URL": "http://h/v1"}).get("default")
    assert only_url.api_key_env is None


def test_file_default_wins_over_env(tmp_path: Path) -> None:
    path = write(tmp_path, "m.yaml", YAML.format(url="http://127.0.0.1:9/v1"))
    registry = ModelRegistry.load(path, environ={"OPENAI_API_KEY": "k"})
    assert [m.id for m in registry.list()] == ["local", "gpt", "default"]
    assert registry.default().id == "local"


@pytest.mark.asyncio
async def test_env_default_model_talks_to_the_server() -> None:
    with ModelServer(api_key="sk-local-0123456789") as srv:
        env = {"OPENAI_BASE_URL": srv.url, "OPENAI_API_KEY": "sk-local-0123456789"}
        spec = ModelRegistry.load(environ=env).default()
        async with ModelClient(max_retries=0, environ=env) as client:
            done = await client.complete(spec, [{"role": "user", "content": "hello"}])
    assert done.content == "[demo model] You said: hello"
    assert srv.requests[0]["model"] == "gpt-4o-mini"


@pytest.mark.asyncio
async def test_file_model_parameters_and_capabilities_reach_the_server(tmp_path: Path) -> None:
    with ModelServer() as srv:
        path = write(tmp_path, "models.yaml", YAML.format(url=srv.url))
        spec = ModelRegistry.load(path, environ={}).get("local")
        tool = {"type": "function", "function": {"name": "f", "parameters": {}}}
        async with ModelClient(max_retries=0) as client:
            await client.complete(spec, [{"role": "user", "content": "hi"}], tools=[tool])
    body = srv.requests[0]
    assert (body["temperature"], body["max_tokens"]) == (0.1, 64)
    assert "tools" not in body  # function_call: false in the file
