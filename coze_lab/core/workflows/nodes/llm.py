"""The llm node: a prompt (and optional system prompt) to a configured model."""

from __future__ import annotations

import json
from typing import Any

from coze_lab.core.workflows.nodes.base import NodeContext, NodeKind, NodeResult, require
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError

#: the run input a chat-flow's conversation history comes in (``[{role, content}]``)
CONVERSATION_HISTORY = "CONVERSATION_HISTORY"
DEFAULT_HISTORY_ROUNDS, MAX_HISTORY_ROUNDS = 3, 50


class LlmNode(NodeKind):
    """``prompt`` and ``system`` are templates; ``output: json`` parses the reply.

    ``stream: true`` sends the answer as partial ``message`` events while the model writes
    it (Coze's streamed message events: ``node_is_finish`` false, then a last empty one
    that is true and carries the usage). ``chat_history: true`` puts the last
    ``history_rounds`` rounds (default 3) of the conversation a chat-flow runs in before
    the prompt; a run started elsewhere has none.

    Example:
        >>> wf.llm("reply", prompt="{{start.USER_INPUT}}", stream=True,
        ...        chat_history=True, history_rounds=2)  # doctest: +SKIP
    """

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
        for flag in ("stream", "chat_history"):
            if not isinstance(node.config.get(flag, False), bool):
                raise WorkflowDefinitionError(f"{flag} must be true or false", node.id)
        rounds = node.config.get("history_rounds", DEFAULT_HISTORY_ROUNDS)
        if (
            isinstance(rounds, bool)
            or not isinstance(rounds, int)
            or not 1 <= rounds <= MAX_HISTORY_ROUNDS
        ):
            raise WorkflowDefinitionError(
                f"history_rounds must be within 1..{MAX_HISTORY_ROUNDS}", node.id
            )

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        messages: list[dict[str, Any]] = []
        if inputs.get("__system__"):
            messages.append({"role": "system", "content": inputs["__system__"]})
        if node.config.get("chat_history"):
            rounds = node.config.get("history_rounds", DEFAULT_HISTORY_ROUNDS)
            messages.extend(last_rounds(ctx.conversation_history(), rounds))
        messages.append({"role": "user", "content": inputs["__prompt__"]})
        params = {
            k: node.config[k] for k in ("temperature", "max_tokens", "top_p") if k in node.config
        }
        json_mode = node.config.get("output") == "json"
        if json_mode:
            params["response_format"] = {"type": "json_object"}
        stream = bool(node.config.get("stream"))
        text, usage = await ctx.complete(
            node.config.get("model", "default"), messages, stream=stream, **params
        )
        done = "" if stream else None  # the stream's last packet (node_is_finish: true)
        if not json_mode:
            return NodeResult({"output": text}, usage=usage, message=done)
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"the model did not answer with JSON: {text[:200]!r}") from exc
        if node.config.get("fields"):
            if not isinstance(parsed, dict):
                raise ValueError("the model's JSON is not an object")
            outputs = {f: parsed.get(f) for f in node.config["fields"]}
            return NodeResult(outputs, usage=usage, message=done)
        return NodeResult({"output": parsed}, usage=usage, message=done)


def last_rounds(history: list[Any], rounds: int) -> list[dict[str, str]]:
    """The messages of the last ``rounds`` rounds (a user message and what answered it).

    Example:
        >>> said = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
        ...         {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]
        >>> [m["content"] for m in last_rounds(said, 1)]
        ['c', 'd']
    """
    kept: list[dict[str, str]] = []
    seen = 0
    for message in reversed(history):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        kept.append({"role": str(message["role"]), "content": str(message.get("content", ""))})
        if message["role"] == "user":
            seen += 1
            if seen == rounds:
                break
    return kept[::-1]
