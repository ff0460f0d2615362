"""Personal access tokens: random secrets, stored only as SHA-256, checked every request.

On PostgreSQL each replica keeps the tokens it checked in a small cache (:class:`TokenCache`,
keyed by the token's hash), so a request with a known token needs no database round trip.
The cached row is still checked on every request (expiry against the clock); a revoke
commits a ``NOTIFY`` that drops the token from every replica's cache, and a token in use is
read again from the database at least every ``LAST_USED_RESOLUTION`` (when its
``last_used_at`` is written), which bounds what a lost ``NOTIFY`` can let through. The
cache is used only while the replica's listener listens and is emptied when it listens
again after losing its connection. Off PostgreSQL nothing is cached (see
``docs/security.md``): on an SQLite file each check reads the row on a long-lived connection
of its own (:class:`_SqliteTokenReader`), which sees every commit of every process.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import bindparam, select, update
from sqlalchemy.engine import make_url

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import InvalidParameter, NotFound, PermissionDenied, Unauthenticated
from coze_lab.core.ids import new_id
from coze_lab.store import Database
from coze_lab.store.models import PersonalAccessToken

if TYPE_CHECKING:
    from coze_lab.store.signals import Signals

log = logging.getLogger(__name__)

PREFIX = "pat_"
SECRET_BYTES = 32
SCOPES = frozenset({"chat", "workflow", "files", "bots", "knowledge"})
CONNECTORS = frozenset({"1024", "999"})  # API, Web SDK
MAX_DAYS = 3650
LAST_USED_RESOLUTION = timedelta(seconds=60)
#: tokens a replica's cache holds (least recently used dropped first)
CACHE_SIZE = 10_000
#: the signal topic prefix of a revoked token (``token:<id>``)
TOPIC = "token"
_TOKEN_SHAPE = re.compile(r"^pat_[A-Za-z0-9_-]{43}$")
_PAT = PersonalAccessToken.__table__
#: built once: every authenticated request runs it
_BY_HASH = select(
    _PAT.c.id,
    _PAT.c.user_id,
    _PAT.c.token_hash,
    _PAT.c.scopes,
    _PAT.c.connector_id,
    _PAT.c.revoked_at,
    _PAT.c.expires_at,
    _PAT.c.last_used_at,
).where(_PAT.c.token_hash == bindparam("digest"))


class _TokenRow(NamedTuple):
    """A token's row as the check reads it (the columns of ``_BY_HASH``)."""

    id: int
    user_id: int
    token_hash: str
    scopes: list[str] | None
    connector_id: str | None
    revoked_at: datetime | None
    expires_at: datetime | None
    last_used_at: datetime | None


class _SqliteTokenReader:
    """The token check's read on an SQLite file: one long-lived connection of its own, in
    autocommit, running one prepared statement (about 30 µs, against about 300 µs for a
    pooled connection's checkout, ``BEGIN``, the statement through SQLAlchemy, ``COMMIT``
    and check-in, on every authenticated request).

    Nothing is cached: each check is a new read. A statement outside a transaction reads
    the newest snapshot of a WAL database, so a revoke committed by any connection of any
    process (``coze-lab serve`` and the Jupyter extension may share the file) is seen by
    the next check. The connection never writes (``PRAGMA query_only``); a failure closes
    it and the check is answered by a pooled read, the connection opened again next time.
    """

    def __init__(self, db: Database) -> None:
        dialect = db.engine.dialect
        self._dbapi = dialect.loaded_dbapi
        args, params = dialect.create_connect_args(make_url(db.url))
        self._args = args
        self._params = {**params, "check_same_thread": False, "timeout": 30}
        self._sql = str(_BY_HASH.compile(dialect=dialect))
        self._lock = threading.Lock()
        self._connection: Any = None

    def _open(self) -> Any:
        connection = self._dbapi.connect(*self._args, **self._params)
        connection.isolation_level = None  # autocommit: every read sees the newest commit
        connection.execute("PRAGMA query_only=1")
        connection.execute("PRAGMA busy_timeout=30000")
        return connection

    def read(self, digest: str) -> _TokenRow | None:
        """The row of the token whose hash is ``digest``; raises the driver's error after
        closing the connection."""
        with self._lock:
            try:
                if self._connection is None:
                    self._connection = self._open()
                found = self._connection.execute(self._sql, (digest,)).fetchone()
            except Exception:
                self._close()
                raise
        if found is None:
            return None
        (token_id, user_id, token_hash, scopes, connector_id, revoked, expires, used) = found
        return _TokenRow(
            token_id,
            user_id,
            token_hash,
            None if scopes is None else json.loads(scopes),
            connector_id,
            _utc(revoked),
            _utc(expires),
            _utc(used),
        )

    def _close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()

    def close(self) -> None:
        with self._lock:
            self._close()


