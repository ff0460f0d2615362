"""Bots: configuration, drafts and published versions per connector.

Example:
    >>> from coze_lab.core.bots import BotConfig
    >>> BotConfig().edited({"prompt": "Hi {{name}}"}).prompt
    'Hi {{name}}'
"""

from __future__ import annotations

from coze_lab.core.bots.config import (
    BotConfig,
    BotEdit,
    BotTable,
    ClientFunction,
    McpServerRef,
    PluginTool,
    Variable,
)
from coze_lab.core.bots.service import BotInfo, BotService, ResolvedBot

__all__ = [
    "BotConfig",
    "BotEdit",
    "BotInfo",
    "BotService",
    "BotTable",
    "ClientFunction",
    "McpServerRef",
    "PluginTool",
    "ResolvedBot",
    "Variable",
]
