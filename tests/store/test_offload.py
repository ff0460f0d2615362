"""``Offload``: reads off the event loop on a server database, inline on SQLite; on
PostgreSQL each thread reads on one long-lived autocommit connection."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from coze_lab.store import Database
from coze_lab.store.offload import Offload
from tests.support import pg_schema


def test_on_sqlite_calls_run_in_the_callers_thread(db_url: str) -> None:
    db = Database(db_url)
    offload = Offload(db, threads=1)
    caller = threading.get_ident()
    ran_in = asyncio.run(offload(threading.get_ident))
    assert (ran_in == caller) is (db.dialect == "sqlite")
    offload.close()
    db.dispose()


@pytest.mark.postgresql
def test_a_reader_thread_keeps_one_connection_outside_any_transaction() -> None:
    """Two reads of one thread share a backend, which is idle (not idle in a
    transaction) between them, and the second sees a row committed in between."""
    from tests.conftest import PG_URL

    with pg_schema(PG_URL, "t_") as url:
        db = Database(url)
        with db.write() as connection:
            connection.execute(text("create table t (id integer primary key)"))
        offload = Offload(db, threads=1)

        def read() -> tuple[int, int]:
            with db.read() as connection:
                pid = connection.execute(text("select pg_backend_pid()")).scalar_one()
                rows = connection.execute(text("select count(*) from t")).scalar_one()
            return pid, rows

        def state(pid: int) -> str:
            with db.write() as connection:
                return connection.execute(
                    text("select state from pg_stat_activity where pid = :pid"), {"pid": pid}
                ).scalar_one()

        first, none = asyncio.run(offload(read))
        assert none == 0
        assert state(first) == "idle"
        with db.write() as connection:
            connection.execute(text("insert into t (id) values (1)"))
        second, one = asyncio.run(offload(read))
        assert (second, one) == (first, 1)
        assert db.engine.pool.checkedout() == 1  # kept between the reads
        offload.close()
        assert db.engine.pool.checkedout() == 0  # and given back with the threads
        db.dispose()


@pytest.mark.postgresql
def test_a_reader_connection_that_died_fails_one_read_and_the_next_reads_again() -> None:
    from tests.conftest import PG_URL

    with pg_schema(PG_URL, "t_") as url:
        db = Database(url)
        offload = Offload(db, threads=1)

        def backend() -> int:
            with db.read() as connection:
                return connection.execute(text("select pg_backend_pid()")).scalar_one()

        first = asyncio.run(offload(backend))
        with db.write() as connection:
            connection.execute(text("select pg_terminate_backend(:pid)"), {"pid": first})
        with pytest.raises(DBAPIError):
            asyncio.run(offload(backend))
        assert asyncio.run(offload(backend)) != first
        offload.close()
        db.dispose()
