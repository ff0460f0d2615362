"""``coze-lab serve``: a standalone tornado server for headless use and JupyterHub services."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from collections.abc import Mapping
from typing import Any

from tornado import httpserver, web

from coze_lab._version import __version__
from coze_lab.config import CozeLab, MiB
from coze_lab.services import Runtime
from coze_lab.web.base import RUNTIME_KEY
from coze_lab.web.hub import HubIdentity, callback_handler, hub_public_url
from coze_lab.web.routes import standalone_not_found, standalone_routes
from coze_lab.web.standalone import HUB_KEY

log = logging.getLogger("coze_lab")


def make_app(
    runtime: Runtime, *, base_url: str = "/", hub: HubIdentity | None = None
) -> web.Application:
    """The tornado application serving every coze_lab route under ``base_url``.

    Personal access tokens always; with ``hub`` (a JupyterHub service) hub API tokens and
    hub OAuth logins too, the OAuth callback at ``<base_url>oauth_callback``.
    """
    routes: list[Any] = list(standalone_routes())
    settings: dict[str, Any] = {RUNTIME_KEY: runtime, "base_url": base_url}
    if hub is not None:
        routes.append((r"/oauth_callback", callback_handler(hub)))
        settings.update({HUB_KEY: hub, "cookie_secret": hub.cookie_secret})
    prefix = base_url.rstrip("/")
    if prefix:
        routes = [(prefix + path, *rest) for path, *rest in routes]
        routes.append((prefix, web.RedirectHandler, {"url": base_url}))
    return web.Application(routes, default_handler_class=standalone_not_found(), **settings)


def base_url_from(environ: Mapping[str, str], explicit: str | None = None) -> str:
    """``--base-url``, else the hub service prefix, else ``/`` (always ending in ``/``).

    Example:
        >>> base_url_from({"JUPYTERHUB_SERVICE_PREFIX": "/services/coze-lab"})
        '/services/coze-lab/'
    """
    raw = explicit or environ.get("JUPYTERHUB_SERVICE_PREFIX") or "/"
    return "/" + raw.strip("/") + "/" if raw.strip("/") else "/"


async def serve(
    config: CozeLab,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Run until SIGINT/SIGTERM; migrations run first unless disabled.

    Under JupyterHub (its service variables in ``environ``) the base URL is the service
    prefix and hub identity is accepted besides personal access tokens.
    """
    environ = os.environ if environ is None else environ
    base = base_url_from(environ, base_url)
    hub = HubIdentity.from_environ(environ, cache_s=config.hub_auth_cache_s)
    runtime = Runtime(config)
    runtime.start()
    app = make_app(runtime, base_url=base, hub=hub)
    server = httpserver.HTTPServer(app, max_body_size=config.max_upload_bytes + MiB, xheaders=True)
    sockets = _bind(host, port, reuse_port=config.reuse_port)
    server.add_sockets(sockets)
    bound = sockets[0].getsockname()[1]
    # behind the hub's proxy: the hub's public URL (a request's Host header is never trusted)
    public = hub_public_url(environ, base) if hub else f"http://{host}:{bound}{base}"
    runtime.start_serving(public_url=public)
    if not runtime.reachable_url():
        log.warning(
            "coze_lab: no public URL for plugin OAuth callbacks; set COZE_LAB_PUBLIC_URL "
            "(or the hub's public_url) to the URL users reach this service at"
        )
    log.info(
        "coze_lab %s serving on http://%s:%s%s (%s%s)",
        __version__,
        host,
        bound,
        base,
        runtime.db.dialect,
        ", JupyterHub service" if hub else "",
    )
    print(
        f"coze-lab {__version__} listening on http://{host}:{bound}{base.rstrip('/')}", flush=True
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        server.stop()
        await server.close_all_connections()
        await runtime.close()


def _bind(host: str, port: int, *, reuse_port: bool = False) -> list[socket.socket]:
    from tornado.netutil import bind_sockets

    return bind_sockets(port, address=host, reuse_port=reuse_port)
