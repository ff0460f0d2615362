"""Studio API for user tables: definitions, publishing, and their rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.params import int_value


class TablesArea(CozeHandler):
    """The studio's user tables: one Jupyter authorizer resource for the area."""

    AUTH_RESOURCE = "coze_lab.tables"


class TablesHandler(TablesArea):
    """GET: a space's tables (``?space_id=``, default personal). POST: ``{name, fields:
    [{name, type, description?, required?}], bot_id?}`` into ``?space_id=`` (a bot's table
    into the bot's space)."""

    def get(self) -> None:
        user = self.studio_user()
        items = self.runtime.tables.list(user.id, space_id=self.space_query())
        self.reply({"tables": [serialize.table(t) for t in items]})

    def post(self) -> None:
        user = self.studio_user()
        body = self.json_body()
        description = body.get("description")
        if description is None:
            description = ""
        if not isinstance(description, str):  # {} too (it was read as empty)
            raise InvalidParameter("description must be a string")
        bot = body.get("bot_id")
        bot_id = None if bot in (None, "") else self.runtime.bots.get(user.id, parse_id(bot)).id
        info = self.runtime.tables.create(
            user.id,
            body.get("name"),
            body.get("fields"),
            description=description,
            bot_id=bot_id,
            space_id=self.space_query(),
        )
        self.reply(serialize.table(info), status=201)


class TableHandler(TablesArea):
    def get(self, table_id: str) -> None:
        user = self.studio_user()
        self.reply(
            serialize.table(self.runtime.tables.get(user.id, parse_id(table_id, "table_id")))
        )

    def delete(self, table_id: str) -> None:
        user = self.studio_user()
        self.runtime.tables.delete(user.id, parse_id(table_id, "table_id"))
        self.reply(None)


class TableFieldsHandler(TablesArea):
    """POST: add fields to the draft."""

    def post(self, table_id: str) -> None:
        user = self.studio_user()
        info = self.runtime.tables.add_fields(
            user.id, parse_id(table_id, "table_id"), self.json_body().get("fields")
        )
        self.reply(serialize.table(info))


class TablePublishHandler(TablesArea):
    def post(self, table_id: str) -> None:
        user = self.studio_user()
        self.reply(
            serialize.table(self.runtime.tables.publish(user.id, parse_id(table_id, "table_id")))
        )


class TableRowsHandler(TablesArea):
    """GET: rows (``?scene=draft|online&limit=``). POST: ``{values, scene?}`` adds one."""

    def get(self, table_id: str) -> None:
        user = self.studio_user()
        rows = self.runtime.tables.query(
            user.id,
            parse_id(table_id, "table_id"),
            self.get_query_argument("scene", "draft"),
            limit=int_value(
                self.get_query_argument("limit", None), "limit", default=100, low=1, high=1000
            ),
        )
        self.reply({"rows": rows})

    def post(self, table_id: str) -> None:
        user = self.studio_user()
        body = self.json_body()
        row_id = self.runtime.tables.insert(
            user.id,
            parse_id(table_id, "table_id"),
            str(body.get("scene", "draft")),
            body.get("values") or {},
        )
        self.reply({"id": str(row_id)}, status=201)


def _scene(body: Mapping[str, Any]) -> str:
    scene = body.get("scene", "draft")
    if not isinstance(scene, str):
        raise InvalidParameter("scene must be 'draft' or 'online'")
    return scene


def _conditions(body: Mapping[str, Any], *, required: bool) -> tuple[list[dict[str, Any]], str]:
    where, logic = body.get("where") or [], body.get("logic", "and")
    if not isinstance(where, list) or not all(isinstance(w, dict) for w in where):
        raise InvalidParameter("where must be a list of {field, op, value}")
    if required and not where:
        raise InvalidParameter("where must name at least one condition")
    if not isinstance(logic, str):
        raise InvalidParameter("logic must be 'and' or 'or'")
    return where, logic


class TableRowsBatchHandler(TablesArea):
    """POST: ``{rows: [{field: value}], scene?}`` adds them all in one transaction."""

    def post(self, table_id: str) -> None:
        user = self.studio_user()
        body = self.json_body()
        ids = self.runtime.tables.insert_many(
            user.id, parse_id(table_id, "table_id"), _scene(body), body.get("rows")
        )
        self.reply({"ids": [str(i) for i in ids], "count": len(ids)}, status=201)


class TableQueryHandler(TablesArea):
    """POST: your rows by ``sql`` (one checked SELECT on this table, ``params`` bound) or by
    ``fields``/``where``/``logic``/``order_by``/``limit``."""

    def post(self, table_id: str) -> None:
        user = self.studio_user()
        body = self.json_body()
        ident, scene = parse_id(table_id, "table_id"), _scene(body)
        sql = body.get("sql")
        if sql is not None:
            params = body.get("params") or {}
            if not isinstance(sql, str) or not isinstance(params, dict):
                raise InvalidParameter("sql must be a string and params an object")
            if not all(isinstance(v, str | int | float | bool | None) for v in params.values()):
                raise InvalidParameter("params values must be strings, numbers, booleans or null")
            result = self.runtime.tables.execute(user.id, ident, scene, sql, params)
            self.reply(result)
            return
        where, logic = _conditions(body, required=False)
        fields, order_by = body.get("fields") or [], body.get("order_by") or []
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            raise InvalidParameter("fields must be a list of field names")
        if not isinstance(order_by, list) or not all(isinstance(o, dict) for o in order_by):
            raise InvalidParameter("order_by must be a list of {field, desc}")
        rows = self.runtime.tables.query(
            user.id,
            ident,
            scene,
            fields=fields,
            where=where,
            logic=logic,
            order_by=order_by,
            limit=int_value(body.get("limit"), "limit", default=100, low=1, high=1000),
        )
        self.reply({"rows": rows, "count": len(rows)})


class TableRowsUpdateHandler(TablesArea):
    """POST: ``{where, values, logic?, scene?}`` changes your matching rows."""

    def post(self, table_id: str) -> None:
        user = self.studio_user()
        body = self.json_body()
        where, logic = _conditions(body, required=True)
        values = body.get("values")
        if not isinstance(values, dict):
            raise InvalidParameter("values must be an object {field: value}")
        count = self.runtime.tables.update(
            user.id,
            parse_id(table_id, "table_id"),
            _scene(body),
            where=where,
            values=values,
            logic=logic,
        )
        self.reply({"count": count})


class TableRowsDeleteHandler(TablesArea):
    """POST: ``{where, logic?, scene?}`` deletes your matching rows."""

    def post(self, table_id: str) -> None:
        user = self.studio_user()
        body = self.json_body()
        where, logic = _conditions(body, required=True)
        count = self.runtime.tables.delete_rows(
            user.id, parse_id(table_id, "table_id"), _scene(body), where=where, logic=logic
        )
        self.reply({"count": count})