def _utc(stored: str | None) -> datetime | None:
    """A date as SQLAlchemy stores it in SQLite (naive UTC text), timezone-aware."""
    return None if stored is None else datetime.fromisoformat(stored).replace(tzinfo=timezone.utc)


def _sqlite_file(db: Database) -> bool:
    """Whether ``db`` is an SQLite file (an in-memory database has no second connection)."""
    url = db.url
    return (
        db.dialect == "sqlite"
        and bool(url.database)
        and url.database != ":memory:"
        and "mode=memory" not in str(url)
    )


@dataclass(frozen=True)
class TokenInfo:
    """What may be shown about a token after creation: never the secret."""

    id: int
    user_id: int
    name: str
    hint: str
    scopes: list[str] | None
    connector_id: str | None
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None

    def status(self, now: datetime) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"


@dataclass(frozen=True)
class Principal:
    """The caller behind a valid token."""

    user_id: int
    token_id: int
    scopes: frozenset[str] | None
    connector_id: str | None

    def require_scope(self, scope: str) -> None:
        if self.scopes is not None and scope not in self.scopes:
            raise PermissionDenied(f"this token lacks the '{scope}' scope")


def hash_token(raw: str) -> str:
    """The stored form of a token.

    Example:
        >>> len(hash_token("pat_x"))
        64
    """
    return hashlib.sha256(raw.encode()).hexdigest()


@dataclass(frozen=True)
class _Checked:
    """What a replica keeps of a valid token: enough to check it again without the row."""

    principal: Principal
    expires_at: datetime | None
    #: the ``last_used_at`` stored (the row is read again when it is due to be written)
    last_used_at: datetime


class TokenCache:
    """Valid tokens checked recently, by hash: a bounded, thread-safe LRU.

    ``active()`` says whether it may be used now (PostgreSQL, listener listening). A token
    dropped (revoked) or a cleared cache bumps the generation: a database read that began
    before is not stored, so a row read just before a revoke cannot come back after it.

    Example:
        >>> cache = TokenCache(lambda: True)
        >>> cache.generation
        0
    """

    def __init__(self, active: Callable[[], bool], *, size: int = CACHE_SIZE) -> None:
        self.active = active
        self.size = size
        self.generation = 0
        self._rows: OrderedDict[str, _Checked] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, digest: str) -> _Checked | None:
        if not self.active():
            return None
        with self._lock:
            found = self._rows.get(digest)
            if found is not None:
                self._rows.move_to_end(digest)
            return found

    def put(self, digest: str, checked: _Checked, generation: int) -> None:
        """Keep ``checked`` unless the cache changed since ``generation`` was read."""
        with self._lock:
            if generation != self.generation or not self.active():
                return
            self._rows[digest] = checked
            self._rows.move_to_end(digest)
            while len(self._rows) > self.size:
                self._rows.popitem(last=False)

    def drop(self, token_id: int) -> None:
        """Forget the token ``token_id`` (revoked here or on another replica)."""
        with self._lock:
            self.generation += 1
            for digest in [d for d, c in self._rows.items() if c.principal.token_id == token_id]:
                del self._rows[digest]

    def clear(self) -> None:
        """Forget every token (revokes may have been missed)."""
        with self._lock:
            self.generation += 1
            self._rows.clear()


