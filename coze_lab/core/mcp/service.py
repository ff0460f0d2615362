"""``McpService``: the MCP domain's one door (servers, credentials, tools, calls)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp import types
from mcp.shared.exceptions import MCPError

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import CozeLabError, NotFound
from coze_lab.core.mcp.catalog import (
    STDIO,
    McpCatalog,
    McpServerInfo,
    header_values,
    server_spec,
)
from coze_lab.core.mcp.client import McpConnections, McpSettings, McpUnreachable, check_command
from coze_lab.core.net import OutboundPolicy
from coze_lab.core.secrets import SecretBox
from coze_lab.store import Database

#: seconds a server's tool list is reused (a chat lists the tools of its bot's servers)
TOOLS_TTL_S = 30.0


@dataclass(frozen=True)
class McpToolInfo:
    """A tool an MCP server offers: its name, description and JSON Schema of arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


@dataclass(frozen=True)
class McpResult:
    """What a tool call gave: ``output`` (text for a model, truncated), ``data`` (the
    structured content, if any), ``ok`` False for a tool error or an unreachable server."""

    ok: bool
    output: str
    data: Any = None
    latency_ms: float = 0.0


class McpService:
    """MCP servers of a space, as tools for bots and workflow nodes.

    Example:
        >>> server = mcp.add(user.id, {"name": "calc", "command": "calc-mcp"})  # doctest: +SKIP
        >>> [t.name for t in await mcp.tools(user.id, server.id)]              # doctest: +SKIP
        ['add']
        >>> (await mcp.call(user.id, server.id, "add", {"a": 1, "b": 2})).output  # doctest: +SKIP
        '3'
    """

    def __init__(
        self,
        db: Database,
        *,
        secrets: SecretBox,
        policy: OutboundPolicy,
        settings: McpSettings | None = None,
        clock: Clock = utcnow,
    ) -> None:
        self.settings = settings or McpSettings()
        self.catalog = McpCatalog(db, secrets, clock)
        self.connections = McpConnections(self.settings, policy)
        self._tools: dict[tuple[int, int], tuple[float, Any, list[McpToolInfo]]] = {}
        self.list = self.catalog.list
        self.get = self.catalog.get
        self.clear_credentials = self.catalog.clear_credentials
        self.in_space = self.catalog.in_space

    def add(
        self, user_id: int, body: Mapping[str, Any], *, space_id: int | None = None
    ) -> McpServerInfo:
        """Add a server from a studio body (see :func:`~coze_lab.core.mcp.catalog.server_spec`);
        a stdio command must be one the configuration allows."""
        spec = server_spec(body)
        if spec.transport == STDIO:
            check_command(spec.command or "", self.settings)
        return self.catalog.add(user_id, spec, space_id=space_id)

    def delete(self, user_id: int, server_id: int) -> None:
        self.catalog.delete(user_id, server_id)
        self._tools = {k: v for k, v in self._tools.items() if k[0] != server_id}

    def set_credentials(self, user_id: int, server_id: int, headers: Any) -> list[str]:
        names = self.catalog.set_credentials(user_id, server_id, header_values(headers))
        self._tools.pop((server_id, user_id), None)
        return names

    async def tools(self, user_id: int, server_id: int) -> list[McpToolInfo]:
        """The server's tools (asked for at most every ``TOOLS_TTL_S`` seconds)."""
        endpoint = self.catalog.endpoint(user_id, server_id)
        key = (server_id, user_id)
        cached = self._tools.get(key)
        fresh = cached is not None and time.monotonic() - cached[0] < TOOLS_TTL_S
        if cached is not None and fresh and cached[1] == endpoint.updated_at:
            return cached[2]

        async def listing(client: Any) -> list[types.Tool]:
            tools: list[types.Tool] = []
            cursor = None
            for _ in range(20):
                page = await client.list_tools(cursor=cursor)
                tools += page.tools
                cursor = page.next_cursor
                if not cursor:
                    break
            return tools

        try:
            found = await self.connections.run(user_id, endpoint, listing)
        except MCPError as exc:
            raise McpUnreachable(
                f"the MCP server {endpoint.name} did not list its tools: {exc.error.message}"
            ) from exc
        infos = [
            McpToolInfo(t.name, t.description or "", dict(t.input_schema or {"type": "object"}))
            for t in found
        ]
        self._tools[key] = (time.monotonic(), endpoint.updated_at, infos)
        return infos

    async def call(
        self, user_id: int, server_id: int, tool: str, arguments: Mapping[str, Any]
    ) -> McpResult:
        """Call ``tool`` as ``user_id``. A tool error, an unknown tool or a server that
        cannot be reached is a result with ``ok=False`` (the model reads why); a server
        the user cannot see raises NotFound."""
        endpoint = self.catalog.endpoint(user_id, server_id)
        started = time.perf_counter()

        async def calling(client: Any) -> types.CallToolResult:
            return await client.call_tool(tool, dict(arguments))

        try:
            result = await self.connections.run(user_id, endpoint, calling)
        except MCPError as exc:
            return self._result(False, f"error: {exc.error.message}", None, started)
        except NotFound:
            raise
        except CozeLabError as exc:
            return self._result(False, f"error: {exc.msg}", None, started)
        return self._result(
            not result.is_error, _text(result.content), result.structured_content, started
        )

    def _result(self, ok: bool, text: str, data: Any, started: float) -> McpResult:
        limit = self.settings.max_output_chars
        if len(text) > limit:
            text = text[:limit] + "…[truncated]"
        latency = round((time.perf_counter() - started) * 1000, 3)
        return McpResult(ok, text, data, latency)

    async def close(self) -> None:
        await self.connections.close()


def _text(content: list[Any]) -> str:
    parts = []
    for block in content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{getattr(block, 'type', 'content')}]")
    return "\n".join(parts)
