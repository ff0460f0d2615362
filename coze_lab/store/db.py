"""The Database handle: one engine, short transactions, migrations on start."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, create_engine, event, exc
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger(__name__)


def sqlite_url(path: Path) -> str:
    """The SQLAlchemy URL of an SQLite file.

    Example:
        >>> sqlite_url(Path("/tmp/x.db"))
        'sqlite:////tmp/x.db'
    """
    return f"sqlite:///{path}"


_ORJSON_STRICT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def json_text(value: Any) -> str:
    """JSON columns' text: orjson where it gives what ``json.dumps`` would mean (several
    times faster on the hot writes), ``json.dumps`` for what orjson refuses (integers
    beyond 64 bits, non-string keys) so nothing that was storable stops being so.

    Example:
        >>> json_text({"a": [1, "é"]}), json_text({1: 2**70})
        ('{"a":[1,"é"]}', '{"1": 1180591620717411303424}')
    """
    try:
        return orjson.dumps(value, option=_ORJSON_STRICT).decode()
    except TypeError:
        return json.dumps(value)


def sqlite_driver(vectors: bool = True) -> tuple[Any, Any]:
    """The DB-API module for SQLite and the sqlite-vec loader, or ``(None, None)``.

    With ``vectors`` and ``sqlite_vec`` installed: ``pysqlite3`` (a build of the ``sqlite3``
    module that may load extensions, which common Python builds leave out) where it is
    installed, else the standard ``sqlite3`` if it may load extensions. Otherwise the
    standard ``sqlite3`` (SQLAlchemy's default, ``None`` here) and no loader.

    Example:
        >>> module, load = sqlite_driver(vectors=False)
        >>> module is None and load is None
        True
    """
    if not vectors:
        return None, None
    try:
        import sqlite_vec  # type: ignore[import-untyped]
    except ImportError:
        return None, None
    try:
        import pysqlite3.dbapi2 as module  # type: ignore[import-untyped]
    except ImportError:
        import sqlite3 as module

        if not hasattr(module.Connection, "enable_load_extension"):
            return None, None
    return module, sqlite_vec.load


def _load_vec(dbapi_connection: Any, load: Any) -> bool:
    try:
        dbapi_connection.enable_load_extension(True)
        try:
            load(dbapi_connection)
        finally:
            dbapi_connection.enable_load_extension(False)
    except Exception as exc:  # the extension is optional: search falls back to a scan
        log.warning("sqlite-vec did not load (%s): vector search falls back to a scan", exc)
        return False
    return True


def _tune_sqlite(engine: Engine, database: Database | None = None, load: Any = None) -> None:
    # pysqlite opens transactions lazily and never for SELECT; emit BEGIN ourselves so a
    # transaction is one unit from its first statement (SQLAlchemy's documented recipe).
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        if load is not None and database is not None and database.sqlite_vec is not False:
            database.sqlite_vec = _load_vec(dbapi_connection, load)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # IMMEDIATE takes the write lock up front: a deferred transaction that reads and then
        # writes fails at once ("database is locked") when another process wrote meanwhile.
        mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
        connection.connection.driver_connection.execute(f"BEGIN {mode}")


#: a pooled server connection idle this long is pinged before use (a round trip); one used
#: more recently is not: a ping on every checkout doubled the round trips of short reads
PING_IDLE_S = 10.0


def _ping_idle(engine: Engine) -> None:
    """SQLAlchemy's pessimistic disconnect handling, for idle connections only: one that
    fails its ping is replaced (the pool retries the checkout)."""

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["checked_in"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        if time.monotonic() - record.info.get("checked_in", float("-inf")) < PING_IDLE_S:
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as error:
            if engine.dialect.is_disconnect(error, dbapi_connection, None):
                raise exc.DisconnectionError() from error
            raise
        if not alive:
            raise exc.DisconnectionError()


#: connections the pool of a server database keeps open. A server's threads each hold one
#: at a time: the workflow engine's writer threads (8), the request handlers' reader
#: threads (``coze_lab.store.offload``, 4) and the event loop. A pool smaller than that
#: closes the connections returned beyond its size and opens new ones when the threads want
#: them again (on PostgreSQL a new backend process each time: about one per three runs
#: of ``/v1/workflow/run`` with SQLAlchemy's default of 5)
SERVER_POOL_SIZE = 16


class Database:
    """Engine + session factory for one database URL.

    Example:
        >>> db = Database("sqlite:///:memory:")
        >>> with db.transaction() as session:
        ...     session.execute(text("select 1")).scalar()
        1
    """

    def __init__(self, url: str, *, echo: bool = False, sqlite_vec: bool = True) -> None:
        self.url = make_url(url)
        #: SQLite: whether connections load sqlite-vec (``None`` until the first connects;
        #: ``False`` when asked not to, when the packages are missing or it fails to load)
        self.sqlite_vec: bool | None = None
        kwargs: dict[str, Any] = {
            "echo": echo,
            "json_serializer": json_text,
        }
        load = None
        if self.dialect == "sqlite":
            module, load = sqlite_driver(sqlite_vec)
            if module is None:
                self.sqlite_vec = False
            else:
                kwargs["module"] = module
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
            if self.url.database:
                Path(self.url.database).parent.mkdir(parents=True, exist_ok=True)
        if self.dialect != "sqlite":
            kwargs["pool_size"] = SERVER_POOL_SIZE
        self.engine = create_engine(self.url, **kwargs)
        if self.dialect == "sqlite":
            _tune_sqlite(self.engine, self, load)
        else:
            _ping_idle(self.engine)
        self._writer = self.engine.execution_options(sqlite_begin="IMMEDIATE")
        self._sessions = sessionmaker(self._writer, expire_on_commit=False)
        self._readers = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.url.get_backend_name()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session whose work commits on success and rolls back on any exception."""
        with self._sessions() as session, session.begin():
            yield session

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A Core connection in a write transaction (the hot paths use plain statements)."""
        with self._writer.begin() as connection:
            yield connection

    @contextmanager
    def reading(self) -> Iterator[Session]:
        """An ORM session in a read transaction (on SQLite it never takes the write lock)."""
        with self._readers() as session, session.begin():
            yield session

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A Core connection in a read-only transaction (never blocks writers)."""
        with self.engine.begin() as connection:
            yield connection

    def has_sqlite_vec(self) -> bool:
        """Whether this is SQLite with sqlite-vec loaded (connects once to find out).

        Example:
            >>> Database("sqlite://", sqlite_vec=False).has_sqlite_vec()
            False
        """
        if self.dialect != "sqlite":
            return False
        if self.sqlite_vec is None:
            with self.engine.connect():
                pass
        return bool(self.sqlite_vec)

    def upgrade(self) -> str:
        """Bring the schema to the newest migration; return the revision."""
        from coze_lab.store.migrate import upgrade

        return upgrade(self.engine)

    def revision(self) -> str | None:
        from coze_lab.store.migrate import current_revision

        return current_revision(self.engine)

    def check(self) -> dict[str, Any]:
        """Health of the database: reachable, dialect, schema revision."""
        try:
            from coze_lab.store.migrate import stored_revision

            return {"ok": True, "dialect": self.dialect, "revision": stored_revision(self.engine)}
        except Exception as exc:  # health reports failures instead of raising them
            return {"ok": False, "dialect": self.dialect, "error": type(exc).__name__}

    def dispose(self) -> None:
        self.engine.dispose()
