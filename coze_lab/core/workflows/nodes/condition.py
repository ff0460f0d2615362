"""The condition node: if / else-if / else over comparisons joined by and / or."""

from __future__ import annotations

from typing import Any

from coze_lab.core.workflows.nodes.base import NodeContext, NodeKind, NodeResult
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError

OPERATORS = ("==", "!=", ">", ">=", "<", "<=", "contains", "not_contains", "empty", "not_empty")
_UNARY = ("empty", "not_empty")


def compare(left: Any, op: str, right: Any) -> bool:
    """One comparison; ordering of incomparable values is simply false.

    Example:
        >>> compare("abc", "contains", "b"), compare(3, ">=", 4), compare([], "empty", None)
        (True, False, True)
    """
    if op == "empty":
        return left is None or left == "" or left == [] or left == {}
    if op == "not_empty":
        return not compare(left, "empty", None)
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if op in ("contains", "not_contains"):
        try:
            found = right in left
        except TypeError:
            found = False
        return found if op == "contains" else not found
    try:
        return bool(
            {">": left > right, ">=": left >= right, "<": left < right, "<=": left <= right}[op]
        )
    except TypeError:
        return False


class ConditionNode(NodeKind):
    """``branches``: ``[{"port": "yes", "logic": "and", "when": [{"left", "op", "right"}]}]``;
    the first branch whose comparisons hold wins, otherwise the port ``else``."""

    type = "condition"
    branching = True
    templated = ("branches",)

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {"port": "string"}

    def ports(self, node: NodeSpec) -> tuple[str, ...]:
        return (*(b["port"] for b in node.config.get("branches", [])), "else")

    def check(self, node: NodeSpec) -> None:
        branches = node.config.get("branches")
        if not isinstance(branches, list) or not branches:
            raise WorkflowDefinitionError("condition needs branches", node.id)
        ports = set()
        for branch in branches:
            if not isinstance(branch, dict) or not isinstance(branch.get("port"), str):
                raise WorkflowDefinitionError("every branch needs a port name", node.id)
            if branch["port"] in ports or branch["port"] in ("else", "error"):
                raise WorkflowDefinitionError(
                    f"port '{branch['port']}' is repeated or reserved", node.id
                )
            ports.add(branch["port"])
            if branch.get("logic", "and") not in ("and", "or"):
                raise WorkflowDefinitionError("logic must be and or or", node.id)
            when = branch.get("when")
            if not isinstance(when, list) or not when:
                raise WorkflowDefinitionError(
                    f"branch '{branch['port']}' has no comparisons", node.id
                )
            for item in when:
                if not isinstance(item, dict) or item.get("op") not in OPERATORS:
                    raise WorkflowDefinitionError(f"op must be one of {OPERATORS}", node.id)

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        for branch in inputs["__branches__"]:
            results = [compare(c.get("left"), c["op"], c.get("right")) for c in branch["when"]]
            if all(results) if branch.get("logic", "and") == "and" else any(results):
                return NodeResult({"port": branch["port"]}, port=branch["port"])
        return NodeResult({"port": "else"}, port="else")
