"""``cl.mcp``: MCP servers of a space from a notebook (the studio API of ``cl.connect()``).

>>> calc = cl.mcp.add("calc", command="uvx", args=["mcp-server-calculator"])  # doctest: +SKIP
>>> [t["name"] for t in calc.tools()]                                        # doctest: +SKIP
['add']
>>> bot = cl.Bot("Adder", prompt="Add.", mcp_servers=[calc])                 # doctest: +SKIP
>>> wf.mcp("sum", server=calc, tool="add", inputs={"a": 1, "b": 2})          # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coze_lab.notebook.http import StudioClient


class McpServer:
    """A stored MCP server: its tools, your headers for it (HTTP servers), deletion."""

    def __init__(self, data: dict[str, Any], studio: StudioClient) -> None:
        self.data = data
        self._studio = studio

    @property
    def id(self) -> int:
        return int(self.data["id"])

    @property
    def name(self) -> str:
        return str(self.data["name"])

    def tools(self) -> list[dict[str, Any]]:
        """The server's tools: ``{name, description, input_schema}`` each."""
        return list(self._studio.request("GET", f"mcp/servers/{self.id}/tools")["tools"])

    def set_credentials(self, headers: Mapping[str, str]) -> list[str]:
        """Store your headers for an HTTP server (encrypted; only the names come back)."""
        answer = self._studio.request(
            "PUT", f"mcp/servers/{self.id}/credentials", {"headers": dict(headers)}
        )
        return list(answer["configured"])

    def delete(self) -> None:
        self._studio.request("DELETE", f"mcp/servers/{self.id}")

    def __repr__(self) -> str:
        where = self.data.get("url") or self.data.get("command")
        return f"McpServer({self.name!r}, id={self.id}, {self.data['transport']}: {where})"


def add(
    name: str,
    *,
    command: str | None = None,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    description: str = "",
    space: str | int | None = None,
) -> McpServer:
    """Add a stdio server (``command``, ``args``, ``env``) or a streamable-HTTP one
    (``url``, with your ``headers``) to ``space`` (default: the connection's space)."""
    studio = _studio(space)
    body: dict[str, Any] = {"name": name, "description": description}
    if url is not None:
        body["url"] = url
    if command is not None:
        body.update(command=command, args=list(args), env=dict(env or {}))
    server = McpServer(studio.request("POST", "mcp/servers", body), studio)
    if headers:
        server.set_credentials(headers)
    return server


def servers(*, space: str | int | None = None) -> list[McpServer]:
    """The MCP servers of ``space`` (default: the connection's space)."""
    studio = _studio(space)
    return [McpServer(s, studio) for s in studio.request("GET", "mcp/servers")["servers"]]


def _studio(space: str | int | None = None) -> StudioClient:
    from coze_lab.notebook.connect import in_space

    return in_space(None, space)


__all__ = ["McpServer", "add", "servers"]
