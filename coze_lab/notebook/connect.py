"""``cl.connect()``: find the server this kernel belongs to, with no configuration.

Order of discovery:

1. explicit ``url`` (+ ``token``): a remote ``coze-lab serve`` with a personal access
   token, or any Jupyter server;
2. ``COZE_LAB_URL`` / ``COZE_LAB_TOKEN`` in the environment;
3. on a shared JupyterHub set up with ``coze-lab hub-config``: the hub's coze_lab
   service at ``COZE_LAB_SERVICE_URL`` with the kernel's ``JUPYTERHUB_API_TOKEN`` (widgets
   in the page still talk to the user's own server, which shares the database);
4. a JupyterHub single-user server: ``JUPYTERHUB_SERVICE_URL`` (or the running server
   under ``JUPYTERHUB_SERVICE_PREFIX``) with ``JUPYTERHUB_API_TOKEN``;
5. the running Jupyter servers (``jupyter_server.serverapp.list_running_servers()``): the
   one that started this kernel (``JPY_PARENT_PID`` is its pid, or its ``api/kernels``
   lists this kernel's id, or its root holds ``JPY_SESSION_NAME``), else the only one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from coze_lab.notebook.studio import Studio, StudioError

_current: Studio | None = None


def connect(
    url: str | None = None,
    token: str | None = None,
    *,
    servers: Iterable[dict[str, Any]] | None = None,
    environ: dict[str, str] | None = None,
    space: str | int | None = None,
) -> Studio:
    """Connect to the studio API and remember the connection for ``wf.run()`` and widgets.

    ``space`` (a space's name or id) makes the connection work in a team space: ``cl.Bot``,
    ``wf.publish()``, ``wf.run()`` and ``cl.Plugin`` then list and create there.

    >>> import coze_lab as cl
    >>> studio = cl.connect()                                       # doctest: +SKIP
    >>> studio = cl.connect("http://hub:8765", "pat_...")           # doctest: +SKIP
    >>> studio.me()["name"]                                         # doctest: +SKIP
    'alice'
    >>> [s["name"] for s in studio.spaces()]                        # doctest: +SKIP
    ['Personal', 'team-a']
    >>> team = cl.connect(space="team-a")                           # doctest: +SKIP
    """
    global _current
    env = dict(os.environ if environ is None else environ)
    studio = _discover(url, token, servers, env)
    studio.me()  # fail here, with a clear message, rather than at the first real call
    if space is not None:
        studio = studio.space(space)
    _current = studio
    return studio


def in_space(studio: Studio | None, space: str | int | None) -> Studio:
    """``studio`` (or the current connection) working in ``space`` when one is named."""
    base = studio if studio is not None else current()
    return base if space is None else base.space(space)


def current() -> Studio:
    """The last ``connect()``ed studio, connecting with discovery when there is none."""
    return _current if _current is not None else connect()


def _discover(
    url: str | None,
    token: str | None,
    servers: Iterable[dict[str, Any]] | None,
    env: dict[str, str],
) -> Studio:
    if url:
        return Studio(url, token or env.get("COZE_LAB_TOKEN", ""))
    if env.get("COZE_LAB_URL"):
        return Studio(env["COZE_LAB_URL"], token or env.get("COZE_LAB_TOKEN", ""))
    running = list(_running_servers() if servers is None else servers)
    hub_token = env.get("JUPYTERHUB_API_TOKEN", "")
    prefix = env.get("JUPYTERHUB_SERVICE_PREFIX", "")
    if hub_token and env.get("COZE_LAB_SERVICE_URL"):
        return Studio(env["COZE_LAB_SERVICE_URL"], token or hub_token, page_base=prefix or None)
    if hub_token and env.get("JUPYTERHUB_SERVICE_URL"):
        service = _loopback(env["JUPYTERHUB_SERVICE_URL"])
        return Studio(service, token or hub_token, page_base=prefix or urlsplit(service).path)
    server = _owner(running, env)
    if server is None:
        raise StudioError(
            -1,
            "no Jupyter server found for this kernel; pass cl.connect(url, token) "
            "or set COZE_LAB_URL and COZE_LAB_TOKEN",
        )
    secret = token or server.get("token") or hub_token
    base = server.get("base_url") or "/"
    return Studio(_loopback(server["url"]), secret, page_base=base)


def _running_servers() -> list[dict[str, Any]]:
    from jupyter_server.serverapp import list_running_servers

    return list(list_running_servers())


def _owner(servers: list[dict[str, Any]], env: dict[str, str]) -> dict[str, Any] | None:
    """The server that started this kernel."""
    if not servers:
        return None
    prefix = env.get("JUPYTERHUB_SERVICE_PREFIX")
    if prefix:
        under = [s for s in servers if (s.get("base_url") or "/") == prefix]
        if len(under) == 1:
            return under[0]
    parent = env.get("JPY_PARENT_PID", "")
    by_pid = [s for s in servers if str(s.get("pid")) == parent]
    if len(by_pid) == 1:
        return by_pid[0]
    kernel = _kernel_id()
    if kernel and len(servers) > 1:
        for server in servers:
            if _has_kernel(server, kernel):
                return server
    session = env.get("JPY_SESSION_NAME")
    if session and len(servers) > 1:
        holding = [s for s in servers if _holds(s, session)]
        if len(holding) == 1:
            return holding[0]
    return servers[0] if len(servers) == 1 else None


def _kernel_id() -> str | None:
    try:
        from ipykernel.connect import get_connection_file

        name = Path(get_connection_file()).name
    except Exception:  # not in a kernel
        return None
    match = re.match(r"kernel-(.+)\.json$", name)
    return match.group(1) if match else None


def _has_kernel(server: dict[str, Any], kernel_id: str) -> bool:
    headers = {"Authorization": f"token {server['token']}"} if server.get("token") else {}
    try:
        response = httpx.get(
            _loopback(server["url"]) + f"api/kernels/{kernel_id}", headers=headers, timeout=3
        )
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def _holds(server: dict[str, Any], session: str) -> bool:
    root = server.get("root_dir") or server.get("notebook_dir")
    if not root:
        return False
    path = Path(session)
    return (path.is_absolute() and str(path).startswith(str(Path(root)))) or (
        not path.is_absolute() and (Path(root) / path).exists()
    )


def _loopback(url: str) -> str:
    """A server that listens on every interface is reached on the loopback interface."""
    parts = urlsplit(url if url.endswith("/") else url + "/")
    host = parts.hostname or "127.0.0.1"
    if host in ("0.0.0.0", "::", ""):
        netloc = "127.0.0.1" + (f":{parts.port}" if parts.port else "")
        parts = parts._replace(netloc=netloc)
    return urlunsplit(parts)
