"""Studio API for MCP servers: add, list, delete, your credentials, their tools."""

from __future__ import annotations

import json
from typing import Any

from coze_lab.core import connectors
from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import parse_id
from coze_lab.core.json_input import parse_json
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.envelope import error_body


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


class McpEndpointHandler(CozeHandler):
    """``/coze_lab/mcp``: coze_lab as an MCP server (streamable HTTP, JSON answers, no
    session), authenticated by ``Authorization: Bearer <personal access token>``. Every
    failure is a JSON-RPC error body, so MCP clients can tell why."""

    def check_xsrf_cookie(self) -> None:
        """Only a bearer token authenticates here (never a cookie): nothing to forge."""

    async def post(self) -> None:
        from coze_lab.core.mcp.serving import Caller

        principal = self.principal()
        caller = Caller(
            principal.user_id,
            principal.scopes,
            principal.connector_id or connectors.API,
        )
        try:
            body = parse_json(bytes(self._received or b""))
        except InvalidParameter as exc:
            self.set_status(400)
            self._rpc_error(-32700, f"Parse error: {exc.msg}")
            return
        answer = await self.runtime.mcp_endpoint.handle(caller, body)
        if answer is None:
            self.set_status(202)
            self.finish()
            return
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(answer))

    def _rpc_error(self, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"jsonrpc": "2.0", "id": None, "error": error}))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc_info = kwargs.get("exc_info")
        exc = exc_info[1] if exc_info else None
        if status_code == 401:
            self.set_header("WWW-Authenticate", 'Bearer realm="coze_lab"')
        if status_code == 405:
            self.set_header("Allow", "POST")
        body = error_body(status_code, exc, self._reason)
        self._rpc_error(-32001 if status_code in (401, 403) else -32600, body["msg"], body)
