from __future__ import annotations

from datetime import datetime, timezone

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import select, text

from coze_lab.store import Database
from coze_lab.store.migrate import head_revision
from coze_lab.store.models import Base, User, in_models


def test_upgrade_reaches_head_and_is_idempotent(db_url: str) -> None:
    db = Database(db_url)
    assert db.revision() is None
    assert db.upgrade() == head_revision()
    assert db.upgrade() == head_revision()
    assert db.check() == {"ok": True, "dialect": db.dialect, "revision": head_revision()}
    db.dispose()


def test_models_match_migrations(db_url: str) -> None:
    """A model change without a migration shows up here as a difference."""
    db = Database(db_url)
    db.upgrade()
    with db.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"include_object": in_models})
        diff = compare_metadata(context, Base.metadata)
    db.dispose()
    assert diff == []


def test_transaction_rolls_back_on_error(db_url: str) -> None:
    db = Database(db_url)
    db.upgrade()
    now = datetime.now(timezone.utc)
    with pytest.raises(RuntimeError), db.transaction() as session:
        session.add(User(id=1, name="ghost", created_at=now))
        session.flush()
        raise RuntimeError("boom")
    with db.transaction() as session:
        assert session.scalars(select(User)).all() == []
    db.dispose()


def test_datetimes_come_back_aware_utc(db_url: str) -> None:
    db = Database(db_url)
    db.upgrade()
    moment = datetime(2026, 5, 1, 12, 30, tzinfo=timezone.utc)
    with db.transaction() as session:
        session.add(User(id=2, name="tz", created_at=moment))
    with db.transaction() as session:
        stored = session.scalars(select(User.created_at)).one()
    db.dispose()
    assert stored == moment and stored.tzinfo is not None


def test_sqlite_runs_in_wal_mode(tmp_path) -> None:
    db = Database(f"sqlite:///{tmp_path}/wal.db")
    with db.engine.connect() as connection:
        assert connection.execute(text("pragma journal_mode")).scalar() == "wal"
        assert connection.execute(text("pragma foreign_keys")).scalar() == 1
    db.dispose()


def test_unreachable_database_reports_unhealthy() -> None:
    db = Database("postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=1")
    health = db.check()
    assert health["ok"] is False and health["dialect"] == "postgresql"


@pytest.mark.server_db
@pytest.mark.parametrize("idle_s", [0.0, 3600.0])
def test_an_idle_server_connection_that_died_is_replaced_a_busy_one_is_not_pinged(
    db_url: str, idle_s: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pooled connection idle past ``PING_IDLE_S`` is pinged and, dead, replaced on
    checkout; one used more recently is not pinged (its death fails the next use once)."""
    from sqlalchemy.exc import OperationalError

    from coze_lab.store import db as db_module

    monkeypatch.setattr(db_module, "PING_IDLE_S", idle_s)
    db = Database(db_url)
    try:
        pid_of = "select pg_backend_pid()" if "postgresql" in db_url else "select connection_id()"
        kill = "select pg_terminate_backend(:pid)" if "postgresql" in db_url else "kill :pid"
        with db.read() as connection:
            first = connection.execute(text(pid_of)).scalar()
        killer = Database(db_url)
        with killer.engine.connect() as connection:
            connection.execute(text(kill), {"pid": first})
            connection.commit()
        killer.dispose()
        if idle_s == 0.0:
            with db.read() as connection:
                assert connection.execute(text(pid_of)).scalar() != first
        else:
            with pytest.raises(OperationalError), db.read() as connection:
                connection.execute(text(pid_of))
            with db.read() as connection:  # the pool dropped the dead connection
                assert connection.execute(text(pid_of)).scalar() != first
    finally:
        db.dispose()
