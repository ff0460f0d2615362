"""The plugin node: calls one tool of a plugin; waits for OAuth authorization when needed."""

from __future__ import annotations

from typing import Any

from coze_lab.core.errors import CozeLabError
from coze_lab.core.ids import parse_id
from coze_lab.core.workflows.nodes.base import (
    InterruptRequest,
    NodeContext,
    NodeError,
    NodeKind,
    NodeResult,
    require,
)
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError

AUTHORIZATION = "authorization"


class PluginNode(NodeKind):
    """Calls ``config.tool`` of plugin ``config.plugin_id`` with the node's inputs as the
    arguments. Outputs ``status_code``, ``body`` (text for a model), ``json`` (the parsed
    response or null) and ``latency_ms``. A failed call fails the node (so retry and
    on_error apply); a missing OAuth authorization pauses the run with an ``authorization``
    interrupt carrying the URL to open, and the run goes on once the user has authorized."""

    type = "plugin"

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {"status_code": "integer", "body": "string", "json": "any", "latency_ms": "number"}

    def check(self, node: NodeSpec) -> None:
        raw = node.config.get("plugin_id")
        try:
            parse_id(raw, "plugin_id")
        except CozeLabError as exc:
            raise WorkflowDefinitionError("plugin_id must be a plugin's id", node.id) from exc
        require(node, "tool", str, "a tool name")
        if node.config.get("scene") not in (None, "draft", "online"):
            raise WorkflowDefinitionError("scene must be draft or online", node.id)
        version = node.config.get("version")
        if version is not None and (not isinstance(version, int) or version < 1):
            raise WorkflowDefinitionError("version must be a positive integer", node.id)

    def check_resume(self, node: NodeSpec, resume_data: Any) -> None:
        """Any answer continues: the node checks the authorization again when it re-runs."""

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        plugin_id = parse_id(node.config["plugin_id"], "plugin_id")
        arguments = {k: v for k, v in inputs.items() if not k.startswith("__")}
        result = await ctx.call_plugin(plugin_id, node.config["tool"], arguments)
        if result.authorization_url is not None:
            return NodeResult(
                interrupt=InterruptRequest(
                    AUTHORIZATION,
                    {
                        "plugin_id": str(plugin_id),
                        "tool": node.config["tool"],
                        "authorization_url": result.authorization_url,
                        "message": result.output,
                    },
                )
            )
        if not result.ok:
            raise NodeError(result.error if result.status_code is None else result.output)
        return NodeResult(
            {
                "status_code": result.status_code,
                "body": result.output,
                "json": result.data,
                "latency_ms": result.latency_ms,
            }
        )
