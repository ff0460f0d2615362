"""A tool's arguments placed into an HTTP request: path, query, header, cookie, body."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from coze_lab.core.plugins.document import FORM_TYPE, ToolSpec

REDACTED = "***"


@dataclass
class HttpRequest:
    """What will be sent; ``secret_*`` name the parts that must never be recorded."""

    method: str
    url: str
    params: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes | None = None
    secret_params: set[str] = field(default_factory=set)
    secret_headers: set[str] = field(default_factory=set)

    def summary(self) -> dict[str, Any]:
        """The request for a trace: credentials replaced by ``***``, the body's size only.

        Example:
            >>> r = HttpRequest("GET", "http://x/a", {"q": "1"}, {"Authorization": "Bearer k"},
            ...                 secret_headers={"Authorization"})
            >>> r.summary()["headers"]
            {'Authorization': '***'}
        """
        secret_headers = {h.lower() for h in self.secret_headers}
        return {
            "method": self.method,
            "url": self.url,
            "query": {
                k: REDACTED if k in self.secret_params else v for k, v in self.params.items()
            },
            "headers": {
                k: REDACTED if k.lower() in secret_headers or k.lower() == "cookie" else v
                for k, v in self.headers.items()
            },
            "body_bytes": len(self.content or b""),
        }


def build_request(
    tool: ToolSpec,
    base_url: str,
    arguments: dict[str, Any],
    common_params: dict[str, list[dict[str, str]]] | None = None,
) -> HttpRequest:
    """The request for ``tool`` called with (validated) ``arguments``.

    Example:
        >>> tool = ToolSpec("get_pet", "", "GET", "/pets/{id}", {}, {
        ...     "id": {"in": "path", "name": "id"}, "full": {"in": "query", "name": "full"}})
        >>> r = build_request(tool, "https://api.example.com/v1", {"id": "a b", "full": True})
        >>> (r.url, r.params)
        ('https://api.example.com/v1/pets/a%20b', {'full': 'true'})
    """
    path = tool.path
    request = HttpRequest(tool.method, "")
    cookies: list[str] = []
    body: dict[str, Any] = {}
    for location in ("header", "query"):
        for item in (common_params or {}).get(location, []):
            target = request.headers if location == "header" else request.params
            target[item["name"]] = item["value"]
    for arg, value in arguments.items():
        binding = tool.bindings.get(arg)
        if binding is None or value is None:
            continue
        where, name = binding["in"], binding["name"]
        if where == "path":
            path = path.replace("{" + name + "}", quote(_text(value), safe=""))
        elif where == "query":
            if isinstance(value, dict):
                request.params.update({k: _text(v) for k, v in value.items()})
            else:
                request.params[name] = (
                    [_text(v) for v in value] if isinstance(value, list) else _text(value)
                )
        elif where == "header":
            request.headers[name] = _text(value)
        elif where == "cookie":
            cookies.append(f"{name}={quote(_text(value), safe='')}")
        elif where == "body":
            body[name] = value
    if cookies:
        request.headers["Cookie"] = "; ".join(cookies)
    request.url = base_url.rstrip("/") + "/" + path.lstrip("/")
    if tool.body is not None and body:
        payload = body.get("body") if tool.body["whole"] else body
        if tool.body["content_type"] == FORM_TYPE:
            request.content = urlencode(
                {
                    k: _text(v) if not isinstance(v, list) else [_text(i) for i in v]
                    for k, v in (payload or {}).items()
                },
                doseq=True,
            ).encode()
        else:
            request.content = json.dumps(payload, ensure_ascii=False).encode()
        request.headers["Content-Type"] = tool.body["content_type"]
    return request


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
