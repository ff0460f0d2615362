"""Studio API for MCP servers: add, list, delete, your credentials, their tools."""

from __future__ import annotations

from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler


class McpArea(CozeHandler):
    AUTH_RESOURCE = "coze_lab.mcp"


class McpServersHandler(McpArea):
    """GET: a space's MCP servers (``?space_id=``, default personal). POST: add one."""

    def get(self) -> None:
        user = self.studio_user()
        servers = self.runtime.mcp.list(user.id, space_id=self.space_query())
        self.reply({"servers": [serialize.mcp_server(s) for s in servers]})

    def post(self) -> None:
        user = self.studio_user()
        info = self.runtime.mcp.add(user.id, self.json_body(), space_id=self.space_query())
        self.reply(serialize.mcp_server(info), status=201)


class McpServerHandler(McpArea):
    def get(self, server_id: str) -> None:
        user = self.studio_user()
        info = self.runtime.mcp.get(user.id, parse_id(server_id, "server_id"))
        self.reply(serialize.mcp_server(info))

    def delete(self, server_id: str) -> None:
        user = self.studio_user()
        self.runtime.mcp.delete(user.id, parse_id(server_id, "server_id"))
        self.reply(None)


class McpToolsHandler(McpArea):
    """The server's tools (a stdio server is started; an HTTP one is asked with your headers)."""

    async def get(self, server_id: str) -> None:
        user = self.studio_user()
        tools = await self.runtime.mcp.tools(user.id, parse_id(server_id, "server_id"))
        self.reply({"tools": [t.to_dict() for t in tools]})


class McpCredentialsHandler(McpArea):
    """PUT ``{"headers": {"Authorization": "Bearer ..."}}``: stored encrypted, never returned."""

    def put(self, server_id: str) -> None:
        user = self.studio_user()
        names = self.runtime.mcp.set_credentials(
            user.id, parse_id(server_id, "server_id"), self.json_body().get("headers")
        )
        self.reply({"configured": names})

    def delete(self, server_id: str) -> None:
        user = self.studio_user()
        self.runtime.mcp.clear_credentials(user.id, parse_id(server_id, "server_id"))
        self.reply(None)
