"""Coze's variables API (``/v1/variables``): an end user's values of a bot's variables;
the studio's view of them (``/coze_lab/api/bots/{bot_id}/variables``)."""

from __future__ import annotations

from coze_lab.core.bots import BotConfig
from coze_lab.core.errors import InvalidParameter
from coze_lab.core.memory.variables import Scope
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.handlers.bots import BotsArea
from coze_lab.web.requests import (
    VariablesRequest,
    parse_studio_variables,
    parse_variables_query,
    parse_variables_update,
)


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


class StudioBotVariablesHandler(BotsArea):
    """GET: a bot's variables with your values (``?connector_id=`` default the Playground,
    ``?connector_uid=`` default you); PUT ``{data: [{keyword, value}]}``: set some, as the
    end user (``user_can_set``), all or none; answers the new view."""

    def get(self, bot_id: str) -> None:
        user = self.studio_user()
        query = {n: self.get_query_argument(n, None) for n in ("connector_id", "connector_uid")}
        request = parse_studio_variables(query, bot_id, user.id)
        scope, config = self.runtime.variables.scope(
            user.id, request.bot_id, request.connector_id or "", request.connector_uid
        )
        self.reply(serialize.variable_states(self.runtime.variables.states(scope, config)))

    def put(self, bot_id: str) -> None:
        user = self.studio_user()
        request = parse_studio_variables(self.json_body(), bot_id, user.id, update=True)
        scope, config = self.runtime.variables.scope(
            user.id, request.bot_id, request.connector_id or "", request.connector_uid
        )
        self.runtime.variables.update(scope, config, request.values)
        self.reply(serialize.variable_states(self.runtime.variables.states(scope, config)))
