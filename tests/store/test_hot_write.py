"""``Database.hot_write``: the run steps' write transactions (a long-lived connection on an
SQLite file, a pooled one elsewhere)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from coze_lab.store import Database, sqlite_url


def _table(db: Database) -> None:
    with db.write() as connection:
        connection.execute(text("create table t (id integer primary key, who varchar(16))"))


def _who(db: Database) -> list[str]:
    with db.read() as connection:
        return list(connection.execute(text("select who from t order by id")).scalars())


def test_hot_writes_commit_roll_back_and_raise_sqlalchemys_errors(db_url: str) -> None:
    db = Database(db_url)
    _table(db)
    with db.hot_write() as connection:
        connection.execute("insert into t (id, who) values (1, 'one')")
    with pytest.raises(RuntimeError), db.hot_write() as connection:
        connection.execute("insert into t (id, who) values (2, 'lost')")
        raise RuntimeError("the step failed")
    with pytest.raises(IntegrityError), db.hot_write() as connection:
        connection.execute("insert into t (id, who) values (3, 'lost too')")
        connection.execute("insert into t (id, who) values (1, 'duplicate')")
    with db.hot_write() as connection:
        connection.execute("insert into t (id, who) values (4, 'four')")
    assert _who(db) == ["one", "four"]
    db.dispose()


def test_the_sqlite_writer_waits_for_another_processs_write_and_sees_it(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    db = Database(sqlite_url(path))
    _table(db)
    with db.hot_write() as connection:  # the long-lived connection is open from here on
        connection.execute("insert into t (id, who) values (1, 'us')")
    other = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sqlite3, sys, time
                db = sqlite3.connect({str(path)!r}, isolation_level=None)
                db.execute("BEGIN IMMEDIATE")
                db.execute("insert into t (id, who) values (2, 'them')")
                print("holding", flush=True)
                time.sleep(0.5)
                db.execute("COMMIT")
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert other.stdout is not None and other.stdout.readline().strip() == "holding"
    # the other process holds the write lock: this waits for its commit, then reads its row
    with db.hot_write() as connection:
        them = connection.execute("select count(*) from t where who = 'them'").fetchone()[0]
        connection.execute("insert into t (id, who) values (3, 'us again')")
    assert other.wait(30) == 0
    assert them == 1
    assert _who(db) == ["us", "them", "us again"]
    db.dispose()


def test_a_broken_sqlite_writer_is_opened_again(tmp_path: Path) -> None:
    db = Database(sqlite_url(tmp_path / "x.db"))
    _table(db)
    with db.hot_write() as connection:
        connection.execute("insert into t (id, who) values (1, 'before')")
    assert db._hot is not None
    db._hot._connection.close()  # as if the connection broke between two steps
    with db.hot_write() as connection:
        connection.execute("insert into t (id, who) values (2, 'after')")
    assert _who(db) == ["before", "after"]
    db.dispose()


def test_an_in_memory_database_writes_on_its_own_connection() -> None:
    db = Database("sqlite://")
    _table(db)
    with db.hot_write() as connection:
        connection.execute("insert into t (id, who) values (1, 'memory')")
    assert _who(db) == ["memory"]
    db.dispose()


def test_the_sqlite_writer_compiles_a_repeated_statement_once(tmp_path: Path) -> None:
    db = Database(sqlite_url(tmp_path / "x.db"))
    db.upgrade()  # many statements on a pooled connection: the writer must not inherit its cache
    _table(db)
    with db.hot_write():
        pass
    assert db._hot is not None
    compiled: list[str] = []

    def authorizer(action: int, table: str | None, *_: object) -> int:
        if table == "t":  # SQLite asks while it compiles a statement, never when it reruns one
            compiled.append(table)
        return 0

    db._hot._connection.set_authorizer(authorizer)
    for n in range(1, 6):
        with db.hot_write() as connection:
            connection.execute("insert into t (id, who) values (?, 'x')", (n,))
            connection.execute("insert into t (id, who) values (?, 'y')", (n + 100,))
    assert len(compiled) == 2
    db.dispose()


def test_pooled_sqlite_connections_after_the_migrations_compile_a_statement_once(
    tmp_path: Path,
) -> None:
    db = Database(sqlite_url(tmp_path / "x.db"))
    db.upgrade()
    _table(db)
    compiled: list[str] = []
    raw = db.engine.raw_connection()
    try:
        raw.driver_connection.set_authorizer(
            lambda action, table, *_: (compiled.append(table) if table == "t" else None) or 0
        )
        for n in range(1, 6):
            raw.driver_connection.execute("insert into t (id, who) values (?, 'x')", (n,))
            raw.driver_connection.execute("insert into t (id, who) values (?, 'y')", (n + 100,))
        raw.driver_connection.commit()
    finally:
        raw.close()
    assert len(compiled) == 2
    db.dispose()
