"""Plain INSERTs for hot paths: compiled once per dialect, executed by the DBAPI cursor.

Values go through the columns' own bind processors (JSON, UTC datetimes), so what is
written is exactly what the ORM and Core reads expect; only SQLAlchemy's per-statement
compilation and caching work is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, Table, insert
from sqlalchemy.engine import Dialect


class BulkInsert:
    """``BulkInsert(table).run(connection, rows)`` inserts ``rows`` (dicts of every column).

    Example:
        >>> events = BulkInsert(RunEvent.__table__)          # doctest: +SKIP
        >>> events.run(connection, [{"id": 1, "run_id": 2, ...}])  # doctest: +SKIP
    """

    def __init__(self, table: Table) -> None:
        self.table = table
        self._compiled: dict[
            str, tuple[str, list[str] | None, dict[str, Callable[[Any], Any] | None]]
        ] = {}

    def _for(
        self, dialect: Dialect
    ) -> tuple[str, list[str] | None, dict[str, Callable[[Any], Any] | None]]:
        key = dialect.name + ":" + str(dialect.paramstyle)
        if key not in self._compiled:
            compiled = insert(self.table).compile(dialect=dialect)
            order = list(compiled.positiontup or []) if compiled.positional else None
            processors = {
                c.key: c.type.dialect_impl(dialect).bind_processor(dialect)
                for c in self.table.columns
            }
            self._compiled[key] = (str(compiled), order, processors)
        return self._compiled[key]

    def run(self, connection: Connection, rows: Iterable[Mapping[str, Any]]) -> None:
        sql, order, processors = self._for(connection.dialect)
        params: list[Any] = []
        for row in rows:
            values = {k: (p(row[k]) if p is not None else row[k]) for k, p in processors.items()}
            params.append(tuple(values[k] for k in order) if order is not None else values)
        if params:
            connection.exec_driver_sql(sql, params)
