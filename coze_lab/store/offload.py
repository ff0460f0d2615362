"""Blocking database reads off the event loop, on a server database.

A read on PostgreSQL or MariaDB is a network round trip: made on the event loop, it stops
every other request of the replica until the answer comes (and the database's own process
needs the CPU meanwhile). :class:`Offload` runs such calls in a few threads instead, so
the loop serves other requests while they wait. On PostgreSQL each thread's reads use one
long-lived autocommit connection of its own (``Database.keep_reader``). On
SQLite a read is a call into the library, with no wait to overlap: a thread hop would only
add its cost, so calls run inline there.

Example:
    >>> import asyncio
    >>> offload = Offload(Database("sqlite:///:memory:"))
    >>> asyncio.run(offload(sum, [1, 2]))
    3
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from coze_lab.store.db import Database

P = ParamSpec("P")
T = TypeVar("T")

#: threads for the reads of request handlers: each holds one pooled connection while it
#: works, and the pool keeps enough open for them besides the engine's writer threads and
#: the event loop (``coze_lab.store.db.SERVER_POOL_SIZE``)
READ_THREADS = 4


class Offload:
    """Runs blocking calls in a bounded thread pool on a server database, inline on SQLite.

    The threads are few (``READ_THREADS``): the reads are short round trips, and more
    threads than connections the pool keeps open would make it open and close connections.
    """

    def __init__(self, db: Database | None = None, *, threads: int | None = None) -> None:
        #: True on SQLite (or without a database): calls run in the caller's thread
        self.inline = db is None or db.dialect == "sqlite"
        self._db = db
        self.threads = threads or READ_THREADS
        self._pool: ThreadPoolExecutor | None = None

    async def __call__(self, call: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``call(*args, **kwargs)``, awaited from a thread (inline on SQLite)."""
        if self.inline:
            return call(*args, **kwargs)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                self.threads, thread_name_prefix="coze-lab-read", initializer=self._keep_reader
            )
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(call, *args, **kwargs))

    def _keep_reader(self) -> None:
        if self._db is not None:
            self._db.keep_reader()

    def close(self) -> None:
        """Stop the threads (calls under way finish first)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
            if self._db is not None:
                self._db.close_readers()
