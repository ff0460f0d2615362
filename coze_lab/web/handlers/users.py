"""``/v1/users/me``: the owner of the request's personal access token."""

from __future__ import annotations

from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler


class UserMeHandler(CozeHandler):
    """Coze's User object for the token's owner (cozepy ``users.me()``); any valid token."""

    def get(self) -> None:
        self.reply(serialize.coze_user(self.coze_user()))
