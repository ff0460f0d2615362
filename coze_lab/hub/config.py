"""What a JupyterHub admin adds to ``jupyterhub_config.py`` for coze_lab (``coze-lab hub-config``).

The shape: ``coze-lab serve`` runs as a hub-managed service at ``/services/coze-lab/`` (the
Coze API, published bots, the Web SDK); every single-user server loads the coze_lab
extension; both use one database and one data directory, and share the key that encrypts
stored credentials. Every user, and the token of every user's server (which its kernels
inherit as ``JUPYTERHUB_API_TOKEN``), gets the service's access scope, so ``cl.connect()``
in a notebook reaches the service with no configuration: the service URL is in the
kernel's environment as ``COZE_LAB_SERVICE_URL``.

>>> text = hub_config(HubSettings(database_url="postgresql+psycopg://db/coze", secret_key="k"))
>>> "c.JupyterHub.services.append" in text and "COZE_LAB_SERVICE_URL" in text
True
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pprint import pformat
from typing import Any

#: model settings passed on to the service and the single-user servers when set
MODEL_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "COZE_LAB_DEFAULT_MODEL", "COZE_LAB_MODELS_FILE")


@dataclass(frozen=True)
class HubSettings:
    """Where things are; see ``coze-lab hub-config --help``."""

    database_url: str
    secret_key: str
    #: the hub's URL as single-user servers (their kernels) reach it
    hub_url: str = "http://127.0.0.1:8000"
    service_name: str = "coze-lab"
    #: where the service listens (the hub's proxy forwards /services/<name>/ there)
    service_host: str = "127.0.0.1"
    service_port: int = 8765
    #: shared files, sandbox cache; "" keeps each process's default
    data_dir: str = ""
    python: str = sys.executable
    #: extra environment for the service and the single-user servers (model settings ...)
    environment: Mapping[str, str] = field(default_factory=dict)
    #: seconds the service trusts the hub's answer about a token or a login session
    hub_auth_cache_s: float = 30.0

    @property
    def prefix(self) -> str:
        return f"/services/{self.service_name}/"

    @property
    def service_url(self) -> str:
        """The service as the single-user servers' kernels reach it, through the proxy."""
        return self.hub_url.rstrip("/") + self.prefix

    def shared_environment(self) -> dict[str, str]:
        env = {"COZE_LAB_DATABASE_URL": self.database_url, "COZE_LAB_SECRET_KEY": self.secret_key}
        if self.data_dir:
            env["COZE_LAB_DATA_DIR"] = self.data_dir
        env.update(self.environment)
        return env

    def service(self) -> dict[str, Any]:
        """The ``c.JupyterHub.services`` entry."""
        return {
            "name": self.service_name,
            "url": f"http://{self.service_host}:{self.service_port}",
            "command": [
                self.python,
                "-m",
                "coze_lab.cli",
                "serve",
                "--host",
                self.service_host,
                "--port",
                str(self.service_port),
            ],
            "environment": {
                **self.shared_environment(),
                "COZE_LAB_HUB_AUTH_CACHE_S": str(self.hub_auth_cache_s),
            },
            # an admin-installed service: no consent page on first login
            "oauth_no_confirm": True,
            "display": True,
        }

    def access_scope(self) -> str:
        return f"access:services!service={self.service_name}"


def hub_config(settings: HubSettings) -> str:
    """The lines for ``jupyterhub_config.py`` (Python; they extend, never replace, the
    admin's own ``services``, ``load_roles`` and ``Spawner.environment``)."""
    scope = settings.access_scope()
    server_role = {
        "name": "server",
        "scopes": ["users:activity!user", "access:servers!server", scope],
    }
    spawner_env = {**settings.shared_environment(), "COZE_LAB_SERVICE_URL": settings.service_url}
    return "\n".join(
        [
            "# ---- coze_lab (printed by `coze-lab hub-config`) ----------------------------",
            "# coze-lab serve as the hub-managed service at " + settings.prefix,
            f"c.JupyterHub.services.append({_py(settings.service())})",
            "# every user may use the service (browser login through the hub's OAuth) ...",
            f"c.JupyterHub.extra_user_scopes.add({scope!r})",
            "# ... and so may each user's server token, which the user's kernels inherit",
            "# (merge this into your own 'server' role if you define one)",
            f"c.JupyterHub.load_roles.append({_py(server_role)})",
            "# single-user servers: the coze_lab extension uses the same database and key;",
            "# cl.connect() in a notebook finds the service at COZE_LAB_SERVICE_URL",
            f"c.Spawner.environment.update({_py(spawner_env)})",
            "# ---- end coze_lab -------------------------------------------------------------",
            "",
        ]
    )


def _py(value: Any) -> str:
    return pformat(value, width=96, sort_dicts=False)
