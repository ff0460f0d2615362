"""``/healthz``: the public liveness probe of ``coze-lab serve``."""

from __future__ import annotations

from coze_lab.web.base import CozeHandler


class LivenessHandler(CozeHandler):
    """``/healthz`` for load balancers and JupyterHub: the database answers."""

    def get(self) -> None:
        database = self.runtime.db.check()
        self.set_status(200 if database["ok"] else 503)
        self.finish({"ok": database["ok"]})


class ServiceRootHandler(CozeHandler):
    """``GET <base_url>`` of ``coze-lab serve``: who you are and where the API lives (a hub's
    Services menu links here; a browser without a session signs in through the hub)."""

    def get(self) -> None:
        from coze_lab._version import __version__
        from coze_lab.web import serialize

        user = self.studio_user()
        self.reply(
            {
                "service": "coze_lab",
                "version": __version__,
                "user": serialize.user(user),
                "openapi": "openapi.json",
                "studio_api": "coze_lab/api/",
                "web_sdk": "coze_lab/sdk/chat",
            }
        )
