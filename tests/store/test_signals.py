"""Signals: a topic sent with a transaction reaches waiters when it commits, never when it
rolls back; on PostgreSQL it crosses processes (two ``Signals`` on their own connections
stand for two replicas here), elsewhere it stays in this process."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from coze_lab.store import Database
from coze_lab.store.signals import Signals


async def _received(signals: Signals, topic: str, send: object, timeout: float = 5.0) -> bool:
    with signals.waiting(topic) as wake:
        await asyncio.to_thread(send)  # type: ignore[arg-type]
        try:
            await asyncio.wait_for(wake.wait(), timeout)
        except TimeoutError:
            return False
        return True


def test_a_topic_arrives_with_the_commit_and_not_with_a_rollback(db_url: str) -> None:
    db = Database(db_url)
    sender, receiver = Signals(db), Signals(db)
    # one process, one Signals: off PostgreSQL the receiver is the sender itself
    if not sender.shared:
        receiver = sender
    handled: list[str] = []
    receiver.on("cancel-chat", handled.append)

    def committed() -> None:
        with sender.sending() as send, db.write() as connection:
            connection.execute(text("select 1"))
            send(connection, "chat:1")

    def rolled_back() -> None:
        with pytest.raises(RuntimeError), sender.sending() as send, db.write() as connection:
            send(connection, "chat:2")
            raise RuntimeError("the transaction fails")

    async def go() -> tuple[bool, bool, list[str]]:
        receiver.start()
        sender.bind()
        await receiver.ready()
        got = await _received(receiver, "chat:1", committed)
        lost = await _received(receiver, "chat:2", rolled_back, timeout=0.5)
        await asyncio.to_thread(sender.publish, "cancel-chat:42")
        for _ in range(200):
            if handled:
                break
            await asyncio.sleep(0.01)
        await receiver.close()
        return got, lost, handled

    try:
        got, lost, seen = asyncio.run(go())
    finally:
        db.dispose()
    assert got, "the committed topic never arrived"
    assert not lost, "a rolled-back transaction's topic arrived"
    assert seen == ["42"]
    assert sender.shared == db_url.startswith("postgresql")


@pytest.mark.postgresql
def test_a_listener_whose_connection_died_listens_again_and_says_so() -> None:
    """Topics sent while the connection was down are lost: the reconnect handlers run so
    that the services look at the database (a cancel sent meanwhile still stops its work)."""
    from tests.conftest import PG_URL
    from tests.support import pg_schema

    async def go(db: Database) -> tuple[list[str], bool]:
        signals, reconnects = Signals(db), []
        signals.on_reconnect(lambda: reconnects.append("again"))
        signals.start()
        await signals.ready()
        with db.write() as connection:
            connection.execute(
                text("select pg_terminate_backend(:pid)"), {"pid": signals.listener_pid}
            )
        for _ in range(500):
            if reconnects:
                break
            await asyncio.sleep(0.01)
        got = await _received(signals, "chat:9", lambda: signals.publish("chat:9"))
        await signals.close()
        return reconnects, got

    with pg_schema(PG_URL, "s_") as url:
        db = Database(url)
        try:
            reconnects, got = asyncio.run(go(db))
        finally:
            db.dispose()
    assert reconnects == ["again"]
    assert got, "a topic sent after the reconnect did not arrive"
