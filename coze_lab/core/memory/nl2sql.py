"""Natural language to SQL on user tables: the schema text a model sees, the prompt that
asks for one statement, and the SQL taken out of its answer.

The SQL a model writes is never trusted: it goes through :meth:`TableService.execute`,
the same sqlglot checks and per-user filter as the database node's custom SQL.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import sqlglot
from sqlglot import exp

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.memory.tables import TableInfo

_FENCE = re.compile(r"```(?:sql|SQL)?\s*\n?(.*?)```", re.DOTALL)
_STARTS = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", re.IGNORECASE)
_INSIDE = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|WITH)\b")
_SQL_TYPES = {
    "text": "TEXT",
    "number": "INTEGER",
    "float": "REAL",
    "boolean": "BOOLEAN",
    "date": "TIMESTAMP",
}


def describe(info: TableInfo, scene: str = "draft") -> str:
    """The table as a model reads it: ``name(column TYPE -- description, ...)``.

    Example:
        >>> from datetime import datetime
        >>> from coze_lab.core.memory.tables import Field
        >>> now = datetime(2026, 1, 1)
        >>> info = TableInfo(1, 1, None, "sales", "orders", (Field("city", "text"),), None,
        ...                  now, now, None)
        >>> print(describe(info))
        sales (orders): id INTEGER, created_at TIMESTAMP, city TEXT
    """
    columns = ["id INTEGER", "created_at TIMESTAMP"]
    for field in info.fields_for(scene):
        column = f"{field.name} {_SQL_TYPES[field.type]}"
        columns.append(f"{column} -- {field.description}" if field.description else column)
    about = f" ({info.description})" if info.description else ""
    return f"{info.name}{about}: " + ", ".join(columns)


def tool_description(info: TableInfo, scene: str, *, allow_writes: bool) -> str:
    """The description of a bot's table tool: what it does and the table's schema."""
    verbs = "SELECT, INSERT, UPDATE or DELETE" if allow_writes else "SELECT (read only)"
    return (
        f"Run one SQL statement ({verbs}) on the table {describe(info, scene)}."
        " Only this table; no WITH, no semicolons; write values as literals."
        " You see and change only the current user's rows; id and created_at are set for you."
    )


def sql_messages(
    question: str, tables: Sequence[TableInfo], scene: str, *, allow_writes: bool
) -> list[dict[str, Any]]:
    """The chat messages that ask a model for the SQL answering ``question``."""
    schemas = "\n".join(f"- {describe(t, scene)}" for t in tables)
    verbs = "SELECT, INSERT, UPDATE or DELETE" if allow_writes else "only SELECT"
    system = (
        "You translate a request into exactly one SQL statement for these tables:\n"
        f"{schemas}\n"
        f"Use {verbs}; one table per statement; no WITH, no comments. Write values as"
        " literals. Answer with the SQL only."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def extract_sql(answer: str) -> str:
    """The SQL in a model's answer: a fenced block's content; else the text, from its first
    upper-case SQL keyword when prose comes first.

    Example:
        >>> extract_sql("Here:\\n```sql\\nSELECT 1 FROM t;\\n```")
        'SELECT 1 FROM t'
        >>> extract_sql("The query is SELECT n FROM t")
        'SELECT n FROM t'
    """
    match = _FENCE.search(answer)
    if match:
        sql = match.group(1)
    elif _STARTS.match(answer) or not (inside := _INSIDE.search(answer)):
        sql = answer
    else:
        sql = answer[inside.start() :]
    sql = sql.strip().rstrip(";").strip()
    if not sql:
        raise InvalidParameter("the model wrote no SQL")
    return sql


def pick_table(sql: str, tables: Sequence[TableInfo]) -> TableInfo:
    """The table of ``tables`` the statement works on (the first one it names); the
    statement's checks then refuse any other table in it.

    Example:
        >>> from datetime import datetime
        >>> now = datetime(2026, 1, 1)
        >>> a, b = (TableInfo(i, 1, None, n, "", (), None, now, now, None) for i, n in
        ...         ((1, "sales"), (2, "stock")))
        >>> pick_table("SELECT * FROM stock", [a, b]).name
        'stock'
    """
    if len(tables) == 1:
        return tables[0]
    by_name = {t.name: t for t in tables}
    try:
        statements = [s for s in sqlglot.parse(sql) if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise InvalidParameter(f"the SQL does not parse: {str(exc).splitlines()[0][:200]}") from exc
    for statement in statements[:1]:
        for table in statement.find_all(exp.Table):
            if table.name in by_name:
                return by_name[table.name]
    raise InvalidParameter(f"the SQL names none of the tables {sorted(by_name)}")
