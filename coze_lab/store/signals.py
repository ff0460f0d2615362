"""Wake-ups between replicas: PostgreSQL ``LISTEN/NOTIFY``, in-process elsewhere.

A topic is a short string such as ``chat:123`` (a chat's events or status changed) or
``cancel-run:456``. :meth:`Signals.notify` inside a write transaction sends it when the
transaction commits (PostgreSQL delivers a ``NOTIFY`` only then, so a woken reader always
finds the rows); :meth:`Signals.publish` sends one on its own. Every replica listens on one
dedicated connection and hands topics to the waiters and handlers of its event loop.

On SQLite and MariaDB there is no such channel: a topic reaches this process only (one
process per SQLite file is the supported shape), and readers keep a slow safety poll.

Example:
    >>> signals = Signals(Database("sqlite:///:memory:"))
    >>> signals.shared
    False
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator

from sqlalchemy import Connection, func, select

from coze_lab.store.db import Database, DriverConnection

log = logging.getLogger("coze_lab.signals")

#: the PostgreSQL channel every replica listens on
CHANNEL = "coze_lab"
#: seconds between reconnect attempts of a listener whose connection broke
RECONNECT_S = 1.0


class Signals:
    """Topics for the waiters of one event loop, shared with other replicas on PostgreSQL."""

    def __init__(self, db: Database) -> None:
        self.db = db
        #: True when topics reach every replica (PostgreSQL); else this process only
        self.shared = db.dialect == "postgresql"
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._handlers: dict[str, list[Callable[[str], None]]] = {}
        self._reconnected: list[Callable[[], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._listener: asyncio.Task[None] | None = None
        self._is_listening = False
        #: the PostgreSQL backend of the listening connection (None while not listening)
        self.listener_pid: int | None = None

    @property
    def listening(self) -> bool:
        """Whether topics sent by other replicas reach this process now: True on PostgreSQL
        while the listener listens (never before it first does, nor while it reconnects);
        always False elsewhere. A cache that other replicas invalidate is trusted only then."""
        return self.shared and self._is_listening

    # ---- sending ------------------------------------------------------------------------
    def notify(self, connection: Connection | DriverConnection, topic: str) -> None:
        """On PostgreSQL, send ``topic`` to every replica when the transaction of
        ``connection`` commits; elsewhere nothing (see :meth:`sending`)."""
        if not self.shared:
            return
        if isinstance(connection, DriverConnection):  # a hot write's: no statement building
            connection.send("select pg_notify(%s, %s)", (CHANNEL, topic), touches_rows=False)
        else:
            connection.execute(select(func.pg_notify(CHANNEL, topic)))

    @contextlib.contextmanager
    def sending(self) -> Iterator[Callable[[Connection, str], None]]:
        """A ``send(connection, topic)`` for the transactions inside the block: on PostgreSQL
        a NOTIFY sent with their commit; elsewhere delivered to this process when the block
        ends (after the commit; nothing when it raised)."""
        if self.shared:
            yield self.notify
            return
        topics: list[str] = []
        yield lambda _connection, topic: topics.append(topic)
        for topic in topics:
            self.deliver(topic)

    def publish(self, topic: str) -> None:
        """Send ``topic`` now, on its own (after a commit, or with nothing to commit)."""
        if self.shared:
            with self.db.write() as connection:
                connection.execute(select(func.pg_notify(CHANNEL, topic)))
        else:
            self.deliver(topic)

    # ---- receiving ----------------------------------------------------------------------
    def on(self, prefix: str, handler: Callable[[str], None]) -> None:
        """Call ``handler(rest)`` on the event loop for every topic ``prefix:rest``."""
        self._handlers.setdefault(prefix, []).append(handler)

    def on_reconnect(self, handler: Callable[[], None]) -> None:
        """Call ``handler()`` on the event loop each time the listener listens again after
        losing its connection: topics sent meanwhile were lost, so look at the database
        (or drop what a cache kept). It runs before :attr:`listening` turns True again."""
        self._reconnected.append(handler)

    @contextlib.contextmanager
    def waiting(self, topic: str) -> Iterator[asyncio.Event]:
        """An event set whenever ``topic`` arrives while the block runs (clear it after
        each look at the database, before the next wait)."""
        wake = asyncio.Event()
        self._waiters.setdefault(topic, set()).add(wake)
        try:
            yield wake
        finally:
            waiters = self._waiters.get(topic)
            if waiters is not None:
                waiters.discard(wake)
                if not waiters:
                    del self._waiters[topic]

    def deliver(self, topic: str) -> None:
        """Hand ``topic`` to this process's waiters and handlers (from any thread)."""
        loop = self._loop
        if loop is None:
            with contextlib.suppress(RuntimeError):
                loop = asyncio.get_running_loop()
        if loop is None:
            return  # no event loop: nobody can be waiting
        if threading.get_ident() == self._thread or _running(loop):
            self._dispatch(topic)
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self._dispatch, topic)

    def _dispatch(self, topic: str) -> None:
        for wake in list(self._waiters.get(topic, ())):
            wake.set()
        prefix, _, rest = topic.partition(":")
        for handler in list(self._handlers.get(prefix, ())):
            try:
                handler(rest)
            except Exception:  # one bad handler does not stop the others
                log.exception("signal handler for %s failed", topic)

    # ---- the listener -------------------------------------------------------------------
    def bind(self) -> None:
        """Deliver to the running event loop (once; the first loop that uses it)."""
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.get_running_loop()
            self._thread = threading.get_ident()

    def start(self) -> None:
        """Bind to the running event loop; on PostgreSQL, start listening."""
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        if self.shared and self._listener is None:
            self._listener = self._loop.create_task(self._listen(), name="coze-lab-signals")

    async def ready(self, timeout: float = 10.0) -> None:
        """Wait until the listener listens (at once off PostgreSQL)."""
        if not self.shared:
            return
        deadline = asyncio.get_running_loop().time() + timeout
        while not self._is_listening:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError("the PostgreSQL listener did not start")
            await asyncio.sleep(0.01)

    async def _listen(self) -> None:
        import psycopg

        conninfo = self.db.url.set(drivername="postgresql").render_as_string(hide_password=False)
        listened = False
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    conninfo, autocommit=True
                ) as connection:
                    await connection.execute(f"LISTEN {CHANNEL}")
                    if listened:  # before ``listening`` says True: caches are cleared first
                        self._resync()
                    self._is_listening = True
                    self.listener_pid = connection.info.backend_pid
                    listened = True
                    async for notice in connection.notifies():
                        self._dispatch(notice.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database restarted: listen again
                log.warning("signal listener lost its connection (%s); reconnecting", exc)
            finally:
                self._is_listening = False
                self.listener_pid = None
            # a topic sent while nobody listened is lost: wake every waiter to look again
            for waiters in list(self._waiters.values()):
                for wake in waiters:
                    wake.set()
            await asyncio.sleep(RECONNECT_S)

    def _resync(self) -> None:
        for handler in list(self._reconnected):
            try:
                handler()
            except Exception:
                log.exception("reconnect handler failed")

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None


def _running(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
