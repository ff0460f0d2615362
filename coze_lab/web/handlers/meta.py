"""Public, unauthenticated endpoints: the OpenAPI document and a liveness probe."""

from __future__ import annotations

from coze_lab.web.api_document import document
from coze_lab.web.base import CozeHandler


class OpenApiDocHandler(CozeHandler):
    def get(self) -> None:
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(document())


class LivenessHandler(CozeHandler):
    """``/healthz`` for load balancers and JupyterHub: the database answers."""

    def get(self) -> None:
        database = self.runtime.db.check()
        self.set_status(200 if database["ok"] else 503)
        self.finish({"ok": database["ok"]})
