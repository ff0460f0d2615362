"""The code node: Python (or JavaScript) that runs in the Deno + Pyodide sandbox."""

from __future__ import annotations

from typing import Any

from coze_lab.core.workflows.nodes.base import NodeContext, NodeKind, NodeResult, require
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError

_COMPATIBLE = {
    "string": {"string"},
    "integer": {"integer"},
    "number": {"number", "integer"},
    "boolean": {"boolean"},
    "object": {"object"},
    "array": {"array"},
}


def compatible(expected: str, produced: str) -> bool:
    """Whether a value typed ``produced`` may feed a parameter typed ``expected``."""
    if "any" in (expected, produced):
        return True
    return produced in _COMPATIBLE.get(expected, {expected})


class CodeNode(NodeKind):
    """``config.code`` with ``entry`` (a function taking the inputs as keywords) or the
    seed contract ``def main(args)`` reading ``args.params`` when ``entry`` is None."""

    type = "code"

    def check(self, node: NodeSpec) -> None:
        require(node, "code", str, "code")
        if node.config.get("language", "python") not in ("python", "javascript"):
            raise WorkflowDefinitionError("language must be python or javascript", node.id)

    def input_types(self, node: NodeSpec) -> dict[str, str]:
        return dict(node.config.get("params") or {})

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        output = await ctx.run_code(
            node.config["code"],
            inputs,
            language=node.config.get("language", "python"),
            entry=node.config.get("entry"),
            timeout=node.error.timeout,
        )
        return NodeResult(outputs=output)
