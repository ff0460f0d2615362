"""The database node: query, insert, update, delete or custom SQL on one user table.

Values always travel as bound parameters: conditions and values are rendered to typed
values, and references inside custom SQL become placeholders (``bind_sql``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import parse_id
from coze_lab.core.memory.nl2sql import extract_sql, pick_table, sql_messages
from coze_lab.core.memory.tables import TableInfo
from coze_lab.core.workflows.nodes.base import (
    NodeContext,
    NodeError,
    NodeKind,
    NodeResult,
    require,
)
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError

OPERATIONS = ("query", "insert", "update", "delete", "sql", "nl")
#: tables one natural-language node may offer its model
MAX_NL_TABLES = 10
_OUTPUTS = {
    "query": {"rows": "array", "count": "integer"},
    "insert": {"id": "string", "count": "integer"},
    "update": {"count": "integer"},
    "delete": {"count": "integer"},
    "sql": {"rows": "array", "count": "integer"},
    "nl": {"rows": "array", "count": "integer", "sql": "string", "table": "string"},
}


class DatabaseNode(NodeKind):
    """``config``: ``table`` (its name; or ``table_id``), ``operation`` and per operation
    ``fields``/``where``/``logic``/``order_by``/``limit`` (query), ``values`` (insert,
    update), ``where`` (update, delete), ``sql`` + ``allow_writes`` (sql), ``query`` (a
    request in natural language, a template) + ``model`` + ``allow_writes`` (nl: a model
    writes the SQL, which then passes the checks of custom SQL; the output has it as
    ``sql``, the table it used as ``table``; ``tables``, a list of names, instead of
    ``table`` lets the model pick one). Runs of a published version use the table's online
    rows, other runs its draft rows."""

    type = "database"
    templated = ("where", "values", "query")
    bound = ("sql",)

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return dict(_OUTPUTS.get(node.config.get("operation", ""), {}))

    def check(self, node: NodeSpec) -> None:
        operation = node.config.get("operation")
        if operation not in OPERATIONS:
            raise WorkflowDefinitionError(f"operation must be one of {OPERATIONS}", node.id)
        names = node.config.get("tables")
        if operation == "nl" and names is not None:
            if (
                not isinstance(names, list)
                or not 1 <= len(names) <= MAX_NL_TABLES
                or not all(isinstance(n, str) and n for n in names)
            ):
                raise WorkflowDefinitionError(
                    f"tables must be a list of 1..{MAX_NL_TABLES} table names", node.id
                )
        elif "table_id" not in node.config:
            require(node, "table", str, "a table name")
        if operation == "sql":
            require(node, "sql", str, "the SQL")
        if operation == "nl":
            require(node, "query", str, "the request in natural language")
        if operation in ("insert", "update") and not isinstance(node.config.get("values"), dict):
            raise WorkflowDefinitionError(f"{operation} needs values {{field: value}}", node.id)
        if operation in ("update", "delete") and not node.config.get("where"):
            raise WorkflowDefinitionError(f"{operation} needs where conditions", node.id)
        where = node.config.get("where", [])
        if not isinstance(where, list) or not all(isinstance(w, dict) for w in where):
            raise WorkflowDefinitionError("where must be a list of {field, op, value}", node.id)

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        tables = ctx.tables
        config = node.config
        owner, scene = ctx.owner_id, ctx.scene
        operation = config["operation"]
        if operation == "nl":
            if "tables" in config:
                infos = [tables.find(owner, name) for name in config["tables"]]
            elif "table_id" in config:
                infos = [tables.get(owner, parse_id(config["table_id"], "table_id"))]
            else:
                infos = [tables.find(owner, config["table"])]
            return await self._natural(ctx, node, infos, str(inputs.get("__query__") or ""))
        if "table_id" in config:
            table_id = parse_id(config["table_id"], "table_id")
        else:
            table_id = tables.find(owner, config["table"]).id
        where = inputs.get("__where__") or []
        logic = config.get("logic", "and")
        if operation == "query":
            rows = tables.query(
                owner,
                table_id,
                scene,
                fields=config.get("fields") or (),
                where=where,
                logic=logic,
                order_by=config.get("order_by") or (),
                limit=int(config.get("limit", 100)),
            )
            return NodeResult({"rows": rows, "count": len(rows)})
        if operation == "insert":
            row_id = tables.insert(owner, table_id, scene, inputs["__values__"])
            return NodeResult({"id": str(row_id), "count": 1})
        if operation == "update":
            count = tables.update(
                owner, table_id, scene, where=where, values=inputs["__values__"], logic=logic
            )
            return NodeResult({"count": count})
        if operation == "delete":
            return NodeResult(
                {"count": tables.delete_rows(owner, table_id, scene, where=where, logic=logic)}
            )
        bound = inputs["__sql__"]
        result = tables.execute(
            owner,
            table_id,
            scene,
            bound["sql"],
            bound["params"],
            allow_writes=bool(config.get("allow_writes")),
        )
        return NodeResult(result)

    async def _natural(
        self, ctx: NodeContext, node: NodeSpec, infos: list[TableInfo], query: str
    ) -> NodeResult:
        """A model writes the SQL for ``query``; it runs as custom SQL would (checked,
        scoped to the user) on the table it names; a refusal fails the node naming the SQL."""
        config = node.config
        writes = bool(config.get("allow_writes"))
        messages = sql_messages(query, infos, ctx.scene, allow_writes=writes)
        answer, usage = await ctx.complete(config.get("model", "default"), messages)
        sql = answer
        try:
            sql = extract_sql(answer)
            info = pick_table(sql, infos)
            result = await asyncio.to_thread(
                ctx.tables.execute, ctx.owner_id, info.id, ctx.scene, sql, {}, allow_writes=writes
            )
        except InvalidParameter as exc:
            shown = exc.msg if sql in exc.msg else f"{exc.msg} (SQL: {sql[:500]})"
            raise NodeError(f"the generated SQL was refused: {shown}") from None
        return NodeResult({**result, "sql": sql, "table": info.name}, usage=usage)
