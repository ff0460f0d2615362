"""The tools a bot offers its model: published workflows, plugin tools and client functions."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from coze_lab.core.bots import BotConfig
from coze_lab.core.errors import CozeLabError
from coze_lab.core.memory.variables import Scope, VariableService, check_values
from coze_lab.core.workflows.spec import WorkflowSpec

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_JSON_TYPES = {"string", "integer", "number", "boolean", "object", "array"}
MAX_TOOL_OUTPUT_CHARS = 20_000


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call produced: text for the model, and whether it failed."""

    output: str
    ok: bool = True
    meta: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Tool:
    """One function the model may call. ``invoke`` is None for client-side functions: the
    chat then stops in ``requires_action``."""

    name: str
    description: str
    parameters: dict[str, Any]
    kind: str  # workflow | plugin | mcp | function | variable
    invoke: Callable[[dict[str, Any]], Awaitable[ToolOutcome]] | None
    ref: dict[str, str] = field(default_factory=dict)

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ToolBox:
    """The tools of one chat, by name."""

    def __init__(self, tools: list[Tool]) -> None:
        self.tools: dict[str, Tool] = {}
        for tool in tools:
            name = tool.name
            n = 2
            while name in self.tools:
                name, n = f"{tool.name}_{n}", n + 1
            self.tools[name] = Tool(
                name, tool.description, tool.parameters, tool.kind, tool.invoke, tool.ref
            )

    def __bool__(self) -> bool:
        return bool(self.tools)

    def definitions(self) -> list[dict[str, Any]]:
        return [t.to_openai() for t in self.tools.values()]

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)


WorkflowRunner = Callable[[int, WorkflowSpec, int | None, dict[str, Any]], Awaitable[ToolOutcome]]


def workflow_tool(
    workflow_id: int, spec: WorkflowSpec, version: int | None, run: WorkflowRunner
) -> Tool:
    """A workflow as a function: its start inputs are the parameters."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for item in spec.inputs:
        schema: dict[str, Any] = {}
        if item.type in _JSON_TYPES:
            schema["type"] = item.type
        if item.description:
            schema["description"] = item.description
        if item.default is not None:
            schema["default"] = item.default
        properties[item.name] = schema
        if item.required and item.default is None:
            required.append(item.name)

    async def invoke(arguments: dict[str, Any]) -> ToolOutcome:
        return await run(workflow_id, spec, version, arguments)

    return Tool(
        name=function_name(spec.name),
        description=spec.description or f"Run the workflow '{spec.name}'.",
        parameters={"type": "object", "properties": properties, "required": required},
        kind="workflow",
        invoke=invoke,
        ref={"workflow_id": str(workflow_id)},
    )


def mcp_tool(service: Any, user_id: int, server_id: int, info: Any) -> Tool:
    """A tool of an MCP server (an ``McpToolInfo``), called as ``user_id``."""

    async def invoke(arguments: dict[str, Any]) -> ToolOutcome:
        result = await service.call(user_id, server_id, info.name, arguments)
        return ToolOutcome(
            result.output or ("(no output)" if result.ok else "error"),
            ok=result.ok,
            meta={"latency_ms": str(round(result.latency_ms, 1))},
        )

    schema = info.input_schema if info.input_schema.get("type") == "object" else None
    return Tool(
        name=function_name(info.name),
        description=info.description or f"The MCP tool '{info.name}'.",
        parameters=schema or {"type": "object", "properties": {}},
        kind="mcp",
        invoke=invoke,
        ref={"mcp_server_id": str(server_id), "tool": info.name},
    )


def function_tools(config: BotConfig) -> list[Tool]:
    return [Tool(f.name, f.description, f.parameters, "function", None) for f in config.functions]


#: the built-in tool of a bot with ``save_variables`` switched on
SAVE_VARIABLE = "save_variable"


def variable_tools(config: BotConfig, scope: Scope, variables: VariableService) -> list[Tool]:
    """``save_variable``: the model stores what the end user told it in one of the bot's
    enabled variables the agent may set (that user's value on that connector; the next
    chat's prompt uses it). None when the bot has no such variable."""
    described = {v.keyword: v.description for v in config.variables if v.enable and v.agent_can_set}
    if not described:
        return []

    async def invoke(arguments: dict[str, Any]) -> ToolOutcome:
        keyword, value = arguments.get("keyword"), arguments.get("value")
        try:
            values = check_values([{"keyword": keyword, "value": value}])
            await asyncio.to_thread(variables.update, scope, config, values, by="agent")
        except CozeLabError as exc:
            return error_outcome(exc)
        return ToolOutcome(f"saved {keyword}", meta={"keyword": str(keyword)})

    listing = "; ".join(f"{k}: {d}" if d else k for k, d in described.items())
    return [
        Tool(
            name=SAVE_VARIABLE,
            description=(
                "Remember something the user told you about themselves, for later chats, in"
                f" one of these variables ({listing})."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "keyword": {"type": "string", "enum": list(described)},
                    "value": {"type": "string"},
                },
                "required": ["keyword", "value"],
            },
            kind="variable",
            invoke=invoke,
        )
    ]


def function_name(name: str) -> str:
    """A name OpenAI-compatible APIs accept (``^[A-Za-z0-9_-]{1,64}$``).

    Example:
        >>> function_name("doc review!")
        'doc_review_'
    """
    return (_UNSAFE.sub("_", name) or "tool")[:64]


def tool_text(value: Any) -> str:
    """A tool's result as text for the model, truncated to a size models handle."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > MAX_TOOL_OUTPUT_CHARS:
        text = text[:MAX_TOOL_OUTPUT_CHARS] + "…[truncated]"
    return text


def error_outcome(exc: BaseException) -> ToolOutcome:
    message = exc.msg if isinstance(exc, CozeLabError) else f"{type(exc).__name__}: {exc}"
    return ToolOutcome(f"error: {message}", ok=False)
