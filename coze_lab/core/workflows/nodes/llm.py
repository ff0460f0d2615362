"""The llm node: a prompt (and optional system prompt) to a configured model."""

from __future__ import annotations

import json
from typing import Any

from coze_lab.core.workflows.nodes.base import NodeContext, NodeKind, NodeResult, require
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError


class LlmNode(NodeKind):
    """``prompt`` and ``system`` are templates; ``output: json`` parses the reply."""

    type = "llm"
    templated = ("prompt", "system")

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        if node.config.get("output") == "json":
            return {name: "any" for name in node.config.get("fields", [])} or {"output": "object"}
        return {"output": "string"}

    def check(self, node: NodeSpec) -> None:
        require(node, "prompt", str, "a prompt")
        if node.config.get("output", "text") not in ("text", "json"):
            raise WorkflowDefinitionError("output must be text or json", node.id)

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        messages: list[dict[str, Any]] = []
        if inputs.get("__system__"):
            messages.append({"role": "system", "content": inputs["__system__"]})
        messages.append({"role": "user", "content": inputs["__prompt__"]})
        params = {
            k: node.config[k] for k in ("temperature", "max_tokens", "top_p") if k in node.config
        }
        json_mode = node.config.get("output") == "json"
        if json_mode:
            params["response_format"] = {"type": "json_object"}
        text, usage = await ctx.complete(node.config.get("model", "default"), messages, **params)
        if not json_mode:
            return NodeResult({"output": text}, usage=usage)
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"the model did not answer with JSON: {text[:200]!r}") from exc
        if node.config.get("fields"):
            if not isinstance(parsed, dict):
                raise ValueError("the model's JSON is not an object")
            return NodeResult({f: parsed.get(f) for f in node.config["fields"]}, usage=usage)
        return NodeResult({"output": parsed}, usage=usage)
