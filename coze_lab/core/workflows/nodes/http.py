"""The HTTP request node: templated URL, query, headers and body; guarded outbound call."""

from __future__ import annotations

import json
from typing import Any

from coze_lab.core.workflows.nodes.base import NodeContext, NodeKind, NodeResult, require
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")


class HttpNode(NodeKind):
    """Calls ``config.url``; outputs ``status_code``, ``body`` (text), ``json`` (parsed when the
    response is JSON, else null) and ``headers``. A 4xx or 5xx answer is an output to branch
    on, not a failure; unreachable hosts, timeouts and refused addresses fail the node."""

    type = "http"
    templated = ("url", "headers", "query", "body")

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {"status_code": "integer", "body": "string", "json": "any", "headers": "object"}

    def check(self, node: NodeSpec) -> None:
        require(node, "url", str, "a url")
        if node.config.get("method", "GET").upper() not in METHODS:
            raise WorkflowDefinitionError(f"method must be one of {METHODS}", node.id)
        for key in ("headers", "query"):
            if not isinstance(node.config.get(key, {}), dict):
                raise WorkflowDefinitionError(f"{key} must be an object", node.id)

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        body = inputs.get("__body__")
        response = await ctx.http(
            node.config.get("method", "GET").upper(),
            str(inputs["__url__"]),
            headers={k: str(v) for k, v in (inputs.get("__headers__") or {}).items()},
            params={k: v for k, v in (inputs.get("__query__") or {}).items() if v is not None},
            content=body.encode() if isinstance(body, str) else None,
            json=body if body is not None and not isinstance(body, str) else None,
            timeout=node.error.timeout or 30.0,
        )
        text = response.text
        parsed = None
        if "json" in response.headers.get("content-type", ""):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
        return NodeResult(
            {
                "status_code": response.status_code,
                "body": text,
                "json": parsed,
                "headers": dict(response.headers),
            }
        )
