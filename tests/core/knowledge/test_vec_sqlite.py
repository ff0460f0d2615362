"""sqlite-vec on SQLite: chunks' vectors go into a vec0 table in the chunks' transaction,
recall's vector side is its k-nearest-neighbour query (the exact scan's answer), deletes
take the vectors along, a table that drifted while the extension was off is rebuilt, and
without the extension recall falls back to the exact scan."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import text

from coze_lab import services
from coze_lab.config import CozeLab
from coze_lab.core.knowledge import (
    ChunkStrategy,
    IngestWorker,
    KnowledgeService,
    NewDocument,
    vec_sqlite,
)
from coze_lab.core.knowledge.embeddings import pack
from coze_lab.core.knowledge.search import exact_scan, vector_backend
from coze_lab.services import Runtime
from coze_lab.store import Database, sqlite_url
from coze_lab.testing import ModelServer
from coze_lab.testing.model_server import EMBEDDING_DIMS, demo_embedding
from tests.support import FakeClock

TABLE = f"dataset_vectors_{EMBEDDING_DIMS}"
FACTS = [
    "The aurora borealis is visible from Tromso between September and March.",
    "Sourdough bread needs a starter, flour, water and salt.",
    "The quarterly revenue of Nordlys AS grew by 12 percent.",
    "Project Falcon ships on 3 May 2027 from the Bergen plant.",
    "Reindeer herding is a livelihood of the Sami people.",
    "The fjord ferry leaves every hour in summer.",
]
RULE = ChunkStrategy(1, "\n\n", 100, 0)


@pytest.fixture(params=[True, False], ids=["sqlite-vec", "exact-scan"])
def sqlite_runtime(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Runtime]:
    if not request.param:  # a deployment where sqlite-vec does not load
        monkeypatch.setattr(services, "Database", partial(Database, sqlite_vec=False))
    url = sqlite_url(tmp_path / "db" / "coze_lab.db")
    rt = Runtime(CozeLab(data_dir=str(tmp_path / "data"), database_url=url), clock=clock)
    rt.start()
    yield rt
    rt.db.dispose()


def count(db: Database, sql: str) -> int:
    with db.read() as conn:
        return int(conn.execute(text(sql)).scalar() or 0)


@pytest.mark.asyncio
async def test_recall_uses_sqlite_vec_or_falls_back_to_the_scan(
    sqlite_runtime: Runtime, model_env: ModelServer
) -> None:
    rt, db = sqlite_runtime, sqlite_runtime.db
    alice, bob = rt.identity.ensure_user("alice"), rt.identity.ensure_user("bob")
    kb = rt.knowledge
    first = kb.create_dataset(alice.id, None, "first")
    second = kb.create_dataset(alice.id, None, "second")
    theirs = kb.create_dataset(bob.id, None, "theirs")
    (doc,) = kb.create_documents(
        alice.id, first.id, [NewDocument("a.txt", "txt", "\n\n".join(FACTS[:3]).encode())], RULE
    )
    kb.create_documents(
        alice.id, second.id, [NewDocument("b.txt", "txt", "\n\n".join(FACTS[3:]).encode())], RULE
    )
    kb.create_documents(bob.id, theirs.id, [NewDocument("c.txt", "txt", b"Falcon ships")], RULE)
    assert await rt.ingest.run_once() == 3
    before = vec_sqlite.queries
    hits = await kb.search(alice.id, [first.id, second.id], "When does Falcon ship?", top_k=2)
    assert "3 May 2027" in hits[0].content and {h.dataset_id for h in hits} <= {first.id, second.id}

    if not db.has_sqlite_vec():
        assert vec_sqlite.queries == before  # recall ran the exact scan
        assert "sqlite-vec is not loaded" in vector_backend(db)
        assert count(db, f"SELECT count(*) FROM sqlite_master WHERE name = '{TABLE}'") == 0
        return
    assert vec_sqlite.queries == before + 1  # recall ran the KNN query
    assert "sqlite-vec" in vector_backend(db) and "exact scan" not in vector_backend(db)
    assert count(db, f"SELECT count(*) FROM {TABLE}") == 7
    # the KNN answer over two datasets is the exact scan's (ids and similarities)
    query = pack(demo_embedding("ferry reindeer aurora"))
    near = vec_sqlite.nearest(db, [first.id, second.id], query, 3)
    exact = exact_scan(db, [first.id, second.id], query, 3)
    assert [i for i, _ in near] == [i for i, _ in exact]
    assert [round(s, 4) for _, s in near] == [round(s, 4) for _, s in exact]

    kb.delete_documents(alice.id, [doc.id])
    assert count(db, f"SELECT count(*) FROM {TABLE}") == 4
    kb.delete_dataset(bob.id, theirs.id)
    assert count(db, f"SELECT count(*) FROM {TABLE} WHERE dataset_id = {theirs.id}") == 0

    # written without the extension (the vectors drift), rebuilt once it loads again
    off = Database(str(db.url), sqlite_vec=False)
    new = [NewDocument("d.txt", "txt", b"Glaciers retreat.")]
    KnowledgeService(off).create_documents(alice.id, second.id, new)
    assert await IngestWorker(off, embedder=rt._embedder).run_once() == 1
    off.dispose()
    assert count(db, f"SELECT count(*) FROM {TABLE}") == 3
    assert vec_sqlite.sync(db) == 1 and vec_sqlite.sync(db) == 0
    assert count(db, f"SELECT count(*) FROM {TABLE}") == 4
