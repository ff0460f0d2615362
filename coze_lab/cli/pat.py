"""``coze-lab pat create|list|revoke``: personal access tokens from the shell."""

from __future__ import annotations

import argparse

from coze_lab.cli._common import runtime_for
from coze_lab.core.clock import to_unix
from coze_lab.core.ids import parse_id
from coze_lab.core.tokens import CONNECTORS, SCOPES


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("pat", help="personal access tokens")
    sub = parser.add_subparsers(dest="pat_command", required=True, metavar="ACTION")

    create = sub.add_parser("create", help="create a token; the token is the last output line")
    create.add_argument("--user", required=True, help="owner (created if new)")
    create.add_argument("--name", required=True, help="what the token is for")
    create.add_argument("--expires-in-days", type=int, help="1..3650; default: never expires")
    create.add_argument(
        "--scope",
        action="append",
        choices=sorted(SCOPES),
        dest="scopes",
        help="limit the token (repeatable); default: every scope",
    )
    create.add_argument(
        "--connector",
        choices=sorted(CONNECTORS),
        help="bind the token to a connector (1024 API, 999 Web SDK)",
    )
    create.set_defaults(func=create_token)

    listing = sub.add_parser("list", help="list a user's tokens")
    listing.add_argument("--user", help="whose (default: the local user, $COZE_LAB_LOCAL_USER)")
    listing.set_defaults(func=list_tokens)

    revoke = sub.add_parser("revoke", help="revoke a token by id")
    revoke.add_argument("--user", required=True)
    revoke.add_argument("token_id")
    revoke.set_defaults(func=revoke_token)


def create_token(args: argparse.Namespace) -> int:
    with runtime_for(args) as runtime:
        user = runtime.identity.ensure_user(args.user)
        info, secret = runtime.tokens.create(
            user.id,
            args.name,
            expires_in_days=args.expires_in_days,
            scopes=args.scopes,
            connector_id=args.connector,
        )
        expiry = info.expires_at.isoformat() if info.expires_at else "never"
        print(f"# token {info.id} for {user.name}, expires {expiry}; shown once, keep it safe")
        print(secret)
    return 0


def list_tokens(args: argparse.Namespace) -> int:
    with runtime_for(args) as runtime:
        user = runtime.identity.ensure_user(args.user or runtime.config.local_user)
        now = runtime.clock()
        print(f"{'id':<20} {'name':<24} {'hint':<10} {'status':<8} expires_at  scopes")
        for info in runtime.tokens.list(user.id):
            scopes = ",".join(info.scopes) if info.scopes else "*"
            print(
                f"{info.id:<20} {info.name[:24]:<24} {info.hint:<10} {info.status(now):<8} "
                f"{to_unix(info.expires_at) or '-'!s:<11} {scopes}"
            )
    return 0


def revoke_token(args: argparse.Namespace) -> int:
    with runtime_for(args) as runtime:
        user = runtime.identity.ensure_user(args.user)
        info = runtime.tokens.revoke(user.id, parse_id(args.token_id, "token_id"))
        print(f"revoked {info.id} ({info.name})")
    return 0
