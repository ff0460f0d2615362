"""The ``coze-lab`` command."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from coze_lab._version import __version__
from coze_lab.cli import db, hub, pat, serve, space, workflow
from coze_lab.core.errors import CozeLabError


def add_global_options(parser: argparse.ArgumentParser, *, defaults: bool = True) -> None:
    """The options every command takes, before or after the sub-command.

    Sub-command parsers declare them without defaults (``SUPPRESS``), so that an option
    given before the sub-command is not reset by the sub-command's parser.
    """

    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument(
        "--data-dir",
        default=default(None),
        help="data directory (default: $COZE_LAB_DATA_DIR or <jupyter data>/coze_lab)",
    )
    parser.add_argument(
        "--database-url",
        default=default(None),
        help="SQLAlchemy URL (default: $COZE_LAB_DATABASE_URL or SQLite)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=default(False), help="log at debug level"
    )


class CommandParser(argparse.ArgumentParser):
    """A sub-command's parser: it takes the global options too (``serve --data-dir X``), and
    so do the parsers nested under it (``add_subparsers`` uses the parent's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        add_global_options(self, defaults=False)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coze-lab", description="coze_lab: agent workflows, bots and the Coze API."
    )
    parser.add_argument("--version", action="version", version=f"coze-lab {__version__}")
    add_global_options(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    serve.register(commands)
    db.register(commands)
    hub.register(commands)
    pat.register(commands)
    space.register(commands)
    workflow.register(commands)
    try:
        from coze_lab.cli import sandbox
    except ImportError:  # the sandbox commands arrive with the sandbox package
        pass
    else:
        sandbox.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``coze-lab``; returns the exit code. Without a command: the help."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="[%(levelname)s %(asctime)s %(name)s] %(message)s",
        stream=sys.stderr,
    )
    if not args.verbose:
        logging.getLogger("alembic").setLevel(logging.WARNING)
        # a line per model request (and per chat): the access log says enough
        logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        return int(args.func(args) or 0)
    except CozeLabError as exc:
        print(f"coze-lab: error {exc.code}: {exc.msg}", file=sys.stderr)
        return 2
