"""``coze-lab serve``: a standalone tornado server for headless use and JupyterHub services."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket

from tornado import httpserver, web

from coze_lab._version import __version__
from coze_lab.config import CozeLab, MiB
from coze_lab.services import Runtime
from coze_lab.web.base import RUNTIME_KEY
from coze_lab.web.routes import standalone_not_found, standalone_routes

log = logging.getLogger("coze_lab")


def make_app(runtime: Runtime) -> web.Application:
    """The tornado application serving every coze_lab route with token authentication."""
    return web.Application(
        standalone_routes(),
        default_handler_class=standalone_not_found(),
        **{RUNTIME_KEY: runtime},
    )


async def serve(config: CozeLab, *, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Run until SIGINT/SIGTERM; migrations run first unless disabled."""
    runtime = Runtime(config)
    runtime.start()
    app = make_app(runtime)
    server = httpserver.HTTPServer(app, max_body_size=config.max_upload_bytes + MiB, xheaders=True)
    sockets = _bind(host, port)
    server.add_sockets(sockets)
    bound = sockets[0].getsockname()[1]
    runtime.start_serving(public_url=f"http://{host}:{bound}/")
    log.info(
        "coze_lab %s serving on http://%s:%s (%s)", __version__, host, bound, runtime.db.dialect
    )
    print(f"coze-lab {__version__} listening on http://{host}:{bound}", flush=True)
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


def _bind(host: str, port: int) -> list[socket.socket]:
    from tornado.netutil import bind_sockets

    return bind_sockets(port, address=host)
