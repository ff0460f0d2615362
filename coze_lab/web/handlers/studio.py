"""Studio API (``/coze_lab/api/...``) for the lab front end and scripts."""

from __future__ import annotations

from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.params import int_value, optional_str, optional_str_list


class TokensArea(CozeHandler):
    """The studio's personal access tokens: one Jupyter authorizer resource for the area."""

    AUTH_RESOURCE = "coze_lab.tokens"


class HealthHandler(CozeHandler):
    """Version, user, database and sandbox health."""

    def get(self) -> None:
        self.reply(self.runtime.health(self.studio_user()))


class MeHandler(CozeHandler):
    def get(self) -> None:
        self.reply(serialize.user(self.studio_user()))


class TokensHandler(TokensArea):
    """List the caller's personal access tokens, or create one (its secret shown once)."""

    def get(self) -> None:
        user = self.studio_user()
        now = self.runtime.clock()
        tokens = self.runtime.tokens.list(user.id)
        self.reply({"tokens": [serialize.token(t, now) for t in tokens]})

    def post(self) -> None:
        user = self.studio_user()
        body = self.json_body()
        raw_days = body.get("expires_in_days")
        info, secret = self.runtime.tokens.create(
            user.id,
            body.get("name"),  # type: ignore[arg-type]  # the service validates it
            expires_in_days=None
            if raw_days is None
            else int_value(raw_days, "expires_in_days", default=0, low=1, high=3650),
            scopes=optional_str_list(body, "scopes"),
            connector_id=optional_str(body, "connector_id"),
        )
        data = serialize.token(info, self.runtime.clock())
        data["token"] = secret
        self.reply(data, status=201)


class TokenHandler(TokensArea):
    def delete(self, token_id: str) -> None:
        user = self.studio_user()
        info = self.runtime.tokens.revoke(user.id, parse_id(token_id, "token_id"))
        self.reply(serialize.token(info, self.runtime.clock()))


class FileHistoryHandler(CozeHandler):
    """GET the file history of one of your conversations' workspaces."""

    def get(self, conversation_id: str) -> None:
        user = self.studio_user()
        events = self.runtime.file_history.list(
            user.id, parse_id(conversation_id, "conversation_id")
        )
        self.reply({"items": [serialize.file_event(e) for e in events]})


class ConversationActivityHandler(CozeHandler):
    """GET one of your conversations' activity: its run state and timeline."""

    def get(self, conversation_id: str) -> None:
        user = self.studio_user()
        line = self.runtime.activity.conversation(
            user.id, parse_id(conversation_id, "conversation_id")
        )
        self.reply(serialize.timeline(line))


class RunActivityHandler(CozeHandler):
    """GET one of your workflow runs' activity: its run state and timeline."""

    def get(self, run_id: str) -> None:
        user = self.studio_user()
        self.reply(
            serialize.timeline(self.runtime.activity.run(user.id, parse_id(run_id, "run_id")))
        )
