"""MCP, both ways: tools of MCP servers for bots and workflows
(``coze_lab.core.mcp.service.McpService``), and coze_lab's published workflows and bots
served as MCP tools (``coze_lab.core.mcp.serving``). The package itself loads no part of
the ``mcp`` SDK (the server starts without it; the first MCP call imports it).
"""

from coze_lab.core.mcp.catalog import Endpoint, McpServerInfo, server_spec

__all__ = ["Endpoint", "McpServerInfo", "server_spec"]
