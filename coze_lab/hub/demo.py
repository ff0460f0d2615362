"""``make hub``: a local demo JupyterHub with coze_lab, for people and for tests.

Users ``alice`` (a hub admin) and ``bob`` sign in with any password (DummyAuthenticator);
their servers run as local processes with home directories under the demo folder
(SimpleLocalProcessSpawner); ``coze-lab serve`` is the hub's service at
``/services/coze-lab/``; the offline demo model answers unless a model is configured;
PostgreSQL when ``COZE_LAB_DATABASE_URL`` is set, else one SQLite file every process shares
(fine on one machine: SQLite in WAL mode serves several processes of one host).

    python -m coze_lab.hub.demo [--port 8000] [--root .cache/hub]

>>> demo = DemoHub(root=Path("/tmp/h"), database_url="sqlite:////tmp/h/coze_lab.db")
>>> "c.JupyterHub.authenticator_class = 'dummy'" in demo.config_text()
True
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coze_lab.hub.config import MODEL_ENV, HubSettings, hub_config

USERS = ("alice", "bob")
ADMINS = ("alice",)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def proxy_command() -> list[str]:
    """configurable-http-proxy from the venv (``make install`` puts it there), else PATH."""
    local = Path(sys.executable).parent / "configurable-http-proxy"
    found = str(local) if local.exists() else shutil.which("configurable-http-proxy")
    if not found:
        raise RuntimeError(
            "configurable-http-proxy is missing: `make install` installs it into the venv "
            "(npm install --global --prefix .venv configurable-http-proxy)"
        )
    return [found]


@dataclass
class DemoHub:
    """One demo hub's files and ports; ``config_text()`` is its ``jupyterhub_config.py``."""

    root: Path
    database_url: str
    port: int = 8000
    hub_port: int = 8081
    proxy_api_port: int = 8001
    service_port: int = 8765
    users: Sequence[str] = USERS
    admins: Sequence[str] = ADMINS
    #: model settings (and anything else) for the service and the single-user servers
    environment: Mapping[str, str] = field(default_factory=dict)
    secret_key: str = "coze-lab demo hub key (not for production)"
    hub_auth_cache_s: float = 30.0
    #: more config lines (tests add an admin service with a known token)
    extra: str = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def settings(self) -> HubSettings:
        return HubSettings(
            database_url=self.database_url,
            secret_key=self.secret_key,
            hub_url=self.url,
            service_port=self.service_port,
            data_dir=str(self.root / "data"),
            environment=dict(self.environment),
            hub_auth_cache_s=self.hub_auth_cache_s,
        )

    def config_text(self) -> str:
        root = self.root
        lines = [
            "# the demo hub of `make hub` (coze_lab.hub.demo)",
            f"c.JupyterHub.ip = '127.0.0.1'; c.JupyterHub.port = {self.port}",
            f"c.JupyterHub.hub_ip = '127.0.0.1'; c.JupyterHub.hub_port = {self.hub_port}",
            f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{self.proxy_api_port}'",
            f"c.ConfigurableHTTPProxy.command = {proxy_command()!r}",
            f"c.ConfigurableHTTPProxy.pid_file = {str(root / 'proxy.pid')!r}",
            f"c.JupyterHub.db_url = {'sqlite:///' + str(root / 'jupyterhub.sqlite')!r}",
            f"c.JupyterHub.cookie_secret_file = {str(root / 'jupyterhub_cookie_secret')!r}",
            "c.JupyterHub.authenticator_class = 'dummy'",
            f"c.Authenticator.allowed_users = {set(self.users)!r}",
            f"c.Authenticator.admin_users = {set(self.admins)!r}",
            "c.JupyterHub.spawner_class = 'simple'",
            "c.SimpleLocalProcessSpawner.home_dir_template = "
            + repr(str(root / "home" / "{username}")),
            f"c.Spawner.cmd = {[sys.executable, '-m', 'jupyterhub.singleuser']!r}",
            "c.Spawner.default_url = '/lab'",
            # jupyter_server refuses to run as root unless told (containers, CI)
            f"c.Spawner.args = {['--allow-root'] if os.geteuid() == 0 else []!r}",
            "c.Spawner.start_timeout = 120",
            "c.Spawner.http_timeout = 120",
            hub_config(self.settings),
            self.extra,
        ]
        return "\n".join(lines) + "\n"

    def write_config(self) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / "jupyterhub_config.py"
        path.write_text(self.config_text())
        return path

    def command(self) -> list[str]:
        return [sys.executable, "-m", "jupyterhub", "-f", str(self.write_config())]


def model_environment(root: Path) -> tuple[dict[str, str], subprocess.Popen[bytes] | None]:
    """The configured model's settings, or the offline demo model started for the hub."""
    configured = {k: os.environ[k] for k in MODEL_ENV if os.environ.get(k)}
    if configured:
        return configured, None
    port = free_port()
    log = (root / "model.log").open("ab")
    model = subprocess.Popen(
        [sys.executable, "-m", "coze_lab.testing.model_server", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    env = {
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "demo",
        "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
    }
    return env, model


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make hub", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="the hub's port (default 8000)")
    parser.add_argument("--root", default=".cache/hub", help="demo folder (default .cache/hub)")
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    database = os.environ.get("COZE_LAB_DATABASE_URL") or f"sqlite:///{root / 'coze_lab.db'}"
    environment, model = model_environment(root)
    demo = DemoHub(
        root=root,
        database_url=database,
        port=args.port,
        hub_port=free_port(),
        proxy_api_port=free_port(),
        service_port=free_port(),
        environment=environment,
    )
    hub = subprocess.Popen(demo.command(), cwd=root)

    def stop(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(
        f"\ncoze_lab demo hub: {demo.url}  (users {', '.join(demo.users)}; any password; "
        f"{', '.join(demo.admins)} is admin)\n"
        f"  service: {demo.url}services/coze-lab/   database: {database.split('@')[-1]}\n"
        f"  model: {'configured' if model is None else 'offline demo model'}   Ctrl-C stops\n",
        flush=True,
    )
    try:
        return hub.wait()
    except KeyboardInterrupt:
        hub.terminate()  # the hub stops its proxy, service and users' servers
        try:
            return hub.wait(30)
        except subprocess.TimeoutExpired:
            hub.kill()
            return 1
    finally:
        if model is not None:
            model.terminate()
            model.wait(10)


if __name__ == "__main__":
    raise SystemExit(main())
