"""The OpenAPI 3.1 document (``openapi.json``), generated from the route table."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from coze_lab._version import __version__
from coze_lab.web.schemas import ID, OPTIONAL_ID_PATTERN

if TYPE_CHECKING:
    from coze_lab.web.routes import Op, Route

_ERROR = {
    "type": "object",
    "properties": {"code": {"type": "integer"}, "msg": {"type": "string"}},
    "required": ["code", "msg"],
}


def document(routes: Iterable[Route]) -> dict[str, Any]:
    """The OpenAPI document of every operation of ``routes``.

    Example:
        >>> from coze_lab.web.routes import ROUTES
        >>> doc = document(ROUTES)
        >>> doc["paths"]["/v1/files/retrieve"]["get"]["summary"]
        'Describe an uploaded file'
    """
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        for op in route.ops:
            paths.setdefault(route.path, {})[op.method] = _operation(route, op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "coze_lab",
            "version": __version__,
            "description": "Coze-compatible OpenAPI (`/v1`, `/v3`, personal access tokens) and the "
            "coze_lab studio API. Inside Jupyter every path is under `<base_url>coze_lab/`.",
        },
        "security": [{"personalAccessToken": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"personalAccessToken": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": _ERROR},
            "responses": {
                "Error": {
                    "description": "Coze-style error",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                }
            },
        },
    }


def _operation(route: Route, op: Op) -> dict[str, Any]:
    success: dict[str, Any]
    if op.stream:
        success = {
            "description": "server-sent events; a failure before the first event is the "
            "Coze error body `{code, msg}` as JSON with status 200, as on Coze",
            "content": {
                "text/event-stream": {"schema": {"type": "string"}},
                "application/json": {"schema": {"$ref": "#/components/schemas/Error"}},
            },
        }
    elif op.raw:
        success = {"description": "success", "content": {op.content: {"schema": op.data}}}
    else:
        data = op.data
        if op.method == "delete" and data == {"type": "object"}:
            data = {"type": ["object", "null"]}  # a deletion answers with no data
        envelope = {
            "type": "object",
            "properties": {"code": {"const": 0}, "msg": {"type": "string"}, "data": data},
            "required": ["code", "msg"],
        }
        if op.stream_when_asked:
            success = {
                "description": "the chat (JSON), or server-sent events when the body says "
                '`"stream": true`; then a failure before the first event is the Coze error body '
                "`{code, msg}` as JSON with status 200, as on Coze",
                "content": {
                    "application/json": {
                        "schema": {"anyOf": [envelope, {"$ref": "#/components/schemas/Error"}]}
                    },
                    "text/event-stream": {"schema": {"type": "string"}},
                },
            }
        else:
            success = {
                "description": "success",
                "content": {"application/json": {"schema": envelope}},
            }
    spec: dict[str, Any] = {
        "summary": op.summary,
        "tags": [op.tag],
        "operationId": op.method + "_" + re.sub(r"[^a-z0-9]+", "_", route.path.lower()).strip("_"),
        "responses": {str(op.status): success, "4XX": {"$ref": "#/components/responses/Error"}},
    }
    params = [
        {
            "name": name,
            "in": "query",
            "required": required,
            "schema": _query_schema(name, kind, required),
        }
        for name, kind, required in op.query
    ]
    params += [
        {"name": part[1:-1], "in": "path", "required": True, "schema": _path_schema(part[1:-1])}
        for part in route.path.split("/")
        if part.startswith("{")
    ]
    if params:
        spec["parameters"] = params
    if op.body is not None:
        spec["requestBody"] = {
            "required": op.body_required,
            "content": {"application/json": {"schema": op.body}},
        }
    if op.multipart:
        spec["requestBody"] = {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {"file": {"type": "string", "format": "binary"}},
                        "required": ["file"],
                    }
                }
            },
        }
    if route.public:
        spec["security"] = []
    elif route.scope:
        spec["description"] = f"Needs a token with the `{route.scope}` scope (or no scopes)."
    return spec


#: path parameters that are names, not ids
_NAMED = {
    "asset": {"type": "string"},
    "node_execute_uuid": {"type": "string", "minLength": 1},
    "connector_id": {"enum": ["1024", "999"]},  # the API and the Web SDK
    "skill": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]{0,63}$"},  # memory skills
}


def _path_schema(name: str) -> dict[str, Any]:
    return _NAMED.get(name, ID)


def _query_schema(name: str, kind: str | dict[str, Any], required: bool) -> dict[str, Any]:
    """Ids in the query are Coze ids (an optional one may be empty: read as absent); a
    ``connector_id`` filter is any text (an unknown connector matches nothing); a schema
    given in the route table is used as it is."""
    if isinstance(kind, dict):
        return kind
    if kind == "string" and name.endswith("_id") and name != "connector_id":
        return ID if required else {"type": "string", "pattern": OPTIONAL_ID_PATTERN}
    return {"type": kind}
