"""Prepared writes for hot paths: compiled once per dialect, executed by the DBAPI cursor.

Values go through the columns' and parameters' own bind processors (JSON, UTC datetimes),
so what is written is exactly what the ORM and Core reads expect; only SQLAlchemy's
per-call statement building, compilation and cache-key work is skipped. Writes only:
results of a prepared statement carry no type processing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, CursorResult, Executable, Table, insert
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError

Compiled = tuple[str, list[str] | None, dict[str, Callable[[Any], Any] | None], dict[str, Any]]


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
        self._compiled: dict[str, Compiled] = {}

    def _for(self, dialect: Dialect) -> Compiled:
        key = f"{dialect.name}:{dialect.paramstyle}"
        if key not in self._compiled:
            compiled = self.statement.compile(dialect=dialect)
            order = list(compiled.positiontup or []) if compiled.positional else None
            processors = {
                name: bind.type.dialect_impl(dialect).bind_processor(dialect)
                for name, bind in compiled.binds.items()
            }
            literals = {name: bind.value for name, bind in compiled.binds.items()}
            self._compiled[key] = (str(compiled), order, processors, literals)
        return self._compiled[key]

    def _args(self, compiled: Compiled, row: Mapping[str, Any]) -> Any:
        _, order, processors, literals = compiled
        values = {}
        for name, processor in processors.items():
            value = row[name] if name in row else literals[name]  # literals in the statement
            values[name] = processor(value) if processor is not None else value
        return tuple(values[k] for k in order) if order is not None else values

    def run(self, connection: Connection, params: Mapping[str, Any]) -> CursorResult[Any]:
        compiled = self._for(connection.dialect)
        return connection.exec_driver_sql(compiled[0], self._args(compiled, params))

    def run_many(self, connection: Connection, rows: Iterable[Mapping[str, Any]]) -> None:
        """Straight to the DBAPI cursor, inside the connection's transaction (nothing is
        read back, so SQLAlchemy's execution context would only cost time)."""
        compiled = self._for(connection.dialect)
        params = [self._args(compiled, row) for row in rows]
        if not params:
            return
        dbapi = connection.dialect.loaded_dbapi
        cursor = connection.connection.cursor()
        try:
            if len(params) == 1:
                cursor.execute(compiled[0], params[0])
            else:
                cursor.executemany(compiled[0], params)
        except dbapi.Error as exc:  # the same exception classes as any other statement
            raise DBAPIError.instance(compiled[0], params, exc, dbapi.Error) from exc
        finally:
            cursor.close()


class BulkInsert(Prepared):
    """``BulkInsert(table).run(connection, rows)`` inserts ``rows`` (dicts of every column)."""

    def __init__(self, table: Table) -> None:
        super().__init__(insert(table))
        self.table = table

    def run(self, connection: Connection, rows: Iterable[Mapping[str, Any]]) -> None:  # type: ignore[override]
        self.run_many(connection, rows)
