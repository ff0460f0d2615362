"""Nodes that run other workflows: sub-workflow, loop and batch.

Each run of the inner workflow is a child run of the node's run, keyed by the node and the
iteration, so a finished iteration is never run again and a question inside one pauses the
node until it is answered.
"""

from __future__ import annotations

import asyncio
from typing import Any

from coze_lab.core.workflows.nodes.base import (
    ChildOutcome,
    NodeContext,
    NodeError,
    NodeKind,
    NodeResult,
)
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError, WorkflowSpec

MAX_ITERATIONS = 10_000
MAX_CONCURRENCY = 32


def inner_spec(node: NodeSpec) -> WorkflowSpec:
    """The node's inner workflow (``config.definition``), parsed. ``validate`` checks it
    whole when it checks the outer workflow (a node kind does not call the validator)."""
    definition = node.config.get("definition")
    if not isinstance(definition, dict):
        raise WorkflowDefinitionError(f"{node.type} node needs a definition", node.id)
    try:
        return WorkflowSpec.from_dict(definition)
    except WorkflowDefinitionError as exc:
        raise WorkflowDefinitionError(f"its workflow is invalid: {exc.msg}", node.id) from exc


#: node types that run another workflow (``config.definition``)
COMPOSITE_TYPES = ("subworkflow", "loop", "batch")
#: node types that end a loop body's iteration early (Coze's break and continue nodes)
LOOP_CONTROL = ("break", "continue")
#: the output key a body run that reached a loop-control node reports it under
CONTROL_KEY = "__loop__"


class LoopControlNode(NodeKind):
    """``break`` ends the loop, ``continue`` goes on with the next iteration: either stops
    the body's run where it is reached (no end node needed on that branch). That iteration
    adds nothing to ``results`` and leaves the loop variables as they were.

    Example:
        >>> body.node("continue", "skip", after="odd:true")  # doctest: +SKIP
    """

    def __init__(self, kind: str) -> None:
        self.type = kind

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {}

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        return NodeResult({})


def _no_loop_control(spec: WorkflowSpec, node: NodeSpec) -> None:
    for inner in spec.nodes:
        if inner.type in LOOP_CONTROL:
            raise WorkflowDefinitionError(
                f"a {inner.type} node belongs in a loop body, not in a {node.type}", node.id
            )


def _end_outputs(node: NodeSpec) -> dict[str, str]:
    definition = node.config.get("definition") or {}
    for inner in definition.get("nodes", []):
        if inner.get("type") == "end":
            return {name: "any" for name in inner.get("inputs", {})}
    return {}


def _result(outcome: ChildOutcome, what: str) -> dict[str, Any] | NodeResult:
    if outcome.status == "succeeded":
        return outcome.outputs or {}
    if outcome.status == "interrupted":
        return NodeResult(waiting=outcome.waiting)
    raise NodeError(f"{what} {outcome.status}: {outcome.error}")


def _inner_inputs(spec: WorkflowSpec, offered: dict[str, Any]) -> dict[str, Any]:
    names = {i.name for i in spec.inputs}
    return {k: v for k, v in offered.items() if k in names}


class SubworkflowNode(NodeKind):
    """Runs ``config.definition`` with the node's inputs; its end outputs are the node's."""

    type = "subworkflow"

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return _end_outputs(node)

    def check(self, node: NodeSpec) -> None:
        _no_loop_control(inner_spec(node), node)

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        spec = inner_spec(node)
        result = _result(
            await ctx.run_child(spec, _inner_inputs(spec, inputs), "0"), "the sub-workflow"
        )
        return result if isinstance(result, NodeResult) else NodeResult(outputs=result)


