"""``coze-lab db upgrade|current``."""

from __future__ import annotations

import argparse

from coze_lab.cli._common import load_config
from coze_lab.store import Database


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("db", help="database schema")
    sub = parser.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    sub.add_parser("upgrade", help="apply every pending migration").set_defaults(func=upgrade)
    sub.add_parser("current", help="print the schema revision").set_defaults(func=current)


def upgrade(args: argparse.Namespace) -> int:
    db = Database(load_config(args).database_url)
    try:
        print(db.upgrade())
    finally:
        db.dispose()
    return 0


def current(args: argparse.Namespace) -> int:
    db = Database(load_config(args).database_url)
    try:
        print(db.revision() or "none")
    finally:
        db.dispose()
    return 0
