"""Prepared writes for hot paths: compiled once per dialect, executed by the DBAPI cursor.

Values go through the columns' and parameters' own bind processors (JSON, UTC datetimes),
so what is written is exactly what the ORM and Core reads expect; only SQLAlchemy's
per-call statement building, compilation and cache-key work is skipped. Writes only:
results of a prepared statement carry no type processing.

They run on a SQLAlchemy ``Connection`` in a transaction or on the ``DriverConnection`` of
``Database.hot_write`` (a long-lived SQLite connection, no pool checkout).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import Connection, Executable, Table, insert
from sqlalchemy.engine import Dialect

from coze_lab.store.db import DriverConnection
from coze_lab.store.types import UTCDateTime

_MISSING = object()


class _Compiled:
    """A statement's SQL for one dialect and how to bind a row: for each parameter in
    order, its name, its bind processor and its value when the statement fixes it."""

    __slots__ = ("fields", "positional", "sql")

    def __init__(self, statement: Executable, dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)
        names = list(compiled.positiontup or []) if compiled.positional else list(compiled.binds)
        self.sql = str(compiled)
        self.positional = bool(compiled.positional)
        #: name, bind processor, what it makes of None (``_MISSING``: ask it), fixed value
        self.fields: list[tuple[str, Callable[[Any], Any] | None, Any, Any]] = []
        for name in names:
            bind = compiled.binds[name]
            processor = _fast(bind.type, dialect) or bind.type.dialect_impl(dialect).bind_processor(
                dialect
            )
            none = None
            if processor is not None:
                try:
                    none = processor(None)  # JSON's is 'null' text, most others None
                except Exception:  # a type that refuses None is asked every time
                    none = _MISSING
            self.fields.append((name, processor, none, bind.value))

    def args(self, row: Mapping[str, Any]) -> Any:
        values = []
        for name, processor, none, literal in self.fields:
            value = row.get(name, _MISSING)
            if value is _MISSING:  # a value the statement fixes
                value = literal
            if processor is None:
                values.append(value)
            elif value is None and none is not _MISSING:
                values.append(none)
            else:
                values.append(processor(value))
        if self.positional:
            return tuple(values)
        return dict(zip([f[0] for f in self.fields], values, strict=True))


def _sqlite_utc(value: datetime | None) -> str | None:
    """``UTCDateTime`` on SQLite in one step: naive UTC text, SQLAlchemy's format."""
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("UTCDateTime needs a timezone-aware datetime")
    if value.tzinfo is not timezone.utc:
        value = value.astimezone(timezone.utc)
    return value.replace(tzinfo=None).isoformat(" ", "microseconds")


def _fast(type_: Any, dialect: Dialect) -> Callable[[Any], Any] | None:
    """A quicker bind processor doing exactly what the type's own does, where there is one
    (checked on sample values when the statement is compiled)."""
    if dialect.name != "sqlite" or not isinstance(type_, UTCDateTime):
        return None
    own = type_.dialect_impl(dialect).bind_processor(dialect)
    samples = (
        datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=timezone.utc),
        datetime(987, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    )
    if own is None or any(own(v) != _sqlite_utc(v) for v in (*samples, None)):
        return None
    return _sqlite_utc


def _driver(connection: Connection | DriverConnection) -> DriverConnection:
    if isinstance(connection, DriverConnection):
        return connection
    return DriverConnection(connection.connection.driver_connection, connection.dialect, connection)


class Result:
    """What a prepared statement did: ``rowcount``, and the raw rows of a read."""

    __slots__ = ("rowcount", "rows")

    def __init__(self, rowcount: int, rows: list[Any]) -> None:
        self.rowcount = rowcount
        self.rows = rows

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None


