"""The jupyter_server extension: the same handlers and services inside JupyterLab."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse, urlunparse

from jupyter_server.extension.application import ExtensionApp
from traitlets import Instance

from coze_lab._version import __version__
from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.web.base import RUNTIME_KEY
from coze_lab.web.hub import hub_public_url
from coze_lab.web.routes import jupyter_routes


class CozeLabApp(ExtensionApp):
    """Mounts the studio API and the Coze OpenAPI under ``<base_url>coze_lab/``.

    Configure it with ``c.CozeLab.<setting>`` (see ``coze_lab.config.CozeLab``).
    """

    name = "coze_lab"
    description = "Coze Studio as a Jupyter-native agent studio"
    version = __version__
    load_other_extensions = True
    classes = [CozeLab]

    runtime = Instance(Runtime, allow_none=True)

    def initialize_settings(self) -> None:
        self.runtime = Runtime(CozeLab(parent=self.serverapp))
        self.runtime.start()
        # where users reach this server: configuration, never a request's Host header
        serverapp = self.serverapp
        self.runtime.default_public_url = lambda: server_public_url(serverapp)
        self.settings[RUNTIME_KEY] = self.runtime
        self.log.info(
            "coze_lab %s: database %s, data in %s",
            __version__,
            self.runtime.db.dialect,
            self.runtime.config.data_path,
        )

    def initialize_handlers(self) -> None:
        self.handlers.extend(jupyter_routes())

    async def _start_jupyter_server_extension(self, serverapp: object) -> None:
        # the server's event loop runs now: workflows whose worker died continue here
        assert self.runtime is not None
        self.runtime.start_serving()
        base = self.runtime.reachable_url()
        self.log.info(
            "coze_lab: plugin OAuth callbacks go to %s; if users reach this server at another "
            "address, set c.CozeLab.public_url (or COZE_LAB_PUBLIC_URL), or "
            "c.ServerApp.custom_display_url",
            f"{base}coze_lab/api/plugins/oauth/callback" if base else "(no address)",
        )

    async def stop_extension(self) -> None:
        if self.runtime is not None:
            await self.runtime.close()


def server_public_url(serverapp: Any) -> str | None:
    """Where users reach a Jupyter server, from its configuration only: JupyterHub's public
    URL with the server's base URL, else ``custom_display_url`` over the server's own
    address (as Jupyter shows it); None on a Unix socket.

    Example:
        >>> server_public_url(serverapp)  # doctest: +SKIP
        'http://127.0.0.1:8888/'
    """
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
