from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import select

from coze_lab.core.ids import new_id
from coze_lab.store import Database
from coze_lab.store.bulk import BulkInsert
from coze_lab.store.models import RunEvent, User, WorkflowRun


def test_plain_inserts_read_back_exactly_as_orm_writes(db_url: str) -> None:
    db = Database(db_url)
    db.upgrade()
    moment = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=timezone.utc)
    with db.transaction() as session:
        session.add(User(id=1, name="u", created_at=moment))
        session.add(
            WorkflowRun(
                id=2,
                owner_id=1,
                workflow_id=None,
                version=None,
                definition={},
                status="running",
                inputs={},
                created_at=moment,
                updated_at=moment,
            )
        )
    data = {"text": 'naïve ☃ "quoted"', "nested": {"list": [1, 2.5, None, True]}}
    rows = [
        {"id": new_id(), "run_id": 2, "seq": n, "event": "e", "data": data, "created_at": moment}
        for n in (1, 2)
    ]
    with db.write() as connection:
        BulkInsert(RunEvent.__table__).run(connection, rows)
    with db.transaction() as session:
        stored = session.scalars(select(RunEvent).order_by(RunEvent.seq)).all()
        assert [(e.seq, e.data, e.created_at) for e in stored] == [
            (1, data, moment),
            (2, data, moment),
        ]
    db.dispose()


def test_nothing_to_insert_is_a_no_op(db_url: str) -> None:
    db = Database(db_url)
    db.upgrade()
    with db.write() as connection:
        BulkInsert(RunEvent.__table__).run(connection, [])
    with db.transaction() as session:
        assert session.scalars(select(RunEvent)).all() == []
    db.dispose()


def test_datetimes_are_stored_as_the_orm_stores_them(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    db.upgrade()
    moments = [
        datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=timezone.utc),
        datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc),  # no microseconds
        datetime(987, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    ]
    with db.transaction() as session:
        session.add_all(User(id=n, name=f"u{n}", created_at=m) for n, m in enumerate(moments, 1))
        session.flush()
        session.add(
            WorkflowRun(
                id=9,
                owner_id=1,
                definition={},
                status="running",
                inputs={},
                created_at=moments[0],
                updated_at=moments[0],
            )
        )
    rows = [
        {"id": n, "run_id": 9, "seq": n, "event": "e", "data": {}, "created_at": moment}
        for n, moment in enumerate(moments, 1)
    ]
    with db.hot_write() as connection:
        BulkInsert(RunEvent.__table__).run(connection, rows)
    with db.read() as connection:
        orm = connection.exec_driver_sql("select created_at from users order by id").scalars()
        plain = connection.exec_driver_sql("select created_at from run_events order by id")
        assert list(plain.scalars()) == list(orm)
    with db.transaction() as session:
        stored = session.scalars(select(RunEvent.created_at).order_by(RunEvent.id)).all()
    assert stored == moments
    db.dispose()
