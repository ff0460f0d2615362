"""Table tools of a bot with tables (NL2SQL in chat): one tool per table, named after it,
whose description carries the table's schema. The model writes one SQL statement; it runs
through :meth:`TableService.execute`, the database node's sqlglot checks and per-user filter.
SQL that fails them is the tool's error for the model, and nothing runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from coze_lab.core.bots import BotConfig
from coze_lab.core.chat.tools import Tool, ToolOutcome, error_outcome, function_name, tool_text
from coze_lab.core.errors import CozeLabError, InvalidParameter
from coze_lab.core.memory.nl2sql import tool_description
from coze_lab.core.memory.tables import TableService


def table_tools(owner_id: int, config: BotConfig, scene: str, tables: TableService) -> list[Tool]:
    """One tool per table of ``config.tables``: ``{sql}`` → ``{"rows": [...], "count": n}``.

    ``owner_id``'s rows of the ``scene`` (draft in the Playground, online when published)
    are the only rows the SQL sees or changes.

    Example:
        >>> tools = table_tools(user.id, config, "draft", runtime.tables)  # doctest: +SKIP
        >>> tools[0].name, tools[0].parameters["required"]                  # doctest: +SKIP
        ('sales', ['sql'])
    """
    found: list[Tool] = []
    for entry in config.tables:
        info = tables.get(owner_id, entry.table_id)
        try:
            description = tool_description(info, scene, allow_writes=entry.allow_writes)
        except CozeLabError:  # not published: the model learns it when it calls the tool
            description = f"Run one SQL statement on the table {info.name} (not published)."
        found.append(
            Tool(
                name=function_name(info.name),
                description=description,
                parameters={
                    "type": "object",
                    "properties": {
                        "sql": {
                            "type": "string",
                            "description": f"one SQL statement on {info.name}",
                        }
                    },
                    "required": ["sql"],
                },
                kind="table",
                invoke=_runner(owner_id, entry.table_id, entry.allow_writes, scene, tables),
                ref={"table_id": str(entry.table_id)},
            )
        )
    return found


def _runner(
    owner_id: int, table_id: int, allow_writes: bool, scene: str, tables: TableService
) -> Callable[[dict[str, Any]], Awaitable[ToolOutcome]]:
    async def invoke(arguments: dict[str, Any]) -> ToolOutcome:
        sql = arguments.get("sql")
        try:
            if not isinstance(sql, str) or not sql.strip():
                raise InvalidParameter("give the SQL as the string argument 'sql'")
            result = await asyncio.to_thread(
                tables.execute, owner_id, table_id, scene, sql, {}, allow_writes=allow_writes
            )
        except CozeLabError as exc:
            return error_outcome(exc)
        return ToolOutcome(tool_text(result))

    return invoke
