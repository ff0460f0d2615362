"""``/healthz``: the public liveness probe of ``coze-lab serve``."""

from __future__ import annotations

from coze_lab.web.base import CozeHandler


class LivenessHandler(CozeHandler):
    """``/healthz`` for load balancers and JupyterHub: the database answers."""

    def get(self) -> None:
        database = self.runtime.db.check()
        self.set_status(200 if database["ok"] else 503)
        self.finish({"ok": database["ok"]})
