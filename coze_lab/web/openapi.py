"""The OpenAPI 3.1 document served at ``openapi.json``, built from one table of operations."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from coze_lab._version import __version__


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    tag: str
    data: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    query: tuple[tuple[str, str, bool], ...] = ()
    body: dict[str, Any] | None = None
    multipart: bool = False
    scope: str | None = None
    public: bool = False


_ID = {"type": "string", "pattern": "^[0-9]+$"}
_FILE = {
    "type": "object",
    "properties": {
        "id": _ID,
        "bytes": {"type": "integer"},
        "created_at": {"type": "integer"},
        "file_name": {"type": "string"},
        "content_type": {"type": "string"},
    },
    "required": ["id", "bytes", "created_at", "file_name"],
}
_WORKSPACE = {
    "type": "object",
    "properties": {
        "id": _ID,
        "name": {"type": "string"},
        "icon_url": {"type": "string"},
        "role_type": {"enum": ["owner", "admin", "member"]},
        "workspace_type": {"enum": ["personal", "team"]},
        "enterprise_id": {"type": "string"},
    },
}
_TOKEN = {
    "type": "object",
    "properties": {
        "id": _ID,
        "name": {"type": "string"},
        "hint": {"type": "string"},
        "scopes": {
            "type": ["array", "null"],
            "items": {"enum": ["chat", "workflow", "files", "bots"]},
        },
        "connector_id": {"type": ["string", "null"]},
        "created_at": {"type": "integer"},
        "expires_at": {"type": ["integer", "null"]},
        "last_used_at": {"type": ["integer", "null"]},
        "revoked_at": {"type": ["integer", "null"]},
        "status": {"enum": ["active", "expired", "revoked"]},
        "token": {"type": "string", "description": "only in the response that creates it"},
    },
}
_USER = {
    "type": "object",
    "properties": {
        "id": _ID,
        "name": {"type": "string"},
        "workspace_id": _ID,
        "created_at": {"type": "integer"},
    },
}

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "post",
        "/v1/files/upload",
        "Upload a file (multipart field `file`)",
        "files",
        data=_FILE,
        multipart=True,
        scope="files",
    ),
    Operation(
        "get",
        "/v1/files/retrieve",
        "Describe an uploaded file",
        "files",
        data=_FILE,
        query=(("file_id", "string", True),),
        scope="files",
    ),
    Operation(
        "get",
        "/v1/workspaces",
        "The caller's workspaces (space_id)",
        "workspaces",
        data={
            "type": "object",
            "properties": {
                "workspaces": {"type": "array", "items": _WORKSPACE},
                "total_count": {"type": "integer"},
            },
        },
        query=(("page_num", "integer", False), ("page_size", "integer", False)),
    ),
    Operation(
        "get", "/coze_lab/api/health", "Version, user, database and sandbox health", "studio"
    ),
    Operation("get", "/coze_lab/api/me", "The current user", "studio", data=_USER),
    Operation(
        "get",
        "/coze_lab/api/tokens",
        "List personal access tokens",
        "studio",
        data={"type": "object", "properties": {"tokens": {"type": "array", "items": _TOKEN}}},
    ),
    Operation(
        "post",
        "/coze_lab/api/tokens",
        "Create a personal access token",
        "studio",
        data=_TOKEN,
        body={
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "maxLength": 100},
                "expires_in_days": {"type": ["integer", "null"], "minimum": 1, "maximum": 3650},
                "scopes": {
                    "type": "array",
                    "items": {"enum": ["chat", "workflow", "files", "bots"]},
                },
                "connector_id": {"enum": ["1024", "999", None]},
            },
        },
    ),
    Operation(
        "delete",
        "/coze_lab/api/tokens/{token_id}",
        "Revoke a personal access token",
        "studio",
        data=_TOKEN,
    ),
    Operation("get", "/coze_lab/openapi.json", "This document", "meta", public=True),
)


def _operation(op: Operation) -> dict[str, Any]:
    envelope = {
        "type": "object",
        "properties": {"code": {"const": 0}, "msg": {"type": "string"}, "data": op.data},
        "required": ["code", "msg"],
    }
    spec: dict[str, Any] = {
        "summary": op.summary,
        "tags": [op.tag],
        "operationId": op.method + "_" + re.sub(r"[^a-z0-9]+", "_", op.path.lower()).strip("_"),
        "responses": {
            "200": {
                "description": "success",
                "content": {"application/json": {"schema": envelope}},
            },
            "4XX": {"$ref": "#/components/responses/Error"},
        },
    }
    params = [
        {"name": name, "in": "query", "required": required, "schema": {"type": kind}}
        for name, kind, required in op.query
    ]
    params += [
        {"name": part[1:-1], "in": "path", "required": True, "schema": _ID}
        for part in op.path.split("/")
        if part.startswith("{")
    ]
    if params:
        spec["parameters"] = params
    if op.body is not None:
        spec["requestBody"] = {
            "required": True,
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
    if op.public:
        spec["security"] = []
    elif op.scope:
        spec["description"] = f"Needs a token with the `{op.scope}` scope (or no scopes)."
    return spec


def document() -> dict[str, Any]:
    """The OpenAPI document of every coze_lab endpoint."""
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _operation(op)
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
            "responses": {
                "Error": {
                    "description": "Coze-style error",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "code": {"type": "integer"},
                                    "msg": {"type": "string"},
                                },
                                "required": ["code", "msg"],
                            }
                        }
                    },
                }
            },
        },
    }
