"""Plugins: OpenAPI 3 tools with service-token and OAuth 2 auth, draft and online versions.

Bots and workflows call tools through ``PluginService``:

    >>> defs = plugins.tool_definitions(user_id, [tool_id], scene="draft")   # doctest: +SKIP
    >>> result = await plugins.call_tool(user_id, tool_id, {"city": "Oslo"},
    ...                                  scene="draft")                      # doctest: +SKIP
"""

from coze_lab.core.plugins.problems import PluginSpecError, Problem
from coze_lab.core.plugins.service import PluginService, PluginSettings
from coze_lab.core.plugins.types import (
    CallRecord,
    PluginInfo,
    ToolDefinition,
    ToolInfo,
    ToolResult,
)

__all__ = [
    "CallRecord",
    "PluginInfo",
    "PluginService",
    "PluginSettings",
    "PluginSpecError",
    "Problem",
    "ToolDefinition",
    "ToolInfo",
    "ToolResult",
]
