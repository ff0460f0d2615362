"""MCP servers of a space: a stdio command or a streamable-HTTP URL, with each user's
encrypted headers; every query is scoped to the spaces of the calling user."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
from sqlalchemy import delete, select

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import Conflict, InvalidParameter, NotFound
from coze_lab.core.ids import new_id
from coze_lab.core.secrets import SecretBox
from coze_lab.core.spaces import Access, Permission, visible
from coze_lab.store import Database
from coze_lab.store.models import McpCredential, McpServer

STDIO, HTTP = "stdio", "http"
MAX_ARGS, MAX_ENV, MAX_HEADERS, MAX_VALUE_CHARS = 64, 64, 32, 8192
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_BREAK = re.compile(r"[\r\n]")
_PORT = r"(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
_URL = re.compile(r"^https?://[A-Za-z0-9.-]+" + _PORT + r"(/[^\s\u0000-\u001f\u007f]*)?$")
_HEADER = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")


@dataclass(frozen=True)
class McpServerInfo:
    """An MCP server as the studio shows it: never the values of its env or headers."""

    id: int
    owner_id: int
    space_id: int
    name: str
    description: str
    transport: str
    command: str | None
    args: tuple[str, ...]
    url: str | None
    env_names: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    #: whether the calling user stored headers for it
    has_credentials: bool = False


@dataclass(frozen=True)
class Endpoint:
    """How to reach a server as one user (decrypted; never leaves the process)."""

    server_id: int
    name: str
    transport: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    #: changes when the server's configuration does (a pooled process is then replaced)
    updated_at: datetime | None = None


@dataclass(frozen=True)
class McpServerSpec:
    """A checked request to add a server (see :func:`server_spec`)."""

    name: str
    transport: str
    description: str = ""
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None


def server_spec(body: Mapping[str, Any]) -> McpServerSpec:
    """A stdio (``command``, ``args``, ``env``) or streamable-HTTP (``url``) server.

    Example:
        >>> server_spec({"name": "calc", "command": "uvx", "args": ["calc-mcp"]}).transport
        'stdio'
        >>> server_spec({"name": "docs", "url": "https://example.com/mcp"}).transport
        'http'
    """
    name = body.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidParameter("name must be 1-64 letters, digits, _ or -, starting with a letter")
    description = body.get("description", "")
    if not isinstance(description, str) or len(description) > 2000:
        raise InvalidParameter("description must be a string of at most 2000 characters")
    command, url = body.get("command"), body.get("url")
    if ("command" in body) == ("url" in body):
        raise InvalidParameter("give either command (a stdio server) or url (an HTTP server)")
    if "url" in body:
        if "args" in body or "env" in body:
            raise InvalidParameter("args and env are for stdio servers (command)")
        if not isinstance(url, str) or len(url) > 2048 or not _URL.fullmatch(url):
            raise InvalidParameter("url must be an http(s) URL of at most 2048 characters")
        try:
            httpx.URL(url)
        except (httpx.InvalidURL, ValueError) as exc:
            raise InvalidParameter(f"url is not a valid URL: {exc}") from exc
        return McpServerSpec(name, HTTP, description, url=url)
    if not isinstance(command, str) or not command.strip() or len(command) > 1024:
        raise InvalidParameter("command must be a non-empty string of at most 1024 characters")
    args = body.get("args", [])
    if (
        not isinstance(args, list)
        or len(args) > MAX_ARGS
        or not all(isinstance(a, str) and len(a) <= MAX_VALUE_CHARS for a in args)
    ):
        raise InvalidParameter(f"args must be a list of at most {MAX_ARGS} strings")
    env = _strings(body.get("env", {}), "env", _ENV_NAME, MAX_ENV)
    return McpServerSpec(name, STDIO, description, command=command, args=tuple(args), env=env)


def header_values(raw: Any) -> dict[str, str]:
    """A user's headers for an HTTP server (``{"Authorization": "Bearer ..."}``)."""
    return _strings(raw, "headers", _HEADER, MAX_HEADERS, required=True)


def _strings(
    raw: Any, what: str, pattern: re.Pattern[str], most: int, *, required: bool = False
) -> dict[str, str]:
    if not isinstance(raw, dict) or len(raw) > most or (required and not raw):
        raise InvalidParameter(f"{what} must be an object of at most {most} names → text")
    for key, value in raw.items():
        if not isinstance(key, str) or not pattern.fullmatch(key):
            raise InvalidParameter(f"{what}: '{key[:40]}' is not a valid name")
        if not isinstance(value, str) or len(value) > MAX_VALUE_CHARS or _BREAK.search(value):
            raise InvalidParameter(f"{what}.{key} must be a one-line string")
    return dict(raw)