class LoopNode(NodeKind):
    """Runs its body once per item of ``inputs.over`` (or ``config.count`` times), in order.

    The body's start inputs may be ``item``, ``index``, the loop ``variables`` and any of
    the node's other inputs. Body end outputs named like a variable update it for the next
    iteration; an end output ``break`` that is true ends the loop after that iteration. A
    ``break`` or ``continue`` node reached in the body ends its iteration there (see
    ``LoopControlNode``).
    Outputs: ``results`` (each iteration's end outputs), ``count`` and the variables.
    """

    type = "loop"

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        variables = node.config.get("variables") or {}
        return {"results": "array", "count": "integer", **{v: "any" for v in variables}}

    def check(self, node: NodeSpec) -> None:
        spec = inner_spec(node)
        count = node.config.get("count")
        if ("over" in node.inputs) == (count is not None):
            raise WorkflowDefinitionError("give inputs={'over': ...} or count=N", node.id)
        if count is not None and (
            isinstance(count, bool)
            or not isinstance(count, int)
            or not 0 <= count <= MAX_ITERATIONS
        ):
            raise WorkflowDefinitionError(f"count must be within 0..{MAX_ITERATIONS}", node.id)
        variables = node.config.get("variables") or {}
        if not isinstance(variables, dict):
            raise WorkflowDefinitionError("variables must be an object", node.id)
        offered = {"item", "index", *variables, *node.inputs}
        for item in spec.inputs:
            if item.required and item.name not in offered:
                raise WorkflowDefinitionError(
                    f"the body needs input '{item.name}', which the loop does not give", node.id
                )

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        spec = inner_spec(node)
        extra = {k: v for k, v in inputs.items() if k != "over" and not k.startswith("__")}
        if "over" in node.inputs:
            items = inputs["over"]
            if not isinstance(items, list):
                raise NodeError("inputs.over must be an array")
        else:
            items = list(range(node.config["count"]))
        variables = dict(node.config.get("variables") or {})
        results: list[dict[str, Any]] = []
        for index, item in enumerate(items[:MAX_ITERATIONS]):
            offered = {**extra, **variables, "item": item, "index": index}
            outcome = await ctx.run_child(spec, _inner_inputs(spec, offered), str(index))
            result = _result(outcome, f"iteration {index}")
            if isinstance(result, NodeResult):
                return result  # earlier iterations stay done; this one waits for a person
            control = result.get(CONTROL_KEY)
            if control == "break":
                break
            if control == "continue":
                continue
            variables.update({k: result[k] for k in variables if k in result})
            results.append(result)
            if result.get("break"):
                break
        return NodeResult({"results": results, "count": len(results), **variables})


class BatchNode(NodeKind):
    """Runs its body for every item of ``inputs.over`` in parallel, at most ``concurrency``
    at a time; ``results`` keeps the items' order."""

    type = "batch"

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {"results": "array", "count": "integer"}

    def check(self, node: NodeSpec) -> None:
        spec = inner_spec(node)
        _no_loop_control(spec, node)
        if "over" not in node.inputs:
            raise WorkflowDefinitionError("batch needs inputs={'over': ...}", node.id)
        concurrency = node.config.get("concurrency", 4)
        if (
            isinstance(concurrency, bool)
            or not isinstance(concurrency, int)
            or not (1 <= concurrency <= MAX_CONCURRENCY)
        ):
            raise WorkflowDefinitionError(
                f"concurrency must be within 1..{MAX_CONCURRENCY}", node.id
            )
        offered = {"item", "index", *node.inputs}
        for item in spec.inputs:
            if item.required and item.name not in offered:
                raise WorkflowDefinitionError(
                    f"the body needs input '{item.name}', which the batch does not give", node.id
                )

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        spec = inner_spec(node)
        items = inputs["over"]
        if not isinstance(items, list) or len(items) > MAX_ITERATIONS:
            raise NodeError(f"inputs.over must be an array of at most {MAX_ITERATIONS} items")
        extra = {k: v for k, v in inputs.items() if k != "over" and not k.startswith("__")}
        gate = asyncio.Semaphore(node.config.get("concurrency", 4))

        async def one(index: int, item: Any) -> ChildOutcome:
            async with gate:
                offered = {**extra, "item": item, "index": index}
                return await ctx.run_child(spec, _inner_inputs(spec, offered), str(index))

        outcomes = await asyncio.gather(*(one(i, item) for i, item in enumerate(items)))
        waiting = [w for o in outcomes if o.status == "interrupted" for w in o.waiting or []]
        if waiting:
            return NodeResult(waiting=waiting)
        results = []
        for index, outcome in enumerate(outcomes):
            result = _result(outcome, f"item {index}")
            assert not isinstance(result, NodeResult)
            results.append(result)
        return NodeResult({"results": results, "count": len(results)})
