"""Nodes that only move data: start, end, text, json, message, variable aggregation, and
the bot variables (read, assign)."""

from __future__ import annotations

import json
from typing import Any

from coze_lab.core.bots.config import KEYWORD
from coze_lab.core.errors import CozeLabError
from coze_lab.core.memory.variables import check_values
from coze_lab.core.workflows.nodes.base import (
    NodeContext,
    NodeError,
    NodeKind,
    NodeResult,
    require,
)
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError


class StartNode(NodeKind):
    type = "start"

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        return NodeResult(outputs=dict(ctx.run_inputs))


class EndNode(NodeKind):
    """Its inputs are the run's outputs; an ``answer`` template is streamed as a message."""

    type = "end"
    templated = ("answer",)

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {name: "any" for name in node.inputs}

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        answer = inputs.pop("__answer__", None)
        if answer is None:  # Coze streams the end node's variables as a JSON message
            answer = json.dumps(inputs, ensure_ascii=False)
        return NodeResult(outputs=inputs, message=answer)


class TextNode(NodeKind):
    """``mode: concat`` renders ``template``; ``mode: split`` splits ``inputs.text``."""

    type = "text"
    templated = ("template",)

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {"output": "array" if node.config.get("mode") == "split" else "string"}

    def check(self, node: NodeSpec) -> None:
        mode = node.config.get("mode", "concat")
        if mode == "concat":
            require(node, "template", str, "a template")
        elif mode == "split":
            require(node, "separator", str, "a separator")
            if "text" not in node.inputs:
                raise WorkflowDefinitionError("split needs inputs={'text': ...}", node.id)
        else:
            raise WorkflowDefinitionError("mode must be concat or split", node.id)

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        if node.config.get("mode") == "split":
            return NodeResult({"output": str(inputs["text"]).split(node.config["separator"])})
        return NodeResult({"output": inputs["__template__"]})


class JsonNode(NodeKind):
    """``mode: serialize`` turns ``inputs.value`` into text; ``deserialize`` parses it."""

    type = "json"

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {"output": "string" if node.config.get("mode") == "serialize" else "any"}

    def check(self, node: NodeSpec) -> None:
        if node.config.get("mode") not in ("serialize", "deserialize"):
            raise WorkflowDefinitionError("mode must be serialize or deserialize", node.id)
        if "value" not in node.inputs:
            raise WorkflowDefinitionError("json node needs inputs={'value': ...}", node.id)

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        if node.config["mode"] == "serialize":
            return NodeResult({"output": json.dumps(inputs["value"], ensure_ascii=False)})
        try:
            return NodeResult({"output": json.loads(inputs["value"])})
        except (TypeError, ValueError) as exc:
            raise ValueError(f"value is not valid JSON: {exc}") from exc


class MessageNode(NodeKind):
    """Streams ``content`` to the caller as an intermediate message."""

    type = "message"
    templated = ("content",)

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {"output": "string"}

    def check(self, node: NodeSpec) -> None:
        require(node, "content", str, "content")

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        content = inputs["__content__"]
        return NodeResult({"output": content}, message=content)


class AggregateNode(NodeKind):
    """The first input that has a value: merges branches that ran alternatively."""

    type = "aggregate"
    lenient_inputs = True

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {"output": "any"}

    def check(self, node: NodeSpec) -> None:
        if not node.inputs:
            raise WorkflowDefinitionError("aggregate needs inputs to choose from", node.id)

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        chosen = next((v for v in inputs.values() if v is not None), None)
        return NodeResult({"output": chosen})


#: the assign node's modes: name values only, or also set the run's bot variables
ASSIGN_MODES = ("name", "bot_variables")


class AssignNode(NodeKind):
    """Names values: its outputs are its inputs (e.g. a loop body's new variable values).

    ``mode="bot_variables"`` also sets each input as the run's bot variable of that name,
    for the run's end user, as the bot does (the variable must allow ``agent_can_set``):
    all or none. A value that is not text is stored as JSON text.

    Example:
        >>> wf.node("assign", "remember", mode="bot_variables",
        ...         inputs={"city": "{{start.city}}"})                  # doctest: +SKIP
    """

    type = "assign"

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {name: "any" for name in node.inputs}

    def check(self, node: NodeSpec) -> None:
        if not node.inputs:
            raise WorkflowDefinitionError("assign needs inputs to name", node.id)
        mode = node.config.get("mode", "name")
        if mode not in ASSIGN_MODES:
            raise WorkflowDefinitionError(
                f"assign mode must be one of {', '.join(ASSIGN_MODES)}", node.id
            )

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        if node.config.get("mode") == "bot_variables":
            texts = [
                {"keyword": k, "value": v if isinstance(v, str) else json.dumps(v)}
                for k, v in inputs.items()
            ]
            try:
                values = check_values(texts)
            except CozeLabError as exc:
                raise NodeError(exc.msg) from exc
            await ctx.bot_variables(write=values)
        return NodeResult(dict(inputs))


class VariableNode(NodeKind):
    """Reads the run's bot variables (``keywords``) for its end user: one string output per
    keyword, the stored value or the variable's default.

    Example:
        >>> wf.node("variable", "profile", keywords=["name", "city"])    # doctest: +SKIP
    """

    type = "variable"

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {k: "string" for k in node.config.get("keywords") or () if isinstance(k, str)}

    def check(self, node: NodeSpec) -> None:
        keywords = node.config.get("keywords")
        if (
            not isinstance(keywords, list)
            or not keywords
            or not all(isinstance(k, str) and KEYWORD.fullmatch(k) for k in keywords)
        ):
            raise WorkflowDefinitionError(
                "variable node needs keywords: a list of the bot's variable names", node.id
            )

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        return NodeResult(await ctx.bot_variables(read=node.config["keywords"]))
