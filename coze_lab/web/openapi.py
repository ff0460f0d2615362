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
    stream: bool = False


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
_RUN_BODY = {
    "type": "object",
    "required": ["workflow_id"],
    "properties": {
        "workflow_id": _ID,
        "parameters": {"type": ["object", "string"]},
        "is_async": {"type": "boolean"},
        "bot_id": {"type": "string"},
        "ext": {"type": "object"},
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
    Operation(
        "post",
        "/v1/workflow/run",
        "Run the published workflow; waits for the outputs unless is_async",
        "workflow",
        data={"type": "string", "description": "the end node's outputs as JSON text"},
        body=_RUN_BODY,
        scope="workflow",
    ),
    Operation(
        "post",
        "/v1/workflow/stream_run",
        "Run and stream events (SSE: Message, Interrupt, Error, Done)",
        "workflow",
        body=_RUN_BODY,
        scope="workflow",
        stream=True,
    ),
    Operation(
        "post",
        "/v1/workflow/stream_resume",
        "Answer an interrupt and stream on",
        "workflow",
        body={
            "type": "object",
            "required": ["workflow_id", "event_id"],
            "properties": {
                "workflow_id": _ID,
                "event_id": _ID,
                "resume_data": {},
                "interrupt_type": {"type": "integer"},
            },
        },
        scope="workflow",
        stream=True,
    ),
    Operation(
        "get",
        "/v1/workflows/{workflow_id}/run_histories/{execute_id}",
        "A run's status, outputs and node states",
        "workflow",
        data={"type": "array", "items": {"type": "object"}},
        scope="workflow",
    ),
    Operation(
        "get",
        "/v1/workflows/{workflow_id}/run_histories/{execute_id}/execute_nodes/{node_execute_uuid}",
        "One node's output in a run",
        "workflow",
        data={"type": "array", "items": {"type": "object"}},
        scope="workflow",
    ),
    Operation("get", "/coze_lab/api/workflows", "Your workflows", "studio"),
    Operation(
        "post",
        "/coze_lab/api/workflows",
        "Save a definition as the draft (upsert by name); publish=true also publishes",
        "studio",
        body={"type": "object"},
    ),
    Operation("get", "/coze_lab/api/workflows/{workflow_id}", "A workflow and its draft", "studio"),
    Operation("delete", "/coze_lab/api/workflows/{workflow_id}", "Delete a workflow", "studio"),
    Operation(
        "post",
        "/coze_lab/api/workflows/{workflow_id}/publish",
        "Publish the draft as the next version",
        "studio",
    ),
    Operation(
        "post",
        "/coze_lab/api/workflows/{workflow_id}/runs",
        "Run the draft",
        "studio",
        body={"type": "object", "properties": {"parameters": {"type": "object"}}},
    ),
    Operation(
        "get",
        "/coze_lab/api/runs",
        "Your runs, newest first",
        "studio",
        query=(("workflow_id", "string", False), ("limit", "integer", False)),
    ),
    Operation("get", "/coze_lab/api/runs/{run_id}", "A run's trace: every node's record", "studio"),
    Operation("post", "/coze_lab/api/runs/{run_id}/cancel", "Stop a run", "studio"),
    Operation(
        "get",
        "/coze_lab/api/runs/{run_id}/events",
        "Every event of a run (SSE; Last-Event-ID replays)",
        "studio",
        query=(("after", "integer", False),),
        stream=True,
    ),
    Operation(
        "get",
        "/coze_lab/api/interrupts",
        "Pending questions across your runs",
        "studio",
        query=(("run_id", "string", False),),
    ),
    Operation(
        "post",
        "/coze_lab/api/interrupts/{event_id}/resume",
        "Answer a question",
        "studio",
        body={"type": "object", "required": ["data"], "properties": {"data": {}}},
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
    if op.stream:
        spec["responses"]["200"] = {
            "description": "server-sent events",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
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