class Prepared:
    """``Prepared(update(T).where(T.id == bindparam("run"))...).run(conn, {"run": 1, ...})``.

    Example:
        >>> finish = Prepared(update(Run).where(Run.id == bindparam("run_id"))  # doctest: +SKIP
        ...                   .values(status=bindparam("status")))
        >>> finish.run(connection, {"run_id": 7, "status": "done"}).rowcount   # doctest: +SKIP
        1
    """

    def __init__(self, statement: Executable) -> None:
        self.statement = statement
        self._compiled: dict[str, _Compiled] = {}

    def _for(self, dialect: Dialect) -> _Compiled:
        key = f"{dialect.name}:{dialect.paramstyle}"
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = _Compiled(self.statement, dialect)
        return compiled

    def run(self, connection: Connection | DriverConnection, params: Mapping[str, Any]) -> Result:
        """Execute once: the rows changed (``rowcount``) and any rows read (``fetchone``)."""
        driver = _driver(connection)
        compiled = self._for(driver.dialect)
        cursor = driver.execute(compiled.sql, compiled.args(params))
        try:
            rows = cursor.fetchall() if cursor.description is not None else []
            return Result(cursor.rowcount, rows)
        finally:
            cursor.close()

    def run_many(
        self, connection: Connection | DriverConnection, rows: Iterable[Mapping[str, Any]]
    ) -> None:
        """Straight to the DBAPI cursor, inside the connection's transaction (nothing is
        read back, so SQLAlchemy's execution context would only cost time)."""
        driver = _driver(connection)
        compiled = self._for(driver.dialect)
        params = [compiled.args(row) for row in rows]
        if not params:
            return
        if len(params) == 1:
            driver.send(compiled.sql, params[0])
        else:
            driver.executemany(compiled.sql, params)


class BulkInsert(Prepared):
    """``BulkInsert(table).run(connection, rows)`` inserts ``rows`` (dicts of every column).

    On a connection that defers inserts (a group commit's pipeline, see
    :class:`Deferred`) the rows wait, to be sent with those of the other writes as one
    multi-row ``INSERT`` per table.
    """

    def __init__(self, table: Table) -> None:
        super().__init__(insert(table))
        self.table = table
        self._multi: dict[tuple[str, int], str] = {}

    def run(  # type: ignore[override]
        self, connection: Connection | DriverConnection, rows: Iterable[Mapping[str, Any]]
    ) -> None:
        driver = _driver(connection)
        if driver.deferred is not None:
            driver.deferred.add(self, driver.dialect, rows)
            return
        self.run_many(driver, rows)

    def send_rows(self, driver: DriverConnection, args: list[Any]) -> None:
        """Insert rows already bound (``_Compiled.args``) with multi-row ``INSERT``s."""
        compiled = self._for(driver.dialect)
        width = len(compiled.fields)
        step = min(MULTI_ROWS, MAX_PARAMETERS // width)
        for start in range(0, len(args), step):
            chunk = args[start : start + step]
            values = [v for row in chunk for v in (row.values() if isinstance(row, dict) else row)]
            sql = self._multi_sql(compiled, driver.dialect, width, len(chunk))
            driver.send_numbered(sql, values)

    def _multi_sql(self, compiled: _Compiled, dialect: Dialect, width: int, rows: int) -> str:
        """``INSERT … VALUES ($1, $2), ($3, $4), …`` for ``rows`` rows."""
        key = (f"{dialect.name}:{dialect.paramstyle}", rows)
        sql = self._multi.get(key)
        if sql is None:
            head, _, _ = compiled.sql.partition(" VALUES ")
            groups = (
                "(" + ", ".join(f"${row * width + col + 1}" for col in range(width)) + ")"
                for row in range(rows)
            )
            sql = self._multi[key] = f"{head} VALUES {', '.join(groups)}"
        return sql


#: rows in one multi-row ``INSERT`` of deferred inserts
MULTI_ROWS = 500
#: PostgreSQL's limit on a statement's parameters
MAX_PARAMETERS = 65535


class Deferred:
    """Inserts held back on a psycopg connection in a pipeline: per table, the rows bound
    in arrival order; written table by table in the order of their foreign keys (parents
    first).

    Only plain inserts of new rows wait; every other statement on the connection first
    writes what waits (``DriverConnection.flush``), so a read or an update sees it.
    """

    def __init__(self) -> None:
        self._rows: dict[BulkInsert, list[Any]] = {}

    def __bool__(self) -> bool:
        return bool(self._rows)

    def add(self, insert: BulkInsert, dialect: Dialect, rows: Iterable[Mapping[str, Any]]) -> None:
        compiled = insert._for(dialect)
        if dialect.driver != "psycopg":
            raise ValueError(f"deferred inserts are psycopg's, not {dialect.driver}'s")
        self._rows.setdefault(insert, []).extend(compiled.args(row) for row in rows)

    def flush(self, driver: DriverConnection) -> None:
        waiting, self._rows = self._rows, {}
        for statement in sorted(waiting, key=lambda i: _table_order(i.table)):
            if waiting[statement]:
                statement.send_rows(driver, waiting[statement])


@functools.cache
def _table_order(table: Table) -> int:
    return table.metadata.sorted_tables.index(table)