class TokenService:
    """Create, list, revoke and authenticate personal access tokens.

    Example:
        >>> info, secret = tokens.create(user_id, "ci", expires_in_days=30)  # doctest: +SKIP
        >>> tokens.authenticate(secret).user_id == user_id                  # doctest: +SKIP
        True
    """

    def __init__(
        self, db: Database, *, clock: Clock = utcnow, signals: Signals | None = None
    ) -> None:
        self._db = db
        self._clock = clock
        self._signals = signals
        self._reader = _SqliteTokenReader(db) if _sqlite_file(db) else None
        #: valid tokens by hash; used only while other replicas' revokes reach this one
        self.cache = TokenCache(lambda: signals is not None and signals.listening)
        if signals is not None:
            signals.on(TOPIC, lambda token_id: self.cache.drop(int(token_id)))
            signals.on_reconnect(self.cache.clear)

    def create(
        self,
        user_id: int,
        name: str,
        *,
        expires_in_days: int | None = None,
        expires_at: datetime | None = None,
        scopes: Iterable[str] | None = None,
        connector_id: str | None = None,
    ) -> tuple[TokenInfo, str]:
        """Make a token; the secret is returned here once and never stored."""
        now = self._clock()
        row = PersonalAccessToken(
            id=new_id(),
            user_id=user_id,
            name=_valid_name(name),
            scopes=_valid_scopes(scopes),
            connector_id=_valid_connector(connector_id),
            created_at=now,
            expires_at=_expiry(now, expires_in_days, expires_at),
            last_used_at=None,
            revoked_at=None,
        )
        secret = PREFIX + secrets.token_urlsafe(SECRET_BYTES)
        row.token_hash = hash_token(secret)
        row.hint = f"{PREFIX}…{secret[-4:]}"
        with self._db.transaction() as session:
            session.add(row)
        return _info(row), secret

    def list(self, user_id: int) -> list[TokenInfo]:
        with self._db.transaction() as session:
            rows = session.scalars(
                select(PersonalAccessToken)
                .where(PersonalAccessToken.user_id == user_id)
                .order_by(PersonalAccessToken.id.desc())
            ).all()
        return [_info(row) for row in rows]

    def revoke(self, user_id: int, token_id: int) -> TokenInfo:
        """Revoke one of the user's tokens (idempotent); another user's id is not found."""
        with self._db.transaction() as session:
            row = session.scalars(
                select(PersonalAccessToken).where(
                    PersonalAccessToken.id == token_id, PersonalAccessToken.user_id == user_id
                )
            ).first()
            if row is None:
                raise NotFound(f"token {token_id} does not exist")
            if row.revoked_at is None:
                row.revoked_at = self._clock()
            if self._signals is not None:  # every replica's cache drops it with the commit
                self._signals.notify(session.connection(), f"{TOPIC}:{token_id}")
            info = _info(row)
        self.cache.drop(token_id)
        return info

    def authenticate(self, raw: str | None) -> Principal:
        """The principal behind ``raw``.

        Raises Unauthenticated when the token is missing, malformed, unknown, expired or revoked.
        """
        digest = _digest(raw)
        now = self._clock()
        checked = self.cache.get(digest)
        if checked is not None and not _touch_due(checked, now):
            return _still_valid(checked, now)
        generation = self.cache.generation
        row = self._row(digest)
        if row is None or not hmac.compare_digest(row.token_hash, digest):
            raise Unauthenticated("unknown personal access token")
        if row.revoked_at is not None:
            raise Unauthenticated("personal access token has been revoked")
        if row.expires_at is not None and row.expires_at <= now:
            raise Unauthenticated("personal access token has expired")
        last_used = row.last_used_at
        if last_used is None or now - last_used >= LAST_USED_RESOLUTION:
            table = _PAT
            with self._db.write() as conn:
                conn.execute(update(table).where(table.c.id == row.id).values(last_used_at=now))
            last_used = now
        principal = Principal(
            user_id=row.user_id,
            token_id=row.id,
            scopes=None if row.scopes is None else frozenset(row.scopes),
            connector_id=row.connector_id,
        )
        self.cache.put(digest, _Checked(principal, row.expires_at, last_used), generation)
        return principal

    def _row(self, digest: str) -> Any:
        """The token's row (``_BY_HASH``), or None."""
        if self._reader is not None:
            try:
                return self._reader.read(digest)
            except Exception as exc:  # answered by a pooled read, as without the reader
                log.warning("token check: SQLite reader failed (%s); a pooled read answers", exc)
        with self._db.read() as conn:
            return conn.execute(_BY_HASH, {"digest": digest}).first()

    def close(self) -> None:
        """Close the SQLite reader's connection (it opens again on next use)."""
        if self._reader is not None:
            self._reader.close()

    async def authenticate_async(
        self, raw: str | None, offload: Callable[..., Awaitable[Principal]]
    ) -> Principal:
        """:meth:`authenticate` for an event loop: a cached token is checked here, anything
        that needs the database runs through ``offload`` (a thread on a server database)."""
        digest = _digest(raw)
        checked = self.cache.get(digest)
        if checked is not None:
            now = self._clock()
            if not _touch_due(checked, now):
                return _still_valid(checked, now)
        return await offload(self.authenticate, raw)


