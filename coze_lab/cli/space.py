"""``coze-lab space list|create|add-member|remove-member``: team spaces from the shell (an
administrator setting up teams on a standalone deployment; users do the same from the
studio API, the notebook or cozepy)."""

from __future__ import annotations

import argparse

from coze_lab.cli._common import runtime_for
from coze_lab.core.errors import NotFound


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("space", help="team spaces and their members")
    sub = parser.add_subparsers(dest="space_command", required=True, metavar="ACTION")

    listing = sub.add_parser("list", help="a user's spaces, with their role")
    listing.add_argument("--user", help="whose (default: the local user, $COZE_LAB_LOCAL_USER)")
    listing.set_defaults(func=list_spaces)

    create = sub.add_parser("create", help="create a team space; its id is the last output line")
    create.add_argument("--user", required=True, help="its owner (created if new)")
    create.add_argument("name")
    create.set_defaults(func=create_space)

    add = sub.add_parser("add-member", help="add a user (created if new) to a team space")
    add.add_argument("--user", required=True, help="who acts: the owner or an admin")
    add.add_argument("--role", choices=["member", "admin"], default="member")
    add.add_argument("space", help="the space's id or name")
    add.add_argument("member", help="the user's name")
    add.set_defaults(func=add_member)

    remove = sub.add_parser("remove-member", help="remove a member from a team space")
    remove.add_argument("--user", required=True, help="who acts: the owner or an admin")
    remove.add_argument("space", help="the space's id or name")
    remove.add_argument("member", help="the user's name")
    remove.set_defaults(func=remove_member)


def list_spaces(args: argparse.Namespace) -> int:
    with runtime_for(args) as runtime:
        user = runtime.identity.ensure_user(args.user or runtime.config.local_user)
        spaces, _ = runtime.spaces.list(user.id, page_size=100)
        print(f"{'id':<20} {'type':<9} {'role':<7} name")
        for info in spaces:
            print(f"{info.id:<20} {info.workspace_type:<9} {info.role.value:<7} {info.name}")
    return 0


def create_space(args: argparse.Namespace) -> int:
    with runtime_for(args) as runtime:
        user = runtime.identity.ensure_user(args.user)
        info = runtime.spaces.create(user.id, args.name)
        print(f"# team space '{info.name}', owned by {user.name}")
        print(info.id)
    return 0


def add_member(args: argparse.Namespace) -> int:
    with runtime_for(args) as runtime:
        user = runtime.identity.ensure_user(args.user)
        space = runtime.spaces.find(user.id, args.space)
        runtime.identity.ensure_user(args.member)
        info = runtime.spaces.add_member(user.id, space.id, args.member, args.role)
        print(f"{info.name} is now {info.role.value} of '{space.name}'")
    return 0


def remove_member(args: argparse.Namespace) -> int:
    with runtime_for(args) as runtime:
        user = runtime.identity.ensure_user(args.user)
        space = runtime.spaces.find(user.id, args.space)
        member = runtime.identity.find_user(args.member)
        if member is None:
            raise NotFound(f"there is no user called '{args.member}'")
        result = runtime.spaces.remove_members(user.id, space.id, [str(member.id)])
        if not result.removed:
            raise NotFound(f"{args.member} is not a removable member of '{space.name}'")
        print(f"removed {args.member} from '{space.name}'")
    return 0
