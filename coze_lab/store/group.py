"""Group commit: the hot writes of many runs in one transaction on a server database.

On PostgreSQL or MariaDB each transaction costs round trips (``BEGIN``, ``COMMIT``), a
WAL flush, a pooled connection's checkout and a hand-off to a thread and back. Runs that
commit their steps side by side pay that once per step each. :class:`GroupCommit` has one
thread with one connection that takes every write waiting when it is free and commits
them together: under load a transaction carries many runs' steps, alone a write is its own
transaction as before. ``synchronous_commit`` stays on: a write's caller resumes only
after the commit that holds it is durable.

On PostgreSQL the group's statements are pipelined (sent without waiting for each
answer), and the plain inserts of all its writes wait to go as one multi-row ``INSERT``
per table (``coze_lab.store.bulk.Deferred``) until a statement of another kind or the end
of the group.

A write is a function whose ``Database.hot_write`` blocks join the group's transaction.
When one of them raises, the group is rolled back and each of its writes runs again in a
transaction of its own, so a failure is its own write's alone and leaves nothing behind.

Example:
    >>> import asyncio
    >>> db = Database("sqlite://")
    >>> group = GroupCommit(db)
    >>> def write() -> int:
    ...     with db.hot_write() as conn:
    ...         return conn.execute("select 41 + 1").fetchone()[0]
    >>> asyncio.run(group(write))
    42
    >>> group.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from coze_lab.store.bulk import Deferred
from coze_lab.store.db import Database, DriverConnection, KeptConnection

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

#: the most writes one transaction carries (a bound on the work a failure repeats)
MAX_GROUP = 64

_Item = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[[], Any]]


class GroupCommit:
    """Runs writes on one thread and connection, committing those waiting together.

    ``groups`` and ``writes`` count the transactions committed and the writes they held.
    """

    def __init__(self, db: Database, *, max_group: int = MAX_GROUP) -> None:
        self.db = db
        self.max_group = max_group
        self.groups = 0
        self.writes = 0
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        #: the thread's connection (replaced after a failure or when idle)
        self._kept = KeptConnection(db.writer_connection)
        self._thread: threading.Thread | None = None
        self._closed = False
        self._start = threading.Lock()

    async def __call__(self, write: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``write(*args, **kwargs)``, committed (with whatever else was waiting)."""
        if self._closed:
            raise RuntimeError("the group commit is closed")
        if self._thread is None:
            with self._start:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._serve, name="coze-lab-group-commit", daemon=True
                    )
                    self._thread.start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put((loop, future, functools.partial(write, *args, **kwargs)))
        return await future

    def close(self) -> None:
        """Commit what is waiting, then stop the thread and return its connection."""
        self._closed = True
        thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join()
            self._thread = None

    # ---- the writer thread ------------------------------------------------------------
    def _serve(self) -> None:
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                items = [first]
                stop = False
                while len(items) < self.max_group:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        stop = True
                        break
                    items.append(item)
                try:
                    outcomes = self._run(items)
                except BaseException as error:  # never leave a caller waiting
                    self._discard()
                    failure = error if isinstance(error, Exception) else RuntimeError(repr(error))
                    outcomes = [(None, failure)] * len(items)
                self._settle(items, outcomes)
                if stop:
                    return
        finally:
            self._discard()

    def _run(
        self, items: list[_Item], *, alone: bool = False
    ) -> list[tuple[Any, BaseException | None]]:
        """Each item's result or error: together in one transaction, or, when one of
        them fails before the commit, each in its own (``alone``: statement by statement,
        so that an error is raised by the statement that caused it). A commit that fails
        is not repeated (it may have taken effect): each of its writes gets the error."""
        try:
            values = self._transaction([call for _, _, call in items], pipelined=not alone)
        except _CommitFailed as failed:
            self._discard()
            return [(None, failed.error)] * len(items)
        except Exception as error:
            self._discard()  # a fresh connection for what follows (it may be broken)
            if alone:
                return [(None, error)]
            log.debug("group of %d writes rolled back (%s): one at a time", len(items), error)
            return [self._run([item], alone=True)[0] for item in items]
        self.groups += 1
        self.writes += len(items)
        return [(value, None) for value in values]

    def _transaction(self, calls: list[Callable[[], Any]], *, pipelined: bool) -> list[Any]:
        """The calls in one transaction; on PostgreSQL ``pipelined`` sends their
        statements without waiting for each answer (one wait for those whose answer is
        read, one for the rest before the commit)."""
        connection = self._kept.get()
        driver = connection.connection.driver_connection
        transaction = connection.begin()
        try:
            with _pipeline(driver) if pipelined else contextlib.nullcontext() as pipeline:
                joined = DriverConnection(driver, connection.dialect, connection, pipeline=pipeline)
                if pipeline is not None:  # one multi-row INSERT per table for the group
                    joined.deferred = Deferred()
                with self.db.joining(joined):
                    values = [call() for call in calls]
                joined.flush()
        except BaseException:
            with contextlib.suppress(Exception):
                transaction.rollback()
            raise
        try:
            transaction.commit()
        except Exception as error:
            raise _CommitFailed(error) from error
        return values

    def _discard(self) -> None:
        self._kept.close()

    @staticmethod
    def _settle(items: list[_Item], outcomes: list[tuple[Any, BaseException | None]]) -> None:
        """Hand each outcome to its caller: one wake-up per event loop, not per write."""
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[Any, Any, Any]]] = {}
        for (loop, future, _), (value, error) in zip(items, outcomes, strict=True):
            by_loop.setdefault(loop, []).append((future, value, error))
        for loop, settled in by_loop.items():
            with contextlib.suppress(RuntimeError):  # a loop that was closed meanwhile
                loop.call_soon_threadsafe(_resolve, settled)


class _CommitFailed(Exception):
    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _pipeline(driver: Any) -> contextlib.AbstractContextManager[Any]:
    """psycopg's pipeline mode where the driver has it, else nothing."""
    pipeline = getattr(driver, "pipeline", None)
    if pipeline is None:
        return contextlib.nullcontext()
    import psycopg

    return pipeline() if psycopg.Pipeline.is_supported() else contextlib.nullcontext()


def _resolve(settled: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for future, value, error in settled:
        if future.done():  # its caller was cancelled
            continue
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)
