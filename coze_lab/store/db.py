"""The Database handle: one engine, short transactions, migrations on start."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, create_engine, event, exc
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

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


class DriverConnection:
    """A DBAPI connection inside a write transaction, with its dialect: what
    ``Database.hot_write`` yields and ``coze_lab.store.bulk`` statements run on.

    Errors of ``execute`` are SQLAlchemy's (``IntegrityError``, ``OperationalError``...), as
    on any other path. ``connection`` is the SQLAlchemy connection whose transaction this
    is, where there is one (not on the long-lived SQLite writer).
    """

    def __init__(
        self,
        driver: Any,
        dialect: Any,
        connection: Connection | None = None,
        *,
        pipeline: Any = None,
    ) -> None:
        self.driver = driver
        self.dialect = dialect
        self.connection = connection
        #: psycopg's pipeline when statements are sent without waiting for each answer
        #: (a group commit's): ``execute`` waits for its own, ``send`` for none
        self.pipeline = pipeline
        #: rows of plain inserts held back to be sent together (``coze_lab.store.bulk``):
        #: written before any other statement, and by ``flush``
        self.deferred: Any = None

    def flush(self) -> None:
        """Send the deferred inserts now."""
        deferred, self.deferred = self.deferred, None
        if deferred is None:
            return
        try:
            deferred.flush(self)
        finally:
            self.deferred = deferred

    def execute(self, statement: str, parameters: Any = ()) -> Any:
        """Run one statement; return the DBAPI cursor (its ``rowcount``, its rows)."""
        self.flush()
        cursor = self.driver.cursor()
        try:
            cursor.execute(statement, parameters)
            if self.pipeline is not None:
                self.pipeline.sync()
        except self.dialect.loaded_dbapi.Error as error:
            cursor.close()
            raise _wrapped(statement, parameters, error, self.dialect) from error
        return cursor

    def send(self, statement: str, parameters: Any = (), *, touches_rows: bool = True) -> None:
        """Run one statement whose answer nobody reads (in a pipeline, not awaited: an
        error surfaces when the pipeline is synced, and rolls the transaction back).
        ``touches_rows=False``: one that reads and writes no table (a NOTIFY), which need
        not wait for the deferred inserts."""
        if self.pipeline is None:
            self.execute(statement, parameters).close()
            return
        if touches_rows:
            self.flush()
        self._executemany(statement, [parameters])

    def executemany(self, statement: str, rows: list[Any]) -> None:
        self.flush()
        self._executemany(statement, rows)

    def send_numbered(self, statement: str, parameters: Sequence[Any]) -> None:
        """``send`` for a statement with ``$1, $2, …`` placeholders, in psycopg's raw
        cursor: nothing parses the statement (psycopg caches its parse of ``%s``
        statements only up to 50 parameters; a multi-row insert has more)."""
        import psycopg

        self.flush()
        cursor = psycopg.RawCursor(self.driver)
        try:
            cursor.executemany(statement, [parameters])
        except self.dialect.loaded_dbapi.Error as error:
            raise _wrapped(statement, parameters, error, self.dialect) from error
        finally:
            cursor.close()

    def _executemany(self, statement: str, rows: list[Any]) -> None:
        cursor = self.driver.cursor()
        try:
            cursor.executemany(statement, rows)
        except self.dialect.loaded_dbapi.Error as error:
            raise _wrapped(statement, rows, error, self.dialect) from error
        finally:
            cursor.close()


def _wrapped(statement: str, parameters: Any, error: Exception, dialect: Any) -> Exception:
    return exc.DBAPIError.instance(statement, parameters, error, dialect.loaded_dbapi.Error)


class KeptConnection:
    """A Core connection one thread keeps between uses (a reader thread's, the group
    commit's): ``get`` opens it with ``connect``; one idle for ``PING_IDLE_S`` goes back to
    the pool first and another is checked out (the pool pings it).

    Example:
        >>> kept = KeptConnection(Database("sqlite://").engine.connect)
        >>> kept.get() is kept.get()
        True
        >>> kept.close()
    """

    def __init__(self, connect: Callable[[], Connection]) -> None:
        self._connect = connect
        #: the connection kept now (None: opened on the next ``get``)
        self.current: Connection | None = None
        self._used_at = 0.0

    def get(self) -> Connection:
        now = time.monotonic()
        if self.current is not None and now - self._used_at >= PING_IDLE_S:
            self.close()
        if self.current is None:
            self.current = self._connect()
        self._used_at = now
        return self.current

    def close(self) -> None:
        """Give the connection back (the next ``get`` opens another)."""
        connection, self.current = self.current, None
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()


class _SqliteWriter:
    """One long-lived connection for the hot writes of an SQLite file (run steps).

    A pooled ``Engine.begin`` costs about 25 µs of CPU (checkout, events, ``BEGIN``,
    check-in) against 6 µs for the statements themselves: a run step is a few of them.
    The connection takes the write lock with ``BEGIN IMMEDIATE`` like every other writer
    of the store, so writers in other processes (and this process's pooled connections)
    are serialized by SQLite as before; a transaction that fails is rolled back, and a
    connection that cannot begin or roll back is closed and opened again on next use.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._connection: Any = None

    def _open(self) -> Any:
        proxy = self._engine.raw_connection()  # a new connection, "connect" events ran
        self._proxy = proxy
        return proxy.driver_connection

    def _discard(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                self._proxy.close()

    def _begin(self, dialect: Any) -> Any:
        """The connection in a new write transaction; one that fails to begin for another
        reason than a busy database (closed, broken) is replaced once."""
        for attempt in (1, 2):
            if self._connection is None:
                self._connection = self._open()
            try:
                self._connection.execute("BEGIN IMMEDIATE")
                return self._connection
            except dialect.loaded_dbapi.Error as error:
                busy = isinstance(error, dialect.loaded_dbapi.OperationalError) and (
                    "locked" in str(error) or "busy" in str(error)
                )
                self._discard()
                if busy or attempt == 2:
                    raise _wrapped("BEGIN IMMEDIATE", (), error, dialect) from error
        raise AssertionError("unreachable")

    @contextmanager
    def transaction(self) -> Iterator[DriverConnection]:
        dialect = self._engine.dialect
        with self._lock:
            connection = self._begin(dialect)
            try:
                yield DriverConnection(connection, dialect)
                try:
                    connection.execute("COMMIT")
                except dialect.loaded_dbapi.Error as error:
                    raise _wrapped("COMMIT", (), error, dialect) from error
            except BaseException:
                try:
                    if connection.in_transaction:
                        connection.execute("ROLLBACK")
                except Exception:  # a connection that cannot roll back is not reused
                    self._discard()
                raise

    def close(self) -> None:
        with self._lock:
            self._discard()
        self._engine.dispose()


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
        # an in-memory database lives in its pooled connection: no second connection to it
        memory = (
            not self.url.database
            or self.url.database == ":memory:"
            or ("mode=memory" in str(self.url))
        )
        self._hot: _SqliteWriter | None = None
        #: per thread: the group transaction its ``hot_write`` blocks join, if any
        self._joined = threading.local()
        self._kept: list[KeptConnection] = []
        self._kept_lock = threading.Lock()
        if self.dialect == "sqlite" and not memory:
            # its own engine, so that the connection is a new one: a pooled connection
            # comes with a statement cache filled by whatever it ran before (migrations),
            # where pysqlite's cache then evicts the newest entry on every miss and the
            # step's few statements were compiled again on every execution
            hot = create_engine(self.url, poolclass=NullPool, **kwargs)
            _tune_sqlite(hot, self, load)
            self._hot = _SqliteWriter(hot)

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
    def hot_write(self) -> Iterator[DriverConnection]:
        """A write transaction for hot paths that send prepared statements only
        (``coze_lab.store.bulk``): on an SQLite file one long-lived connection, no pool
        checkout; elsewhere a pooled connection's transaction, as ``write``. Commits on
        success, rolls back on any exception. In a thread that is ``joining`` a group's
        transaction, a part of that one instead (``coze_lab.store.group``).
        """
        joined = getattr(self._joined, "connection", None)
        if joined is not None:  # part of a group's transaction (``coze_lab.store.group``)
            yield joined
            return
        if self._hot is not None:
            with self._hot.transaction() as connection:
                yield connection
            return
        with self._writer.begin() as connection:
            yield DriverConnection(
                connection.connection.driver_connection, connection.dialect, connection
            )

    def writer_connection(self) -> Connection:
        """A Core connection for writes that its caller keeps open (and closes)."""
        return self._writer.connect()

    @contextmanager
    def joining(self, connection: DriverConnection) -> Iterator[None]:
        """Inside the block, this thread's ``hot_write`` blocks run in ``connection``'s
        transaction: they neither begin nor commit it (a group commit's writes)."""
        self._joined.connection = connection
        try:
            yield
        finally:
            self._joined.connection = None

    @contextmanager
    def reading(self) -> Iterator[Session]:
        """An ORM session in a read transaction (on SQLite it never takes the write lock)."""
        with self._readers() as session, session.begin():
            yield session

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A Core connection in a read-only transaction (never blocks writers). In a thread
        that ``keeps_reader``, that thread's own connection instead."""
        reader = getattr(self._joined, "reader", None)
        if reader is not None:
            connection = reader.get()
            try:
                yield connection
            except BaseException:
                # a connection invalidated inside SQLAlchemy's (autobegun) transaction is
                # refused until it is rolled back; in autocommit nothing else is undone
                with contextlib.suppress(Exception):
                    connection.rollback()
                raise
            return
        with self.engine.begin() as connection:
            yield connection

    def keep_reader(self) -> None:
        """From now on this thread's ``read`` blocks use one long-lived connection of
        their own, on PostgreSQL in autocommit: no pool checkout, no ``BEGIN`` and no
        ``ROLLBACK`` round trips. Its default isolation, read committed, gives each
        statement its own snapshot inside a transaction too, so a read sees the same.
        Elsewhere (SQLite, MariaDB's repeatable read) nothing changes."""
        if self.dialect == "postgresql" and getattr(self._joined, "reader", None) is None:
            self._joined.reader = reader = KeptConnection(
                lambda: self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            )
            with self._kept_lock:
                self._kept.append(reader)

    def close_readers(self) -> None:
        """Return the connections that ``keep_reader`` threads kept (their threads have
        stopped, or read no more)."""
        with self._kept_lock:
            kept, self._kept = self._kept, []
        for reader in kept:
            reader.close()

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

        revision = upgrade(self.engine)
        if self._hot is not None:
            # SQLite: new connections from here on. pysqlite's statement cache (LFU, 100
            # entries) of the connection that ran the migrations is full of their
            # statements, and on every miss it evicts its newest entry: the app's own
            # statements would be compiled again on every execution there.
            self.engine.dispose()
        return revision

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
        self.close_readers()
        if self._hot is not None:
            self._hot.close()
        self.engine.dispose()