def _digest(raw: str | None) -> str:
    if not raw:
        raise Unauthenticated("missing personal access token")
    if not _TOKEN_SHAPE.fullmatch(raw):
        raise Unauthenticated("malformed personal access token")
    return hash_token(raw)


def _touch_due(checked: _Checked, now: datetime) -> bool:
    """Whether ``last_used_at`` is due to be written (the row is then read again)."""
    return now - checked.last_used_at >= LAST_USED_RESOLUTION


def _still_valid(checked: _Checked, now: datetime) -> Principal:
    if checked.expires_at is not None and checked.expires_at <= now:
        raise Unauthenticated("personal access token has expired")
    return checked.principal


def is_token_shaped(raw: str) -> bool:
    """Whether ``raw`` looks like a personal access token (no database involved)."""
    return bool(_TOKEN_SHAPE.fullmatch(raw))


def _valid_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        raise InvalidParameter("token name must be 1 to 100 characters")
    return name.strip()


def _valid_scopes(scopes: Iterable[str] | None) -> list[str] | None:
    if scopes is None:
        return None
    if isinstance(scopes, str):
        raise InvalidParameter("scopes must be a list")
    chosen = sorted(set(scopes))
    unknown = [s for s in chosen if s not in SCOPES]
    if unknown or not chosen:
        raise InvalidParameter(f"scopes must be a non-empty subset of {sorted(SCOPES)}")
    return chosen


def _valid_connector(connector_id: str | None) -> str | None:
    if connector_id is not None and connector_id not in CONNECTORS:
        raise InvalidParameter(f"connector_id must be one of {sorted(CONNECTORS)}")
    return connector_id


def _expiry(
    now: datetime, expires_in_days: int | None, expires_at: datetime | None
) -> datetime | None:
    if expires_in_days is not None and expires_at is not None:
        raise InvalidParameter("give expires_in_days or expires_at, not both")
    if expires_in_days is not None:
        if isinstance(expires_in_days, bool) or not isinstance(expires_in_days, int):
            raise InvalidParameter("expires_in_days must be an integer")
        if not 1 <= expires_in_days <= MAX_DAYS:
            raise InvalidParameter(f"expires_in_days must be within 1..{MAX_DAYS}")
        return now + timedelta(days=expires_in_days)
    if expires_at is not None:
        if expires_at <= now or expires_at > now + timedelta(days=MAX_DAYS):
            raise InvalidParameter("expires_at must be in the future, within ten years")
        return expires_at
    return None


def _info(row: PersonalAccessToken) -> TokenInfo:
    return TokenInfo(
        id=row.id,
        user_id=row.user_id,
        name=row.name,
        hint=row.hint,
        scopes=row.scopes,
        connector_id=row.connector_id,
        created_at=row.created_at,
        expires_at=row.expires_at,
        last_used_at=row.last_used_at,
        revoked_at=row.revoked_at,
    )