class McpCatalog:
    """Add, list, get and delete a space's MCP servers; store users' headers (encrypted).

    Example:
        >>> info = catalog.add(user.id, server_spec({"name": "calc", "command": "calc"}))
        ...                                                             # doctest: +SKIP
        >>> [s.name for s in catalog.list(user.id)]                     # doctest: +SKIP
        ['calc']
    """

    def __init__(self, db: Database, box: SecretBox, clock: Clock = utcnow) -> None:
        self._db = db
        self._box = box
        self._clock = clock

    def add(
        self, user_id: int, spec: McpServerSpec, *, space_id: int | None = None
    ) -> McpServerInfo:
        now = self._clock()
        with self._db.transaction() as session:
            access = Access.load(session, user_id)
            space = access.space(space_id)
            access.require(space, Permission.EDIT)
            taken = session.scalars(
                select(McpServer.id).where(McpServer.space_id == space, McpServer.name == spec.name)
            ).first()
            if taken is not None:
                raise Conflict(f"the space already has an MCP server named '{spec.name}'")
            row = McpServer(
                id=new_id(),
                owner_id=user_id,
                space_id=space,
                name=spec.name,
                description=spec.description,
                transport=spec.transport,
                command=spec.command,
                args=list(spec.args),
                url=spec.url,
                env_secret=self._box.encrypt(dict(spec.env)) if spec.env else None,
                created_at=now,
                updated_at=now,
            )
            session.add(row)
            session.flush()
            return self._info(row, set())

    def list(self, user_id: int, *, space_id: int | None = None) -> list[McpServerInfo]:
        with self._db.reading() as session:
            access = Access.load(session, user_id)
            space = access.space(space_id)
            access.require(space, Permission.READ)
            rows = session.scalars(
                select(McpServer).where(McpServer.space_id == space).order_by(McpServer.id.desc())
            ).all()
            mine = self._with_credentials(session, user_id, [r.id for r in rows])
            return [self._info(row, mine) for row in rows]

    def get(self, user_id: int, server_id: int) -> McpServerInfo:
        with self._db.reading() as session:
            row = self._visible(session, user_id, server_id)
            return self._info(row, self._with_credentials(session, user_id, [row.id]))

    def delete(self, user_id: int, server_id: int) -> None:
        with self._db.transaction() as session:
            row = self._visible(session, user_id, server_id)
            Access.load(session, user_id).require_delete(
                row.space_id, row.owner_id, "this MCP server"
            )
            session.delete(row)

    def in_space(self, session: Any, space_id: int, server_ids: Sequence[int]) -> set[int]:
        """Which of ``server_ids`` belong to ``space_id`` (a bot's check, in its transaction)."""
        return set(
            session.scalars(
                select(McpServer.id).where(
                    McpServer.space_id == space_id, McpServer.id.in_(list(server_ids))
                )
            )
        )

    def set_credentials(self, user_id: int, server_id: int, headers: dict[str, str]) -> list[str]:
        """Store the user's headers for an HTTP server (replacing any); their names back."""
        with self._db.transaction() as session:
            row = self._visible(session, user_id, server_id)
            if row.transport != HTTP:
                raise InvalidParameter("credentials are for HTTP servers; a stdio server has env")
            stored = session.scalars(
                select(McpCredential).where(
                    McpCredential.server_id == server_id, McpCredential.owner_id == user_id
                )
            ).first()
            if stored is None:
                stored = McpCredential(
                    id=new_id(), server_id=server_id, owner_id=user_id, secret=""
                )
                session.add(stored)
            stored.secret = self._box.encrypt(headers)
            stored.updated_at = self._clock()
        return sorted(headers)

    def clear_credentials(self, user_id: int, server_id: int) -> None:
        with self._db.transaction() as session:
            self._visible(session, user_id, server_id)
            session.execute(
                delete(McpCredential).where(
                    McpCredential.server_id == server_id, McpCredential.owner_id == user_id
                )
            )

    def endpoint(self, user_id: int, server_id: int) -> Endpoint:
        """How ``user_id`` reaches the server: its env, or the user's own headers."""
        with self._db.reading() as session:
            row = self._visible(session, user_id, server_id)
            secret = session.scalars(
                select(McpCredential.secret).where(
                    McpCredential.server_id == server_id, McpCredential.owner_id == user_id
                )
            ).first()
            return Endpoint(
                server_id=row.id,
                name=row.name,
                transport=row.transport,
                command=row.command,
                args=tuple(row.args or ()),
                env=self._box.decrypt(row.env_secret) if row.env_secret else {},
                url=row.url,
                headers=self._box.decrypt(secret) if secret else {},
                updated_at=row.updated_at,
            )

    def _visible(self, session: Any, user_id: int, server_id: int) -> McpServer:
        row = session.scalars(
            select(McpServer).where(McpServer.id == server_id, visible(McpServer.space_id, user_id))
        ).first()
        if row is None:
            raise NotFound(f"MCP server {server_id} does not exist")
        return row

    def _with_credentials(self, session: Any, user_id: int, ids: Sequence[int]) -> set[int]:
        if not ids:
            return set()
        return set(
            session.scalars(
                select(McpCredential.server_id).where(
                    McpCredential.owner_id == user_id, McpCredential.server_id.in_(list(ids))
                )
            )
        )

    def _info(self, row: McpServer, with_credentials: set[int]) -> McpServerInfo:
        env = self._box.decrypt(row.env_secret) if row.env_secret else {}
        return McpServerInfo(
            id=row.id,
            owner_id=row.owner_id,
            space_id=row.space_id,
            name=row.name,
            description=row.description,
            transport=row.transport,
            command=row.command,
            args=tuple(row.args or ()),
            url=row.url,
            env_names=tuple(sorted(env)),
            created_at=row.created_at,
            updated_at=row.updated_at,
            has_credentials=row.id in with_credentials,
        )
