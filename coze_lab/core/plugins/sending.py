"""Sending a built request (retry policy, SSRF guard) and reading the answer for a model."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from coze_lab.core.errors import CozeLabError
from coze_lab.core.net import OutboundPolicy, guarded_request
from coze_lab.core.plugins.request import HttpRequest

IDEMPOTENT = ("GET", "HEAD", "PUT", "DELETE", "OPTIONS")


@dataclass(frozen=True)
class RetryPolicy:
    """``retries`` after the first attempt, waiting ``backoff_s * 2**n`` in between."""

    timeout_s: float = 30.0
    retries: int = 2
    backoff_s: float = 0.2


async def send(
    policy: OutboundPolicy,
    request: HttpRequest,
    retry: RetryPolicy,
    sleep: Callable[[float], Awaitable[None]],
) -> tuple[httpx.Response, int]:
    """The response and the attempts it took. Connect failures are retried always (nothing
    was sent); 5xx, 429 and read timeouts only for idempotent methods. Refused addresses and
    oversized answers are never retried."""
    idempotent = request.method in IDEMPOTENT
    attempt = 0
    while True:
        attempt += 1
        last = attempt > retry.retries
        try:
            response = await guarded_request(
                policy,
                request.method,
                request.url,
                headers=request.headers,
                params=request.params,
                content=request.content,
                timeout=retry.timeout_s,
            )
        except (httpx.ConnectError, httpx.ConnectTimeout):
            if last:
                raise
        except httpx.TimeoutException:
            if last or not idempotent:
                raise
        else:
            again = response.status_code >= 500 or response.status_code == 429
            if not again or not idempotent or last:
                return response, attempt
        await sleep(retry.backoff_s * 2 ** (attempt - 1))


@dataclass(frozen=True)
class Answer:
    """A response as the model gets it: text (truncated), parsed JSON, and what is off."""

    ok: bool
    output: str
    data: Any
    error: str | None
    warning: str | None


def read_answer(response: httpx.Response, schemas: dict[str, Any], max_chars: int) -> Answer:
    """JSON is parsed and checked against the operation's schema for the status (a mismatch
    is a warning, not a failure); a non-2xx status is an error the model reads too.

    Example:
        >>> read_answer(httpx.Response(404, text="gone"), {}, 100).output
        'HTTP 404: gone'
    """
    text, data, warning = response.text, None, None
    if "json" in response.headers.get("content-type", ""):
        try:
            data = json.loads(text)
            text = json.dumps(data, ensure_ascii=False)
        except ValueError:
            warning = "the response is not valid JSON"
    ok = 200 <= response.status_code < 300
    schema = _schema_for(schemas, response.status_code)
    if ok and data is not None and schema:
        errors = list(_validator(schema).iter_errors(data))
        if errors:
            warning = f"the response does not match its schema: {errors[0].message}"
    output = truncate(text, max_chars)
    if ok:
        return Answer(True, output, data, None, warning)
    error = f"HTTP {response.status_code}"
    return Answer(False, f"{error}: {output}", None, error, warning)


def truncate(text: str, limit: int) -> str:
    """``text`` cut at ``limit`` characters, saying how much was left out.

    Example:
        >>> truncate("abcdef", 3)
        'abc…[truncated 3 characters]'
    """
    if len(text) <= limit:
        return text
    return text[:limit] + f"…[truncated {len(text) - limit} characters]"


def describe_failure(exc: BaseException) -> str:
    """A failed call in words for the model (no stack, no secrets)."""
    if isinstance(exc, CozeLabError):
        return exc.msg
    if isinstance(exc, httpx.TimeoutException):
        return "the plugin's server did not answer in time"
    if isinstance(exc, httpx.HTTPError):
        return f"the plugin's server is unreachable ({type(exc).__name__})"
    return str(exc)


def _schema_for(schemas: dict[str, Any], status: int) -> Any:
    return schemas.get(str(status)) or schemas.get(f"{str(status)[0]}XX") or schemas.get("default")


def _validator(schema: Any) -> Any:
    # jsonschema loads slowly (its format checkers build parsers at import): on first use
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)
