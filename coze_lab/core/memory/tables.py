"""User tables (Coze's database memory): typed fields, real SQL tables, draft and online.

A table's definition belongs to a space (its members see, use and change it); its rows do
not: every row carries the user it belongs to (``sys_uid``) and every statement is filtered
on it; values are always bound parameters, never pasted into SQL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Float,
    Index,
    MetaData,
    String,
    Table,
    Text,
    and_,
    cast,
    delete,
    func,
    insert,
    inspect,
    or_,
    select,
    update,
)
from sqlalchemy.exc import StatementError

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import Conflict, InvalidParameter, NotFound
from coze_lab.core.ids import new_id
from coze_lab.core.spaces import Access, Permission, visible
from coze_lab.store import Database
from coze_lab.store.models import BotRecord, UserTable
from coze_lab.store.types import UTCDateTime

FIELD_TYPES = {
    "text": Text,
    "number": BigInteger,
    "float": Float,
    "boolean": Boolean,
    "date": UTCDateTime,
}
SYSTEM_FIELDS = ("id", "sys_uid", "created_at")
SCENES = ("draft", "online")
MAX_FIELDS = 50
MAX_ROWS = 1000
#: rows one insert_many call writes (one transaction)
MAX_INSERT_ROWS = 10_000
OPERATORS = ("==", "!=", ">", ">=", "<", "<=", "contains", "not_contains", "empty", "not_empty")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    description: str = ""
    required: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "required": self.required,
        }


@dataclass(frozen=True)
class TableInfo:
    id: int
    owner_id: int
    bot_id: int | None
    name: str
    description: str
    fields: tuple[Field, ...]
    online_fields: tuple[Field, ...] | None
    created_at: datetime
    updated_at: datetime
    published_at: datetime | None
    space_id: int = 0

    def fields_for(self, scene: str) -> tuple[Field, ...]:
        if scene == "online":
            if self.online_fields is None:
                raise NotFound(f"table '{self.name}' has not been published")
            return self.online_fields
        return self.fields


def parse_fields(raw: Any) -> tuple[Field, ...]:
    """Field definitions from a request: ``[{name, type, description?, required?}]``.

    Example:
        >>> parse_fields([{"name": "title", "type": "text"}])[0].type
        'text'
    """
    if not isinstance(raw, list) or not raw or len(raw) > MAX_FIELDS:
        raise InvalidParameter(f"fields must be a list of 1..{MAX_FIELDS} fields")
    seen: set[str] = set()
    fields = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise InvalidParameter(f"fields[{i}] must be an object")
        name, kind = item.get("name"), item.get("type", "text")
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name in SYSTEM_FIELDS:
            raise InvalidParameter(
                f"fields[{i}].name must be a lower-case identifier other than {SYSTEM_FIELDS}"
            )
        if name in seen:
            raise InvalidParameter(f"fields[{i}].name '{name}' is repeated")
        if not isinstance(kind, str) or kind not in FIELD_TYPES:  # {} is unhashable: a 500
            raise InvalidParameter(f"fields[{i}].type must be one of {sorted(FIELD_TYPES)}")
        seen.add(name)
        description = item.get("description", "")
        required = item.get("required", False)
        if not isinstance(description, str) or not isinstance(required, bool):
            raise InvalidParameter(f"fields[{i}]: description is text, required a boolean")
        fields.append(Field(name, kind, description, required))
    return tuple(fields)


def physical_name(table_id: int, scene: str) -> str:
    return f"ut_{table_id}_{scene}"


def sql_table(table_id: int, scene: str, fields: Sequence[Field]) -> Table:
    """The SQLAlchemy table of one scene's rows."""
    columns = [
        Column("id", BigInteger, primary_key=True, autoincrement=False),
        Column("sys_uid", String(64), nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
    ]
    columns += [Column(f.name, FIELD_TYPES[f.type], nullable=True) for f in fields]
    name = physical_name(table_id, scene)
    # a user's rows in id order come from the index (a page never sorts the whole table)
    return Table(name, MetaData(), *columns, Index(f"ix_{name}_uid_id", "sys_uid", "id"))


class TableService:
    """Define user tables and read or change their rows.

    Example:
        >>> tables = TableService(db)                                    # doctest: +SKIP
        >>> t = tables.create(user.id, "notes", [{"name": "text"}])    # doctest: +SKIP
        >>> tables.insert(user.id, t.id, "draft", {"text": "hello"})      # doctest: +SKIP
    """

    def __init__(self, db: Database, *, clock: Clock = utcnow) -> None:
        self._db = db
        self._clock = clock

    # ---- definitions -----------------------------------------------------------------------
    def create(
        self,
        owner_id: int,
        name: Any,
        fields: Any,
        *,
        description: str = "",
        bot_id: int | None = None,
        space_id: int | None = None,
    ) -> TableInfo:
        """A new table in one of the user's spaces (None: the personal one; a bot's table
        goes to the bot's space)."""
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InvalidParameter("name must be a lower-case identifier")
        parsed = parse_fields(fields)
        now = self._clock()
        table_id = new_id()
        with self._db.write() as connection:
            access = Access.load(connection, owner_id)
            if bot_id is not None:
                bot_space = connection.scalar(
                    select(BotRecord.workspace_id).where(
                        BotRecord.id == bot_id, visible(BotRecord.workspace_id, owner_id)
                    )
                )
                if bot_space is None:
                    raise NotFound(f"bot {bot_id} does not exist")
                if space_id is not None and space_id != bot_space:
                    raise InvalidParameter("a bot's table lives in the bot's space")
                space_id = bot_space
            space = access.space(space_id)
            access.require(space, Permission.EDIT)
            exists = connection.scalar(
                select(UserTable.id).where(UserTable.space_id == space, UserTable.name == name)
            )
            if exists is not None:
                raise Conflict(f"the space has a table named '{name}' already")
            connection.execute(
                insert(UserTable),
                {
                    "id": table_id,
                    "owner_id": owner_id,
                    "space_id": space,
                    "bot_id": bot_id,
                    "name": name,
                    "description": description,
                    "fields": [f.to_dict() for f in parsed],
                    "online_fields": None,
                    "created_at": now,
                    "updated_at": now,
                    "published_at": None,
                },
            )
            sql_table(table_id, "draft", parsed).create(connection)
        return self.get(owner_id, table_id)

    def get(self, owner_id: int, table_id: int) -> TableInfo:
        with self._db.read() as connection:
            return self._visible(connection, owner_id, table_id)

    def find(self, owner_id: int, name: str) -> TableInfo:
        """A table by name: the user's personal space's, else the one of their team spaces
        that has it (a name in several team spaces is ambiguous: use the table's id)."""
        with self._db.read() as connection:
            rows = connection.execute(
                select(UserTable.__table__)
                .where(UserTable.name == name, visible(UserTable.space_id, owner_id))
                .limit(20)
            ).all()
            personal = Access.load(connection, owner_id).personal_id if len(rows) > 1 else None
        if not rows:
            raise NotFound(f"table '{name}' does not exist")
        mine = [r for r in rows if r.space_id == personal]
        if len(mine) == 1 or len(rows) == 1:
            return _info((mine or rows)[0])
        ids = ", ".join(str(r.id) for r in rows)
        raise InvalidParameter(f"several of your spaces have a table '{name}' ({ids}): use its id")

    def list(self, owner_id: int, *, space_id: int | None = None) -> list[TableInfo]:
        """The tables of a space the user belongs to (None: the personal one), by name."""
        with self._db.read() as connection:
            access = Access.load(connection, owner_id)
            space = access.space(space_id)
            access.require(space, Permission.READ)
            rows = connection.execute(
                select(UserTable.__table__)
                .where(UserTable.space_id == space)
                .order_by(UserTable.name)
            ).all()
        return [_info(r) for r in rows]

    def add_fields(self, owner_id: int, table_id: int, fields: Any) -> TableInfo:
        """Add fields to the draft (existing fields never change type or go away)."""
        added = parse_fields(fields)
        with self._db.write() as connection:
            info = self._editable(connection, owner_id, table_id)
            clash = {f.name for f in info.fields} & {f.name for f in added}
            if clash:
                raise Conflict(f"fields {sorted(clash)} exist already")
            combined = info.fields + added
            _add_columns(connection, table_id, "draft", added, combined)
            connection.execute(
                update(UserTable)
                .where(UserTable.id == table_id)
                .values(fields=[f.to_dict() for f in combined], updated_at=self._clock())
            )
        return self.get(owner_id, table_id)

    def publish(self, owner_id: int, table_id: int) -> TableInfo:
        """Give the online table the draft's fields (its rows stay; draft rows are test
        data and are not copied)."""
        with self._db.write() as connection:
            info = self._editable(connection, owner_id, table_id)
            if info.online_fields is None:
                sql_table(table_id, "online", info.fields).create(connection)
            else:
                known = {f.name for f in info.online_fields}
                new = tuple(f for f in info.fields if f.name not in known)
                _add_columns(connection, table_id, "online", new, info.fields)
            now = self._clock()
            connection.execute(
                update(UserTable)
                .where(UserTable.id == table_id)
                .values(
                    online_fields=[f.to_dict() for f in info.fields],
                    published_at=now,
                    updated_at=now,
                )
            )
        return self.get(owner_id, table_id)

    def delete(self, owner_id: int, table_id: int) -> None:
        with self._db.write() as connection:
            info = self._visible(connection, owner_id, table_id)
            Access.load(connection, owner_id).require_delete(
                info.space_id, info.owner_id, f"table {table_id}"
            )
            connection.execute(delete(UserTable).where(UserTable.id == table_id))
            for scene in SCENES:
                if scene == "draft" or info.online_fields is not None:
                    sql_table(table_id, scene, ()).drop(connection, checkfirst=True)

    # ---- rows --------------------------------------------------------------------------------
    def query(
        self,
        owner_id: int,
        table_id: int,
        scene: str,
        *,
        fields: Sequence[str] = (),
        where: Sequence[Mapping[str, Any]] = (),
        logic: str = "and",
        order_by: Sequence[Mapping[str, Any]] = (),
        limit: int = 100,
    ) -> list[dict[str, Any]]:
        table, info = self._table(owner_id, table_id, scene)
        names = list(fields) or [f.name for f in info.fields_for(scene)]
        columns = [_column(table, n) for n in ["id", *[n for n in names if n != "id"]]]
        statement = select(*columns).where(self._where(table, owner_id, where, logic))
        for item in order_by:
            column = _column(table, str(item.get("field")))
            statement = statement.order_by(column.desc() if item.get("desc") else column.asc())
        if not 1 <= int(limit) <= MAX_ROWS:
            raise InvalidParameter(f"limit must be within 1..{MAX_ROWS}")
        with self._db.read() as connection:
            rows = connection.execute(statement.order_by(table.c.id).limit(int(limit))).all()
        return [_plain(dict(r._mapping)) for r in rows]

    def insert(self, owner_id: int, table_id: int, scene: str, values: Mapping[str, Any]) -> int:
        table, info = self._table(owner_id, table_id, scene)
        row = _check_values(info.fields_for(scene), values, partial=False)
        row_id = new_id()
        with self._db.write() as connection:
            connection.execute(
                insert(table).values(
                    id=row_id, sys_uid=str(owner_id), created_at=self._clock(), **row
                )
            )
        return row_id

    def insert_many(
        self, owner_id: int, table_id: int, scene: str, rows: Sequence[Mapping[str, Any]]
    ) -> list[int]:
        """Add rows in one transaction: every row is checked first, then all are written
        (a bad row writes none). At most :data:`MAX_INSERT_ROWS` per call.

        Example:
            >>> tables.insert_many(user.id, t.id, "draft", [{"text": "a"}, {"text": "b"}])
            ... # doctest: +SKIP
            [7391..., 7391...]
        """
        if not isinstance(rows, Sequence) or isinstance(rows, str | bytes):
            raise InvalidParameter("rows must be a list of objects")
        if not 1 <= len(rows) <= MAX_INSERT_ROWS:
            raise InvalidParameter(f"give 1..{MAX_INSERT_ROWS} rows")
        table, info = self._table(owner_id, table_id, scene)
        fields = info.fields_for(scene)
        checked = []
        for i, values in enumerate(rows):
            try:
                checked.append(_check_values(fields, values, partial=False))
            except InvalidParameter as exc:
                raise InvalidParameter(f"rows[{i}]: {exc.msg}") from None
        names = [f.name for f in fields]
        now, uid = self._clock(), str(owner_id)
        ids = [new_id() for _ in checked]
        records = [
            {"id": i, "sys_uid": uid, "created_at": now, **dict.fromkeys(names), **row}
            for i, row in zip(ids, checked, strict=True)
        ]
        with self._db.write() as connection:
            connection.execute(insert(table), records)
        return ids

    def update(
        self,
        owner_id: int,
        table_id: int,
        scene: str,
        *,
        where: Sequence[Mapping[str, Any]],
        values: Mapping[str, Any],
        logic: str = "and",
    ) -> int:
        table, info = self._table(owner_id, table_id, scene)
        row = _check_values(info.fields_for(scene), values, partial=True)
        if not row:
            raise InvalidParameter("values must set at least one field")
        with self._db.write() as connection:
            return connection.execute(
                update(table).where(self._where(table, owner_id, where, logic)).values(**row)
            ).rowcount

    def delete_rows(
        self,
        owner_id: int,
        table_id: int,
        scene: str,
        *,
        where: Sequence[Mapping[str, Any]],
        logic: str = "and",
    ) -> int:
        table, _ = self._table(owner_id, table_id, scene)
        if not where:
            raise InvalidParameter("delete needs conditions (there is no 'delete everything')")
        with self._db.write() as connection:
            return connection.execute(
                delete(table).where(self._where(table, owner_id, where, logic))
            ).rowcount

    def execute(
        self,
        owner_id: int,
        table_id: int,
        scene: str,
        sql: str,
        params: Mapping[str, Any],
        *,
        allow_writes: bool = False,
    ) -> dict[str, Any]:
        """Custom SQL on this one table: parsed, checked, scoped to the user, values bound."""
        from coze_lab.core.memory.sql import scoped_statement, sql_failure

        table, info = self._table(owner_id, table_id, scene)
        statement, bound, reads = scoped_statement(
            sql,
            logical=info.name,
            physical=table.name,
            columns={f.name for f in info.fields_for(scene)} | set(SYSTEM_FIELDS),
            dialect=self._db.dialect,
            allow_writes=allow_writes,
        )
        values = {**params, "__uid": str(owner_id), "__now": self._clock()}
        values.update({name: new_id() for name in bound})  # one id per inserted row
        try:
            with self._db.write() as connection:
                result = connection.execute(statement, values)
                if reads:
                    rows = [_plain(dict(r._mapping)) for r in result.fetchmany(MAX_ROWS)]
                    return {"rows": rows, "count": len(rows)}
                return {"rows": [], "count": result.rowcount}
        except StatementError as exc:  # the rewritten SQL and real table stay out of sight
            reason = sql_failure(exc, physical=table.name, logical=info.name)
            raise InvalidParameter(f"the SQL failed: {reason} (in: {sql})") from None

    # ---- internals ------------------------------------------------------------------------------
    def _table(self, owner_id: int, table_id: int, scene: str) -> tuple[Table, TableInfo]:
        if scene not in SCENES:
            raise InvalidParameter(f"scene must be one of {SCENES}")
        info = self.get(owner_id, table_id)
        return sql_table(table_id, scene, info.fields_for(scene)), info

    def _where(
        self, table: Table, owner_id: int, where: Sequence[Mapping[str, Any]], logic: str
    ) -> Any:
        if logic not in ("and", "or"):
            raise InvalidParameter("logic must be 'and' or 'or'")
        fields = {c.name: _field_of(c) for c in table.columns if c.name not in SYSTEM_FIELDS}
        conditions = [_condition(table, item, fields) for item in where]
        mine = table.c.sys_uid == str(owner_id)
        if not conditions:
            return mine
        joined = and_(*conditions) if logic == "and" else or_(*conditions)
        return and_(mine, joined)

    def _visible(self, connection: Connection, user_id: int, table_id: int) -> TableInfo:
        """A table of one of the user's spaces; NotFound otherwise."""
        row = connection.execute(
            select(UserTable.__table__).where(
                UserTable.id == table_id, visible(UserTable.space_id, user_id)
            )
        ).first()
        if row is None:
            raise NotFound(f"table {table_id} does not exist")
        return _info(row)

    def _editable(self, connection: Connection, user_id: int, table_id: int) -> TableInfo:
        info = self._visible(connection, user_id, table_id)
        Access.load(connection, user_id).require(info.space_id, Permission.EDIT)
        return info


def _add_columns(
    connection: Connection,
    table_id: int,
    scene: str,
    new: Sequence[Field],
    all_fields: Sequence[Field],
) -> None:
    name = physical_name(table_id, scene)
    present = {c["name"] for c in inspect(connection).get_columns(name)}
    operations = Operations(MigrationContext.configure(connection))
    for field in new:
        if field.name not in present:
            operations.add_column(name, Column(field.name, FIELD_TYPES[field.type], nullable=True))


def _field_of(column: Column[Any]) -> Field:
    kind = next(k for k, t in FIELD_TYPES.items() if isinstance(column.type, t))
    return Field(column.name, kind)


def _column(table: Table, name: str) -> Any:
    if name not in table.c or name == "sys_uid":
        raise InvalidParameter(f"the table has no field '{name}'")
    return table.c[name]


def _condition(table: Table, item: Mapping[str, Any], fields: Mapping[str, Field]) -> Any:
    if not isinstance(item, Mapping):
        raise InvalidParameter("each condition must be an object {field, op, value}")
    name = str(item.get("field"))
    column = _column(table, name)
    op, value = item.get("op", "=="), item.get("value")
    if op not in OPERATORS:
        raise InvalidParameter(f"op must be one of {OPERATORS}")
    if op in ("empty", "not_empty"):
        text = func.coalesce(cast(column, Text), "")
        return text == "" if op == "empty" else text != ""
    if op in ("contains", "not_contains"):
        found = cast(column, Text).contains(str(value), autoescape=True)
        return found if op == "contains" else ~found
    if value is None:
        if op in ("==", "!="):
            return column.is_(None) if op == "==" else column.is_not(None)
        raise InvalidParameter(f"'{op}' needs a value")
    if name in fields:
        value = _coerce(fields[name], value)
    elif name == "id":
        value = int(value) if str(value).isdigit() else -1
    if op == "==":
        return column == value
    if op == "!=":
        return column != value
    if op == ">":
        return column > value
    if op == ">=":
        return column >= value
    if op == "<":
        return column < value
    return column <= value


_PY = {"text": (str,), "number": (int,), "float": (int, float), "boolean": (bool,)}


def _check_values(
    fields: Sequence[Field], values: Mapping[str, Any], *, partial: bool
) -> dict[str, Any]:
    if not isinstance(values, Mapping):
        raise InvalidParameter("values must be an object")
    known = {f.name: f for f in fields}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise InvalidParameter(f"the table has no fields {unknown}")
    row: dict[str, Any] = {}
    for name, field in known.items():
        if name not in values:
            if field.required and not partial:
                raise InvalidParameter(f"field '{name}' is required")
            continue
        value = values[name]
        if value is not None:
            value = _coerce(field, value)
        row[name] = value
    return row


def _coerce(field: Field, value: Any) -> Any:
    if field.type == "date":
        if not isinstance(value, datetime):
            try:
                value = datetime.fromisoformat(str(value))
            except ValueError as exc:
                raise InvalidParameter(f"field '{field.name}' needs an ISO date") from exc
        # a date without a zone is UTC (stored as UTC either way)
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    kinds = _PY[field.type]
    if isinstance(value, bool) and field.type != "boolean":
        raise InvalidParameter(f"field '{field.name}' is {field.type}, not boolean")
    if not isinstance(value, kinds):
        raise InvalidParameter(f"field '{field.name}' is {field.type}, got {type(value).__name__}")
    return value


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    result = {}
    for key, value in row.items():
        if key == "id":
            value = str(value)
        elif isinstance(value, datetime | date):
            value = value.isoformat()
        elif isinstance(value, Decimal):  # SUM and AVG on PostgreSQL and MySQL
            value = int(value) if value == value.to_integral_value() else float(value)
        elif isinstance(value, bytes):
            value = value.decode(errors="replace")
        result[key] = value
    return result


def _info(row: Any) -> TableInfo:
    return TableInfo(
        id=row.id,
        owner_id=row.owner_id,
        bot_id=row.bot_id,
        name=row.name,
        description=row.description,
        fields=tuple(Field(**f) for f in row.fields),
        online_fields=None
        if row.online_fields is None
        else tuple(Field(**f) for f in row.online_fields),
        created_at=row.created_at,
        updated_at=row.updated_at,
        published_at=row.published_at,
        space_id=row.space_id,
    )
