"""Studio API for user tables: definitions, publishing, and their rows."""

from __future__ import annotations

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
