"""KnowledgeService and the ingestion job on every database: documents become chunks with
embeddings, recall is hybrid and stays inside one space, a bad file fails alone, and a job
whose worker died is taken up again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.core.knowledge import ChunkStrategy, IngestWorker, KnowledgeService, NewDocument
from coze_lab.core.knowledge.search import fuse, pgvector, terms, vector_backend
from coze_lab.services import Runtime
from coze_lab.store.models import DatasetChunk, KnowledgeJob
from coze_lab.testing import ModelServer
from coze_lab.testing.documents import pdf_bytes
from tests.support import FakeClock

NOTES = "\n\n".join(
    [
        "The aurora borealis is visible from Tromso between September and March.",
        "Sourdough bread needs a starter, flour, water and salt; it rises slowly overnight.",
        "The quarterly revenue of Nordlys AS grew by 12 percent to 40 million kroner.",
    ]
)


@pytest.mark.asyncio
async def test_ingest_recall_isolation_and_failures(
    runtime: Runtime, model_env: ModelServer, clock: FakeClock
) -> None:
    alice = runtime.identity.ensure_user("alice")
    bob = runtime.identity.ensure_user("bob")
    kb = runtime.knowledge
    mine = kb.create_dataset(alice.id, None, "notes", "team notes")
    theirs = kb.create_dataset(bob.id, None, "bob notes")
    docs = kb.create_documents(
        alice.id,
        mine.id,
        [
            NewDocument("notes.txt", "txt", NOTES.encode()),
            NewDocument("report.pdf", "pdf", pdf_bytes(["Project Falcon ships on 3 May 2027."])),
            NewDocument("broken.pdf", "pdf", b"%PDF-1.4 garbage"),
        ],
        ChunkStrategy(1, "\n\n", 100, 0),
    )
    kb.create_documents(bob.id, theirs.id, [NewDocument("b.md", "md", b"Aurora secrets of bob")])
    assert {d.status for d in docs} == {"processing"}
    assert await runtime.ingest.run_once() == 4

    done = kb.progress(alice.id, mine.id, [d.id for d in docs])
    assert [(d.status, d.progress) for d in done[:2]] == [("done", 100), ("done", 100)]
    assert done[0].slice_count == 3 and done[0].char_count == len(NOTES)
    failed = done[2]
    assert failed.status == "failed" and "pdf file cannot be read" in (failed.failure or "")
    with runtime.db.read() as conn:
        assert conn.scalar(select(func.count()).select_from(KnowledgeJob)) == 0
        per_doc = dict(
            conn.execute(
                select(DatasetChunk.document_id, func.count()).group_by(DatasetChunk.document_id)
            ).all()
        )
    assert failed.id not in per_doc and per_doc[docs[1].id] == 1
    assert model_env.embeddings >= 2

    hits = await kb.search(alice.id, [mine.id], "When does Falcon ship?", top_k=2)
    assert hits[0].document_name == "report.pdf" and "3 May 2027" in hits[0].content
    hits = await kb.search(alice.id, [mine.id], "aurora", top_k=5)
    assert hits[0].content.startswith("The aurora borealis")
    assert all(h.dataset_id == mine.id for h in hits)  # bob's aurora stays his
    assert await kb.search(alice.id, [mine.id], "aurora", top_k=5, min_score=0.99) == []
    # another space's dataset is absent, also when named to a space's recall
    with pytest.raises(NotFound):
        await kb.search(alice.id, [theirs.id], "aurora")
    assert await kb.search_space(alice.workspace_id, [theirs.id], "aurora") == []

    # the embedding model down: recall still answers, from the full text
    class Down:
        name = "down"

        async def embed(self, texts: object) -> list[list[float]]:
            raise ConnectionError("model unreachable")

    offline = KnowledgeService(runtime.db, embedder=Down)
    hits = await offline.search(alice.id, [mine.id], "Falcon", top_k=1)
    assert hits[0].document_name == "report.pdf"
    if runtime.db.dialect == "postgresql":  # the start-up line: pgvector, or how to get it
        line = vector_backend(runtime.db)
        assert ("pgvector (schema" if pgvector(runtime.db) else "install the extension") in line

    listed, total = kb.list_datasets(alice.id, None)
    assert total == 1 and listed[0].doc_count == 3 and listed[0].failed_file_list == ["broken.pdf"]
    kb.delete_documents(alice.id, [docs[0].id])
    hits = await kb.search(alice.id, [mine.id], "aurora sourdough revenue", top_k=5)
    assert all(h.document_id != docs[0].id for h in hits)
    kb.delete_dataset(alice.id, mine.id)
    with runtime.db.read() as conn:
        left = conn.scalar(select(func.count()).select_from(DatasetChunk))
    assert left == 1  # bob's chunk only
    with pytest.raises(InvalidParameter, match="file_type 'xls'"):
        kb.create_documents(bob.id, theirs.id, [NewDocument("a.xls", "xls", b"x")])


@pytest.mark.asyncio
async def test_a_dead_workers_document_is_taken_up_again(
    runtime: Runtime, model_env: ModelServer, clock: FakeClock
) -> None:
    alice = runtime.identity.ensure_user("alice")
    kb = runtime.knowledge
    dataset = kb.create_dataset(alice.id, None, "kb")
    (doc,) = kb.create_documents(
        alice.id, dataset.id, [NewDocument("a.txt", "txt", b"hello there")]
    )
    dead = IngestWorker(runtime.db, embedder=runtime._embedder, clock=clock, lease_s=60)
    assert dead.claim() == doc.id  # ... and the process dies here
    other = IngestWorker(runtime.db, embedder=runtime._embedder, clock=clock, lease_s=60)
    assert other.claim() is None  # the lease holds
    clock.advance(timedelta(seconds=61))
    assert await other.run_once() == 1
    assert kb.progress(alice.id, dataset.id, [doc.id])[0].status == "done"
    await dead.process(doc.id)  # the old worker waking up later writes nothing
    with runtime.db.read() as conn:
        assert conn.scalar(select(func.count()).select_from(DatasetChunk)) == 1


def test_fusion_and_terms() -> None:
    assert terms("Wer? wer, WAS") == ["wer", "was"]
    scores = fuse([[1, 2, 3], [3, 2]])
    assert max(scores, key=scores.__getitem__) in (2, 3) and scores[2] > scores[1]
