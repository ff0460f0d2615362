"""``coze-lab serve``."""

from __future__ import annotations

import argparse
import asyncio

from coze_lab.cli._common import load_config


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("serve", help="run the standalone API server")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (0 picks a free one)")
    parser.add_argument(
        "--base-url",
        help="path prefix of every route (default: $JUPYTERHUB_SERVICE_PREFIX under a hub, else /)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from coze_lab.server import serve

    asyncio.run(serve(load_config(args), host=args.host, port=args.port, base_url=args.base_url))
    return 0
