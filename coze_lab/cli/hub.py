"""``coze-lab hub-config``: the lines a JupyterHub admin adds to ``jupyterhub_config.py``."""

from __future__ import annotations

import argparse
import os
import sys

from coze_lab.cli._common import load_config


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "hub-config",
        help="print the jupyterhub_config.py lines for coze_lab on a shared JupyterHub",
        description="Print the lines an admin adds to jupyterhub_config.py: coze-lab serve "
        "as the hub-managed service /services/<name>/, its OAuth access for every user and "
        "their servers' tokens, and what the single-user servers need (database, key, the "
        "service URL). The global --database-url and --data-dir apply to all of them.",
    )
    parser.add_argument(
        "--hub-url",
        default="http://127.0.0.1:8000",
        help="the hub's URL as single-user servers reach it (default http://127.0.0.1:8000; "
        "on Kubernetes http://proxy-public)",
    )
    parser.add_argument("--service-name", default="coze-lab", help="default coze-lab")
    parser.add_argument("--service-host", default="127.0.0.1", help="where the service listens")
    parser.add_argument("--service-port", type=int, default=8765, help="default 8765")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cryptography.fernet import Fernet

    from coze_lab.hub.config import MODEL_ENV, HubSettings, hub_config

    config = load_config(args)
    if config.database_url.startswith("sqlite"):
        print(
            "coze-lab: warning: SQLite is shared only by processes on one machine; "
            "give --database-url postgresql+psycopg://... for a real hub",
            file=sys.stderr,
        )
    key = config.secret_key or Fernet.generate_key().decode()
    settings = HubSettings(
        database_url=config.database_url,
        secret_key=key,
        hub_url=args.hub_url,
        service_name=args.service_name,
        service_host=args.service_host,
        service_port=args.service_port,
        data_dir=str(config.data_path)
        if args.data_dir or os.environ.get("COZE_LAB_DATA_DIR")
        else "",
        environment={k: os.environ[k] for k in MODEL_ENV if os.environ.get(k)},
        hub_auth_cache_s=config.hub_auth_cache_s,
    )
    if not config.secret_key:
        print(
            "# a new COZE_LAB_SECRET_KEY was generated below: keep it (it decrypts stored "
            "credentials), or set COZE_LAB_SECRET_KEY before running hub-config",
        )
    print(hub_config(settings), end="")
    return 0
