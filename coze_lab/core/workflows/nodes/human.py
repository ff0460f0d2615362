"""Human-in-the-loop nodes: question (free answer or choices) and input (a form)."""

from __future__ import annotations

from typing import Any

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.workflows.nodes.base import (
    InterruptRequest,
    NodeContext,
    NodeKind,
    NodeResult,
    require,
)
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError

FIELD_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool}


class QuestionNode(NodeKind):
    """Asks ``question``; with ``choices`` the answer must be one of them."""

    type = "question"
    templated = ("question",)

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {"answer": "string"}

    def check(self, node: NodeSpec) -> None:
        require(node, "question", str, "a question")
        check_timeout_setting(node)
        choices = node.config.get("choices")
        if choices is not None and (
            not isinstance(choices, list)
            or not choices
            or not all(isinstance(c, str) and c for c in choices)
        ):
            raise WorkflowDefinitionError("choices must be a non-empty list of strings", node.id)

    def ports(self, node: NodeSpec) -> tuple[str, ...]:
        return timeout_ports(node)

    def check_resume(self, node: NodeSpec, resume_data: Any) -> None:
        answer_of(resume_data, node.config.get("choices"))

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        choices = node.config.get("choices")
        if timed_out(ctx.resume_data):
            return NodeResult({"answer": None}, port="timeout")
        if ctx.resume_data is None:
            data: dict[str, Any] = {"question": inputs["__question__"]}
            if choices:
                data["choices"] = choices
            return NodeResult(interrupt=InterruptRequest("question", data))
        return NodeResult({"answer": answer_of(ctx.resume_data, choices)})


def timeout_ports(node: NodeSpec) -> tuple[str, ...]:
    """``timeout`` when the question continues down a branch after it expires."""
    return ("timeout",) if node.config.get("on_timeout") == "branch" else ()


def timed_out(resume_data: Any) -> bool:
    return isinstance(resume_data, dict) and resume_data.get("__timeout__") is True


def check_timeout_setting(node: NodeSpec) -> None:
    if node.config.get("on_timeout", "fail") not in ("fail", "branch"):
        raise WorkflowDefinitionError("on_timeout must be fail or branch", node.id)


def answer_of(resume_data: Any, choices: list[str] | None) -> str:
    """The answer text from ``resume_data`` (a string, or ``{"answer": ...}``)."""
    answer = resume_data.get("answer") if isinstance(resume_data, dict) else resume_data
    if not isinstance(answer, str) or not answer.strip():
        raise InvalidParameter("resume_data must be a non-empty answer")
    if choices and answer not in choices:
        raise InvalidParameter(f"answer must be one of {choices}")
    return answer


class InputNode(NodeKind):
    """Asks for a form: ``form = {"fields": [{"name", "type", "required", "description"}]}``."""

    type = "input"
    templated = ("prompt",)

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        fields = (node.config.get("form") or {}).get("fields") or []
        return {f["name"]: f.get("type", "string") for f in fields if isinstance(f, dict)}

    def check(self, node: NodeSpec) -> None:
        form = require(node, "form", dict, "a form")
        check_timeout_setting(node)
        fields = form.get("fields")
        if not isinstance(fields, list) or not fields:
            raise WorkflowDefinitionError("form needs a non-empty 'fields' list", node.id)
        for item in fields:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise WorkflowDefinitionError("every form field needs a name", node.id)
            if item.get("type", "string") not in FIELD_TYPES:
                raise WorkflowDefinitionError(
                    f"field '{item['name']}' type must be one of {list(FIELD_TYPES)}", node.id
                )

    def ports(self, node: NodeSpec) -> tuple[str, ...]:
        return timeout_ports(node)

    def check_resume(self, node: NodeSpec, resume_data: Any) -> None:
        form_values(node.config["form"], resume_data)

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        form = node.config["form"]
        if timed_out(ctx.resume_data):
            return NodeResult({f["name"]: None for f in form["fields"]}, port="timeout")
        if ctx.resume_data is None:
            return NodeResult(
                interrupt=InterruptRequest(
                    "input", {"prompt": inputs.get("__prompt__", ""), "form": form}
                )
            )
        return NodeResult(form_values(form, ctx.resume_data))


def form_values(form: dict[str, Any], data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InvalidParameter("resume_data must be an object with the form's fields")
    values: dict[str, Any] = {}
    for item in form["fields"]:
        name, kind = item["name"], item.get("type", "string")
        if name not in data or data[name] is None:
            if item.get("required", True):
                raise InvalidParameter(f"form field '{name}' is required")
            values[name] = item.get("default")
            continue
        value = data[name]
        if (isinstance(value, bool) and kind != "boolean") or not isinstance(
            value, FIELD_TYPES[kind]
        ):
            raise InvalidParameter(f"form field '{name}' must be {kind}")
        values[name] = value
    return values
