"""``coze-lab workflow import|list``."""

from __future__ import annotations

import argparse
from pathlib import Path

from coze_lab.cli._common import runtime_for
from coze_lab.core.errors import InvalidParameter
from coze_lab.core.json_input import parse_json


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("workflow", help="stored workflows")
    sub = parser.add_subparsers(dest="workflow_command", required=True, metavar="ACTION")
    imp = sub.add_parser("import", help="save a workflow JSON file; prints its id last")
    imp.add_argument("file", help="a definition as written by wf.to_json()")
    imp.add_argument("--user", required=True, help="owner (created if new)")
    imp.add_argument("--publish", action="store_true", help="publish it as the next version")
    imp.set_defaults(func=import_workflow)
    listing = sub.add_parser("list", help="a user's workflows")
    listing.add_argument("--user", help="whose (default: the local user, $COZE_LAB_LOCAL_USER)")
    listing.set_defaults(func=list_workflows)


def import_workflow(args: argparse.Namespace) -> int:
    try:
        text = Path(args.file).read_bytes()
    except OSError as exc:
        raise InvalidParameter(f"cannot read {args.file}: {exc.strerror}") from exc
    definition = parse_json(text, args.file)
    with runtime_for(args) as runtime:
        user = runtime.identity.ensure_user(args.user)
        info = runtime.workflows.save(user.id, definition)
        if args.publish:
            version = runtime.workflows.publish(user.id, info.id)
            print(f"# published {info.name} as version {version}")
        else:
            print(f"# saved the draft of {info.name}")
        print(info.id)
    return 0


def list_workflows(args: argparse.Namespace) -> int:
    with runtime_for(args) as runtime:
        user = runtime.identity.ensure_user(args.user or runtime.config.local_user)
        print(f"{'id':<20} {'published':<9} name")
        for info in runtime.workflows.list(user.id):
            print(f"{info.id:<20} {info.published_version or '-'!s:<9} {info.name}")
    return 0
