"""Custom SQL for a database node: one statement on one user table, parsed with sqlglot,
rewritten onto the real table and limited to the user's own rows."""

from __future__ import annotations

import re

import sqlglot
from sqlalchemy import TextClause, text
from sqlalchemy.exc import StatementError
from sqlglot import exp

from coze_lab.core.errors import InvalidParameter

_DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "mysql": "mysql"}
_PYFORMAT = re.compile(r"%\((\w+)\)s")
_PROTECTED = ("id", "sys_uid", "created_at")


def scoped_statement(
    sql: str,
    *,
    logical: str,
    physical: str,
    columns: set[str],
    dialect: str,
    allow_writes: bool,
) -> tuple[TextClause, dict[str, None], bool]:
    """The statement to run, the names of system values it needs, and whether it reads.

    Example:
        >>> stmt, _, reads = scoped_statement("SELECT title FROM notes WHERE n > :p0",
        ...     logical="notes", physical="ut_1_draft", columns={"title", "n"},
        ...     dialect="sqlite", allow_writes=False)
        >>> str(stmt)
        'SELECT title FROM (SELECT * FROM ut_1_draft WHERE sys_uid = :__uid) AS notes WHERE n > :p0'
    """
    try:
        statements = [s for s in sqlglot.parse(sql) if s is not None]
    except sqlglot.errors.SqlglotError as exc:  # ParseError, TokenError (an open quote)
        raise InvalidParameter(f"the SQL does not parse: {_first_line(exc)}") from exc
    if len(statements) != 1:
        raise InvalidParameter("give exactly one SQL statement")
    tree = statements[0]
    reads = isinstance(tree, exp.Select | exp.Union)
    if not reads and not isinstance(tree, exp.Insert | exp.Update | exp.Delete):
        raise InvalidParameter("only SELECT, INSERT, UPDATE and DELETE are allowed")
    if not reads and not allow_writes:
        raise InvalidParameter("only SELECT is allowed here (allow_writes is off)")
    if tree.find(exp.With) is not None:
        raise InvalidParameter("WITH is not supported in custom SQL")
    for table in tree.find_all(exp.Table):
        if table.name != logical or table.args.get("db") or table.args.get("catalog"):
            raise InvalidParameter(f"the SQL may use only the table '{logical}'")
    for function in tree.find_all(exp.Anonymous):
        raise InvalidParameter(f"function '{function.name}' is not allowed")
    needs: dict[str, None] = {}
    if reads:
        tree = tree.transform(lambda node: _scoped_source(node, logical, physical))
    elif isinstance(tree, exp.Insert):
        needs = _scope_insert(tree, physical)
    else:
        _scope_change(tree, logical, physical)
    try:
        generated = tree.sql(dialect=_DIALECTS.get(dialect, "sqlite"))
    except sqlglot.errors.SqlglotError as exc:
        raise InvalidParameter(f"the SQL cannot be run here: {_first_line(exc)}") from exc
    return text(_PYFORMAT.sub(r":\1", generated)), needs, reads


def _scoped_source(node: exp.Expression, logical: str, physical: str) -> exp.Expression:
    if isinstance(node, exp.Table) and node.name == logical:
        mine = sqlglot.select("*").from_(physical).where("sys_uid = :__uid")
        return mine.subquery(node.alias or logical)
    return node


def _scope_change(tree: exp.Expression, logical: str, physical: str) -> None:
    target = tree.this
    if isinstance(tree, exp.Update):
        for assignment in tree.expressions:
            if assignment.this.name in _PROTECTED:
                raise InvalidParameter(f"'{assignment.this.name}' cannot be changed")
    for column in tree.find_all(exp.Column):
        if column.table == logical:
            column.set("table", None)
    target.replace(exp.to_table(physical))
    mine = sqlglot.condition("sys_uid = :__uid")
    where = tree.args.get("where")
    tree.set("where", exp.Where(this=mine if where is None else exp.and_(where.this, mine)))


def _scope_insert(tree: exp.Insert, physical: str) -> dict[str, None]:
    schema = tree.this
    values = tree.expression
    if not isinstance(schema, exp.Schema) or not isinstance(values, exp.Values):
        raise InvalidParameter("INSERT needs a column list and VALUES rows")
    names = [c.name for c in schema.expressions]
    if any(n in _PROTECTED for n in names):
        raise InvalidParameter(f"{_PROTECTED} are set by coze_lab")
    needs: dict[str, None] = {}
    for i, row in enumerate(values.expressions):
        row.set(
            "expressions",
            [
                exp.Placeholder(this=f"__id{i}"),
                exp.Placeholder(this="__uid"),
                exp.Placeholder(this="__now"),
                *row.expressions,
            ],
        )
        needs[f"__id{i}"] = None
    columns = [exp.to_identifier(n) for n in ("id", "sys_uid", "created_at", *names)]
    tree.set("this", exp.Schema(this=exp.to_table(physical), expressions=columns))
    return needs


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200]


def sql_failure(exc: StatementError, *, physical: str, logical: str) -> str:
    """The database's reason for a failed statement, in the user's terms: its first line,
    the real table named as the user's table, without the rewritten SQL or parameters.

    Example:
        >>> from sqlalchemy.exc import OperationalError
        >>> exc = OperationalError("SELECT ...", {}, Exception("no such column: ut_1_draft.x"))
        >>> sql_failure(exc, physical="ut_1_draft", logical="notes")
        'no such column: notes.x'
    """
    orig = exc.orig if exc.orig is not None else exc
    args = getattr(orig, "args", ())
    # pymysql puts (code, message) in args; the others a message
    text = args[1] if len(args) == 2 and isinstance(args[0], int) else str(orig)
    reason = str(text).strip().splitlines()[0] if str(text).strip() else type(orig).__name__
    reason = re.sub(r"\s*\(Background on this error at: [^)]*\)", "", reason)
    return reason.replace(physical, logical)[:300]
