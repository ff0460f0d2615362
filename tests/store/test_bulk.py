from __future__ import annotations

from datetime import datetime, timezone

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
