"""Coze's variables API (``/v1/variables``): an end user's values of a bot's variables."""

from __future__ import annotations

from coze_lab.core.bots import BotConfig
from coze_lab.core.errors import InvalidParameter
from coze_lab.core.memory.variables import Scope
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.requests import VariablesRequest, parse_variables_query, parse_variables_update


class VariablesHandler(CozeHandler):
    """GET: the values (defaults for those never set); PUT: set some, all or none."""

    def get(self) -> None:
        self.coze_user()  # who asks comes before what is asked (401 before 400)
        query = {
            name: self.get_query_argument(name, None)
            for name in ("app_id", "bot_id", "connector_id", "connector_uid", "keywords")
        }
        request = parse_variables_query(query)
        scope, config = self._scope(request)
        items = self.runtime.variables.retrieve(scope, config, request.keywords)
        self.reply(serialize.variable_values(items))

    def put(self) -> None:
        self.coze_user()
        request = parse_variables_update(self.json_body())
        scope, config = self._scope(request)
        self.runtime.variables.update(scope, config, request.values)
        self.reply({})

    def _scope(self, request: VariablesRequest) -> tuple[Scope, BotConfig]:
        user = self.coze_user()
        bound = self.principal().connector_id
        connector = request.connector_id or self.connector()
        if bound and connector != bound:
            raise InvalidParameter(f"this token reads and writes variables on connector {bound}")
        return self.runtime.variables.scope(
            user.id, request.bot_id, connector, request.connector_uid
        )
