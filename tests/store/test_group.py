"""``GroupCommit``: the writes waiting together commit in one transaction; a failure is
its own write's alone; a broken connection is replaced."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import Column, ForeignKey, Integer, MetaData, Table, select, text
from sqlalchemy.exc import IntegrityError

from coze_lab.store import Database
from coze_lab.store.bulk import BulkInsert
from coze_lab.store.db import DriverConnection
from coze_lab.store.group import GroupCommit
from tests.support import pg_schema


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    with database.write() as connection:
        connection.execute(text("create table t (id integer primary key, who varchar(16))"))
    yield database
    database.dispose()


def _who(db: Database) -> list[str]:
    with db.read() as connection:
        return list(connection.execute(text("select who from t order by id")).scalars())


def _insert(db: Database, *rows: tuple[int, str]) -> Callable[[], int]:
    def write() -> int:
        with db.hot_write() as connection:
            for row in rows:
                connection.send(_sql(db, "insert into t (id, who) values ({p}, {p})"), row)
        return len(rows)

    return write


def _sql(db: Database, statement: str) -> str:
    """The driver's placeholder in ``{p}``s."""
    return statement.format(p="?" if db.dialect == "sqlite" else "%s")


async def _behind_a_blocker(group: GroupCommit, writes: list[Callable[[], Any]]) -> list[Any]:
    """Run ``writes`` while the thread is held by a first write, so that they all wait and
    are taken as one group; their outcomes (results or errors) in order."""
    release = threading.Event()
    blocker = asyncio.ensure_future(group(release.wait, 10))
    await asyncio.sleep(0)  # it is queued
    while group._queue.qsize() > 0:  # until the thread has taken it
        await asyncio.sleep(0.005)
    queued = [asyncio.ensure_future(group(write)) for write in writes]
    while group._queue.qsize() < len(writes):
        await asyncio.sleep(0.005)
    release.set()
    assert await blocker is True
    return await asyncio.gather(*queued, return_exceptions=True)


def test_writes_waiting_together_commit_in_one_transaction(db: Database) -> None:
    group = GroupCommit(db)
    writes = [_insert(db, (i, f"w{i}")) for i in range(1, 21)]
    assert asyncio.run(_behind_a_blocker(group, writes)) == [1] * 20
    assert (group.groups, group.writes) == (2, 21)  # the blocker alone, then the twenty
    assert _who(db) == [f"w{i}" for i in range(1, 21)]
    group.close()


def test_a_failing_write_fails_alone_and_leaves_nothing_behind(db: Database) -> None:
    group = GroupCommit(db)
    asyncio.run(group(_insert(db, (1, "first"))))
    writes = [
        _insert(db, (2, "two")),
        _insert(db, (3, "lost"), (1, "duplicate")),  # its first row must not stay
        _insert(db, (4, "four")),
    ]
    two, failed, four = asyncio.run(_behind_a_blocker(group, writes))
    assert (two, four) == (1, 1)
    assert isinstance(failed, IntegrityError)
    assert _who(db) == ["first", "two", "four"]
    asyncio.run(group(_insert(db, (5, "after"))))  # and the next write goes on as before
    assert _who(db)[-1] == "after"
    group.close()


def test_writes_in_one_group_see_each_others_rows_and_read_answers(db: Database) -> None:
    """A group's writes apply in order; a statement whose answer is read (a row count, a
    read) gets it, also where statements are pipelined (PostgreSQL)."""
    group = GroupCommit(db)

    def rename() -> tuple[int, list[Any]]:
        with db.hot_write() as connection:
            assert group._kept.current is not None  # the group's transaction, not a new one
            assert connection.driver is group._kept.current.connection.driver_connection
            changed = connection.execute(
                _sql(db, "update t set who = {p} where id = {p}"), ("renamed", 7)
            ).rowcount
            rows = connection.execute("select id, who from t order by id").fetchall()
        return changed, [tuple(row) for row in rows]

    inserted, renamed = asyncio.run(_behind_a_blocker(group, [_insert(db, (7, "new")), rename]))
    assert inserted == 1
    assert renamed == (1, [(7, "renamed")])
    assert (group.groups, group.writes) == (2, 3)
    group.close()


