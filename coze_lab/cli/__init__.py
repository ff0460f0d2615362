"""The ``coze-lab`` command."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from coze_lab._version import __version__
from coze_lab.cli import db, hub, pat, serve, workflow
from coze_lab.core.errors import CozeLabError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coze-lab", description="coze_lab: agent workflows, bots and the Coze API."
    )
    parser.add_argument("--version", action="version", version=f"coze-lab {__version__}")
    parser.add_argument(
        "--data-dir", help="data directory (default: $COZE_LAB_DATA_DIR or <jupyter data>/coze_lab)"
    )
    parser.add_argument(
        "--database-url", help="SQLAlchemy URL (default: $COZE_LAB_DATABASE_URL or SQLite)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve.register(commands)
    db.register(commands)
    hub.register(commands)
    pat.register(commands)
    workflow.register(commands)
    try:
        from coze_lab.cli import sandbox
    except ImportError:  # the sandbox commands arrive with the sandbox package
        pass
    else:
        sandbox.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``coze-lab``; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="[%(levelname)s %(asctime)s %(name)s] %(message)s",
        stream=sys.stderr,
    )
    if not args.verbose:
        logging.getLogger("alembic").setLevel(logging.WARNING)
    try:
        return int(args.func(args) or 0)
    except CozeLabError as exc:
        print(f"coze-lab: error {exc.code}: {exc.msg}", file=sys.stderr)
        return 2
