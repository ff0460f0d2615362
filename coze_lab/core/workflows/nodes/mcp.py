"""The mcp node: calls one tool of an MCP server of the workflow's space."""

from __future__ import annotations

from typing import Any

from coze_lab.core.errors import CozeLabError
from coze_lab.core.ids import parse_id
from coze_lab.core.workflows.nodes.base import NodeContext, NodeError, NodeKind, NodeResult, require
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError


class McpNode(NodeKind):
    """Calls ``config.tool`` of MCP server ``config.server_id`` with the node's inputs as
    the arguments, as the run's owner. Outputs ``text`` (the tool's text content), ``json``
    (its structured content, or null) and ``latency_ms``. A tool error or a server that
    cannot be reached fails the node (so retry and on_error apply).

    Example (a node of a workflow definition):
        >>> node = {"id": "sum", "type": "mcp", "config": {"server_id": "7", "tool": "add"},
        ...         "inputs": {"a": "{{start.a}}", "b": 2}}
    """

    type = "mcp"

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {"text": "string", "json": "any", "latency_ms": "number"}

    def check(self, node: NodeSpec) -> None:
        try:
            parse_id(node.config.get("server_id"), "server_id")
        except CozeLabError as exc:
            raise WorkflowDefinitionError("server_id must be an MCP server's id", node.id) from exc
        require(node, "tool", str, "a tool name")

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        server_id = parse_id(node.config["server_id"], "server_id")
        arguments = {k: v for k, v in inputs.items() if not k.startswith("__")}
        result = await ctx.call_mcp(server_id, node.config["tool"], arguments)
        if not result.ok:
            raise NodeError(result.output)
        return NodeResult(
            {"text": result.output, "json": result.data, "latency_ms": result.latency_ms}
        )
