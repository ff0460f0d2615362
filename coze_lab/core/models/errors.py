"""Errors of the model layer: a model that is not configured, a bad registry file, a failed call.

All three are :class:`~coze_lab.core.errors.CozeLabError`, so the web layer reports them as
``{"code": ..., "msg": ...}`` like every other domain error. Messages never contain API keys.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from coze_lab.core.errors import CozeLabError

#: the docs page on models, as a path in the coze_lab repository (tests check it exists)
MODELS_DOC = "docs/guides/models.md"
CONFIGURE_HINT = (
    f"Configure models in a registry file (YAML or JSON, see {MODELS_DOC} in the coze_lab "
    "repository) or set OPENAI_API_KEY (and optionally OPENAI_BASE_URL, "
    "COZE_LAB_DEFAULT_MODEL) to get the 'default' model."
)
DEMO_MODEL_HINT = (
    "To try coze_lab without a provider, use the offline demo model (not an LLM: "
    "deterministic '[demo model]' replies): `make lab` starts it when no model is configured; "
    "elsewhere run `python -m coze_lab.testing.model_server --port 8799` and start the server "
    "with OPENAI_BASE_URL=http://127.0.0.1:8799/v1 COZE_LAB_DEFAULT_MODEL=coze-lab-demo."
)
#: what every "no model at all" error says
NO_MODEL_CONFIGURED = f"no model is configured. {CONFIGURE_HINT} {DEMO_MODEL_HINT}"

MODEL_ERROR_KINDS = ("connection", "timeout", "status", "protocol")

_KEY_LIKE = re.compile(r"\b(sk|pat|key)[-_][A-Za-z0-9_\-*]{8,}")
_BEARER = re.compile(r"(?i)bearer\s+\S+")
MAX_MESSAGE_CHARS = 500


class ModelNotConfigured(CozeLabError):
    """The requested model id is unknown, or its API key variable is not set.

    Example:
        >>> err = ModelNotConfigured("model 'gpt-x' is not configured")
        >>> (err.code, err.status)
        (4012, 400)
    """

    code, status = 4012, 400  # Coze's 'invalid model'


class InvalidModelRegistry(CozeLabError):
    """A registry file that cannot be read; the message names the file and the bad field.

    Example:
        >>> InvalidModelRegistry("models.yaml: models[0]: 'base_url' is required").code
        4051
    """

    code, status = 4051, 400


class ModelError(CozeLabError):
    """A model provider call failed: connection, timeout, HTTP error status or bad response.

    ``kind`` is one of :data:`MODEL_ERROR_KINDS`; ``provider_status`` is the provider's HTTP
    status when it answered with an error (``None`` otherwise). ``status`` is what *our*
    API answers: 504 for timeouts, 502 for everything else. A provider's rate limit (429)
    is Coze's 4013, which the SDKs read as a rate limit (the JavaScript SDK's
    RateLimitError); every other failure is 5020.

    Example:
        >>> err = ModelError("model provider answered HTTP 500: down", kind="status",
        ...                  provider_status=500)
        >>> (err.code, err.status, err.kind, err.provider_status)
        (5020, 502, 'status', 500)
        >>> ModelError("HTTP 429: slow down", kind="status", provider_status=429).code
        4013
    """

    code, status = 5020, 502

    def __init__(self, msg: str, *, kind: str, provider_status: int | None = None) -> None:
        super().__init__(msg)
        self.kind = kind
        self.provider_status = provider_status
        if kind == "timeout":
            self.status = 504
        if provider_status == 429:
            self.code = 4013


def redact(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """Remove API keys (the given ones and anything key-shaped) and cap the length.

    Example:
        >>> redact("Incorrect API key provided: sk-abcdefghijkl", ("sk-abcdefghijkl",))
        'Incorrect API key provided: ***'
    """
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = _BEARER.sub("Bearer ***", text)
    text = _KEY_LIKE.sub("***", text)
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 1] + "…"
    return text


def provider_message(body: object, fallback: str) -> str:
    """The human part of a provider's error body (OpenAI's ``{"error": {"message"}}``, a
    bare ``{"message"}``, or text/HTML cut to 200 characters); ``fallback`` otherwise.

    Example:
        >>> provider_message({"error": {"message": "slow down"}}, "HTTP 429")
        'slow down'
        >>> provider_message("<html><h1>Bad gateway</h1></html>", "HTTP 502")
        'Bad gateway'
    """
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str) and body.strip():
        text = " ".join(re.sub(r"<[^>]*>", " ", body).split())
        return text[:200] or fallback
    return fallback


def status_error(
    where: str, status: int, body: object, fallback: str, secrets: tuple[str | None, ...]
) -> ModelError:
    """The :class:`ModelError` for a provider that answered an HTTP error status.

    Example:
        >>> status_error("model 'm'", 429, {"error": {"message": "slow down"}}, "", ()).msg
        "model 'm' answered HTTP 429: slow down"
    """
    detail = redact(provider_message(body, fallback), secrets)
    return ModelError(
        f"{where} answered HTTP {status}: {detail}", kind="status", provider_status=status
    )


def timeout_error(where: str) -> ModelError:
    """The :class:`ModelError` for a provider that did not answer in time."""
    return ModelError(f"{where} did not answer in time", kind="timeout")


def connection_error(
    where: str, cause: BaseException, secrets: tuple[str | None, ...]
) -> ModelError:
    """The :class:`ModelError` for a connection that failed (refused, reset, closed early)."""
    return ModelError(
        redact(f"cannot connect to {where}: {type(cause).__name__}: {cause}", secrets),
        kind="connection",
    )
