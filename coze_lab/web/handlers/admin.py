"""Administration: usage per user (counts and tokens, never content), for hub admins."""

from __future__ import annotations

from datetime import datetime, timezone

from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.params import int_value


class UsageHandler(CozeHandler):
    """GET ``coze_lab/api/admin/usage[?since=<unix seconds>]``: every user's runs, chats and
    model tokens."""

    AUTH_RESOURCE = "coze_lab.admin"

    def get(self) -> None:
        self.admin_user()
        raw = self.get_query_argument("since", None)
        since = None if raw is None else int_value(raw, "since", default=0, low=0, high=2**40)
        start = None if since is None else datetime.fromtimestamp(since, timezone.utc)
        report = self.runtime.usage.report(since=start)
        self.reply(serialize.usage(report))
