"""The intent node: the model picks which branch a message belongs to."""

from __future__ import annotations

import json
from typing import Any

from coze_lab.core.workflows.nodes.base import NodeContext, NodeKind, NodeResult, require
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError

_INSTRUCTIONS = (
    "Classify the user's message into exactly one of these intents. Answer with JSON "
    '{{"intent": "<name>"}} using a name from the list, or "else" when none fits.\n{intents}'
)


class IntentNode(NodeKind):
    """``intents``: ``[{"port": "refund", "description": "wants money back"}, ...]``;
    ``query`` is the text to classify. Branches on the chosen intent, or ``else``."""

    type = "intent"
    branching = True
    templated = ("query",)

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {"intent": "string"}

    def ports(self, node: NodeSpec) -> tuple[str, ...]:
        return (*(i["port"] for i in node.config.get("intents", [])), "else")

    def check(self, node: NodeSpec) -> None:
        require(node, "query", str, "a query")
        intents = node.config.get("intents")
        if not isinstance(intents, list) or not intents:
            raise WorkflowDefinitionError("intent needs a list of intents", node.id)
        names = [i.get("port") for i in intents if isinstance(i, dict)]
        if len(names) != len(intents) or not all(isinstance(n, str) and n for n in names):
            raise WorkflowDefinitionError("every intent needs a port name", node.id)
        if len(set(names)) != len(names) or {"else", "error"} & set(names):
            raise WorkflowDefinitionError("intent names must be unique, not else/error", node.id)

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        intents = node.config["intents"]
        listing = "\n".join(f"- {i['port']}: {i.get('description', '')}" for i in intents)
        messages = [
            {"role": "system", "content": _INSTRUCTIONS.format(intents=listing)},
            {"role": "user", "content": str(inputs["__query__"])},
        ]
        reply, usage = await ctx.complete(
            node.config.get("model", "default"), messages, response_format={"type": "json_object"}
        )
        chosen = pick(reply, [i["port"] for i in intents])
        return NodeResult({"intent": chosen}, port=chosen, usage=usage)


def pick(reply: str, names: list[str]) -> str:
    """The intent named in the model's reply (JSON or plain text); ``else`` otherwise.

    Example:
        >>> pick('{"intent": "refund"}', ["refund", "order"]), pick("Order!", ["refund", "order"])
        ('refund', 'order')
    """
    try:
        parsed = json.loads(reply)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("intent") in names:
        return str(parsed["intent"])
    lowered = reply.lower()
    found = [n for n in names if n.lower() in lowered]
    return found[0] if len(found) == 1 else "else"
