"""``/v1/workspaces``: the caller's workspaces; the personal one's id is Coze's space_id."""

from __future__ import annotations

from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.params import int_value


class WorkspacesHandler(CozeHandler):
    def get(self) -> None:
        user = self.coze_user()
        page_num = int_value(
            self.get_query_argument("page_num", None), "page_num", default=1, low=1, high=1_000_000
        )
        page_size = int_value(
            self.get_query_argument("page_size", None), "page_size", default=20, low=1, high=100
        )
        items, total = self.runtime.identity.list_workspaces(
            user.id, page_num=page_num, page_size=page_size
        )
        self.reply({"workspaces": [serialize.workspace(w) for w in items], "total_count": total})
