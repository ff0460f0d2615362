"""What the plugin service hands out: plugins, tools, tool definitions and call results."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

SCENES = ("draft", "online")


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as the model sees it (``parameters`` is a JSON schema)."""

    tool_id: int
    plugin_id: int
    name: str
    description: str
    parameters: dict[str, Any]

    def openai_tool(self) -> dict[str, Any]:
        """The OpenAI ``tools=[...]`` entry.

        Example:
            >>> ToolDefinition(1, 2, "get_pet", "A pet", {"type": "object"}).openai_tool()
            {'type': 'function', 'function': {'name': 'get_pet', 'description': 'A pet', \
'parameters': {'type': 'object'}}}
        """
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one call; ``output`` is the text for the model either way."""

    ok: bool
    output: str
    status_code: int | None
    latency_ms: float
    error: str | None
    #: set when OAuth authorization is missing: where the user authorizes
    authorization_url: str | None = None
    #: the parsed JSON response (None for other content)
    data: Any = None
    #: the ``plugin_calls`` row, and its request summary (no secrets) for traces
    call_id: int | None = None
    request: dict[str, Any] | None = None


@dataclass(frozen=True)
class CallRecord:
    """A recorded tool call (``plugin_calls``): its request summary has no secrets."""

    id: int
    tool_id: int
    tool_name: str
    scene: str
    version: int | None
    ok: bool
    status_code: int | None
    latency_ms: float
    error: str | None
    request: dict[str, Any] | None
    trace: dict[str, Any] | None
    created_at: datetime


@dataclass(frozen=True)
class ToolInfo:
    id: int
    plugin_id: int
    name: str
    description: str
    method: str
    path: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class PluginInfo:
    id: int
    owner_id: int
    name: str
    description: str
    manifest: dict[str, Any]
    server_url: str
    online_version: int | None
    tools: list[ToolInfo]
    auth: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    openapi: dict[str, Any] | None = None
    version: int | None = None
    warnings: list[dict[str, str]] = field(default_factory=list)
    #: the space the plugin belongs to
    space_id: int = 0