def test_a_write_that_raises_gets_its_error_and_its_statements_are_rolled_back(
    db: Database,
) -> None:
    group = GroupCommit(db)

    def fails() -> None:
        _insert(db, (1, "lost"))()
        raise LookupError("the step failed")

    with pytest.raises(LookupError, match="the step failed"):
        asyncio.run(group(fails))
    assert _who(db) == []
    group.close()


def test_close_commits_what_waits_then_refuses_writes(db: Database) -> None:
    group = GroupCommit(db)

    async def submit_then_close() -> list[Any]:
        pending = [asyncio.ensure_future(group(_insert(db, (i, f"w{i}")))) for i in (1, 2, 3)]
        await asyncio.sleep(0)  # each is queued
        await asyncio.to_thread(group.close)
        return await asyncio.gather(*pending)

    assert asyncio.run(submit_then_close()) == [1, 1, 1]
    assert _who(db) == ["w1", "w2", "w3"]
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(group(_insert(db, (4, "late"))))


@pytest.mark.postgresql
def test_a_connection_the_server_closed_is_replaced() -> None:
    from tests.conftest import PG_URL

    with pg_schema(PG_URL, "t_") as url:
        db = Database(url)
        with db.write() as connection:
            connection.execute(text("create table t (id integer primary key, who varchar(16))"))
        group = GroupCommit(db)
        asyncio.run(group(_insert(db, (1, "before"))))
        assert group._kept.current is not None
        backend = group._kept.current.connection.driver_connection.info.backend_pid
        with db.write() as connection:
            connection.execute(text("select pg_terminate_backend(:pid)"), {"pid": backend})
        asyncio.run(group(_insert(db, (2, "after"))))
        assert _who(db) == ["before", "after"]
        assert group._kept.current.connection.driver_connection.info.backend_pid != backend
        group.close()
        db.dispose()


def test_inserts_of_a_group_go_table_by_table_parents_first(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL the group's plain inserts wait and go as one multi-row INSERT per
    table, parents before children whatever order the writes came in."""
    meta = MetaData()
    parent = Table("p", meta, Column("id", Integer, primary_key=True))
    child = Table(
        "c",
        meta,
        Column("id", Integer, primary_key=True),
        Column("p", Integer, ForeignKey("p.id"), nullable=False),
    )
    meta.create_all(db.engine)
    parents, children = BulkInsert(parent), BulkInsert(child)
    with db.write() as connection:
        connection.execute(parent.insert().values(id=1))
    sent: list[tuple[str, int]] = []
    real = DriverConnection.send_numbered

    def spy(self: DriverConnection, statement: str, parameters: Any) -> None:
        sent.append((statement.split(" (")[0], len(parameters)))
        real(self, statement, parameters)

    monkeypatch.setattr(DriverConnection, "send_numbered", spy)

    def orphan_of_one() -> None:  # only a child, of a parent committed before
        with db.hot_write() as connection:
            children.run(connection, [{"id": 10, "p": 1}])

    def family(n: int) -> Callable[[], None]:
        def write() -> None:
            with db.hot_write() as connection:
                parents.run(connection, [{"id": n}])
                children.run(connection, [{"id": 10 + n, "p": n}])

        return write

    group = GroupCommit(db)
    asyncio.run(_behind_a_blocker(group, [orphan_of_one, family(2), family(3)]))
    group.close()
    with db.read() as connection:
        rows = connection.execute(select(child.c.id, child.c.p).order_by(child.c.id)).all()
    assert [tuple(row) for row in rows] == [(10, 1), (12, 2), (13, 3)]
    if db.dialect == "postgresql":  # pipelined: one statement per table, 2 parents, 3 kids
        assert sent == [("INSERT INTO p", 2), ("INSERT INTO c", 3 * 2)]


def test_a_write_that_raises_beyond_exception_does_not_stop_the_thread(db: Database) -> None:
    group = GroupCommit(db)

    def exits() -> None:
        _insert(db, (1, "lost"))()
        raise SystemExit(3)

    with pytest.raises(RuntimeError, match="SystemExit"):
        asyncio.run(group(exits))
    assert asyncio.run(group(_insert(db, (2, "after")))) == 1
    assert _who(db) == ["after"]
    group.close()
