"""MCP, both ways: tools of MCP servers for bots and workflows (``McpService``), and
coze_lab's published workflows and bots served as MCP tools (``coze_lab.core.mcp.serving``).
"""

from coze_lab.core.mcp.catalog import Endpoint, McpServerInfo, server_spec
from coze_lab.core.mcp.client import McpSettings, McpUnreachable
from coze_lab.core.mcp.service import McpResult, McpService, McpToolInfo

__all__ = [
    "Endpoint",
    "McpResult",
    "McpServerInfo",
    "McpService",
    "McpSettings",
    "McpToolInfo",
    "McpUnreachable",
    "server_spec",
]
