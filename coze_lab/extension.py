"""The jupyter_server extension: the same handlers and services inside JupyterLab.

The studio loads on first use: linking the extension registers one route for
``<base_url>coze_lab/…`` and reads the configuration, nothing more. The first request under
it opens the database (migrations), builds the services, starts recovering the runs and
chats a restart interrupted, and mounts every handler; from then on requests go straight
to them. So a Jupyter server that nobody asks for the studio pays almost nothing for it.
"""

from __future__ import annotations

import os
from inspect import isclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse, urlunparse

from jupyter_server.extension.application import ExtensionApp
from jupyter_server.utils import url_path_join
from tornado import httputil, web
from tornado.routing import Router, RuleRouter

from coze_lab._version import __version__
from coze_lab.config import CozeLab

if TYPE_CHECKING:
    from coze_lab.services import Runtime


class CozeLabApp(ExtensionApp):
    """Mounts the studio API and the Coze OpenAPI under ``<base_url>coze_lab/``.

    Configure it with ``c.CozeLab.<setting>`` (see ``coze_lab.config.CozeLab``).
    """

    name = "coze_lab"
    description = "Coze Studio as a Jupyter-native agent studio"
    version = __version__
    load_other_extensions = True
    classes = [CozeLab]

    def initialize_settings(self) -> None:
        #: the studio's services, once loaded (the first request under coze_lab/)
        self.runtime: Runtime | None = None
        self._routes: _Routes | None = None
        self._failure = ""

    def initialize_handlers(self) -> None:
        web_app = self.serverapp.web_app
        pattern = url_path_join(web_app.settings["base_url"], "coze_lab/.*")
        web_app.add_handlers(".*$", [(pattern, _OnFirstUse(self))])

    def load(self) -> Router:
        """The studio's routes, its services started on the first call (on the event loop)."""
        if self._routes is None:
            from coze_lab.services import Runtime
            from coze_lab.web.base import RUNTIME_KEY
            from coze_lab.web.routes import jupyter_routes

            serverapp = self.serverapp
            web_app = serverapp.web_app
            runtime = Runtime(CozeLab(parent=serverapp))
            runtime.start()
            # where users reach this server: configuration, never a request's Host header
            runtime.default_public_url = lambda: server_public_url(serverapp)
            web_app.settings[RUNTIME_KEY] = runtime
            self.runtime = runtime
            runtime.start_serving()
            base = web_app.settings["base_url"]
            self._routes = _Routes(
                web_app,
                [(url_path_join(base, pattern), target) for pattern, target in jupyter_routes()],
            )
            self._log_loaded(runtime)
        return self._routes

    def _log_loaded(self, runtime: Runtime) -> None:
        self.log.info(
            "coze_lab %s: database %s, data in %s",
            __version__,
            runtime.db.dialect,
            runtime.config.data_path,
        )
        base = runtime.reachable_url()
        self.log.info(
            "coze_lab: plugin OAuth callbacks go to %s; if users reach this server at another "
            "address, set c.CozeLab.public_url (or COZE_LAB_PUBLIC_URL), or "
            "c.ServerApp.custom_display_url",
            f"{base}coze_lab/api/plugins/oauth/callback" if base else "(no address)",
        )

    async def stop_extension(self) -> None:
        if self.runtime is not None:
            await self.runtime.close()


class _OnFirstUse(Router):
    """Every ``coze_lab/…`` request: loads the studio on the first, then hands each to its
    handler. While the studio cannot load (a bad database URL, a database that is down) each
    request answers 503 saying why, and the next one tries again."""

    #: jupyter_server's start-up check of each rule's handler methods: the studio's
    #: handlers authenticate in their own ``prepare`` (Jupyter identity or a token)
    SUPPORTED_METHODS: tuple[str, ...] = ()

    def __init__(self, app: CozeLabApp) -> None:
        self.app = app

    def find_handler(
        self, request: httputil.HTTPServerRequest, **kwargs: Any
    ) -> httputil.HTTPMessageDelegate | None:
        app = self.app
        try:
            return app.load().find_handler(request, **kwargs)
        except Exception as exc:
            failure = f"coze_lab could not start: {type(exc).__name__}: {exc}"
            if failure != app._failure:
                app.log.exception(failure)
                app._failure = failure
            # the details (hosts, paths) are for the server's log, not for any client
            reason = f"coze_lab could not start ({type(exc).__name__}); the server log says why"
        return app.serverapp.web_app.get_handler_delegate(
            request, _Unavailable, {"reason": reason}
        )


class _Routes(RuleRouter):
    """The studio's handlers, as the server's own router would dispatch them."""

    def __init__(self, application: web.Application, rules: list[Any]) -> None:
        self.application = application
        super().__init__(rules)

    def get_target_delegate(
        self, target: Any, request: httputil.HTTPServerRequest, **target_params: Any
    ) -> httputil.HTTPMessageDelegate | None:
        if isclass(target) and issubclass(target, web.RequestHandler):
            return self.application.get_handler_delegate(request, target, **target_params)
        return super().get_target_delegate(target, request, **target_params)


class _Unavailable(web.RequestHandler):
    def initialize(self, reason: str) -> None:
        self.reason = reason

    def prepare(self) -> None:
        self.set_status(503)
        self.finish({"code": 5030, "msg": self.reason})


def server_public_url(serverapp: Any) -> str | None:
    """Where users reach a Jupyter server, from its configuration only: JupyterHub's public
    URL with the server's base URL, else ``custom_display_url`` over the server's own
    address (as Jupyter shows it); None on a Unix socket.

    Example:
        >>> server_public_url(serverapp)  # doctest: +SKIP
        'http://127.0.0.1:8888/'
    """
    from coze_lab.web.hub import hub_public_url

    if getattr(serverapp, "sock", ""):
        return None
    base_url = serverapp.base_url if serverapp.base_url.endswith("/") else serverapp.base_url + "/"
    hub = hub_public_url(os.environ, base_url)
    if hub:
        return hub
    parts = urlparse(serverapp.connection_url)
    if serverapp.custom_display_url:
        custom = urlparse(serverapp.custom_display_url)
        parts = parts._replace(
            **{k: v for k, v in custom._asdict().items() if v and k in ("scheme", "netloc", "path")}
        )
    path = parts.path if parts.path.endswith("/") else parts.path + "/"
    return urlunparse((parts.scheme, parts.netloc, path, "", "", ""))
