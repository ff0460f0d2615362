"""The ingestion job: parse, chunk, embed and store each queued document.

The queue is the ``knowledge_jobs`` table, one row per document, claimed with a lease: a
worker that dies mid-document leaves a row whose lease runs out, and any worker (on any
replica) claims it again. A document is written in one transaction at the end (its chunks,
its status), so a bad file leaves a ``failed`` document with its reason and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import and_, delete, or_, select, update

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.ids import new_id
from coze_lab.core.knowledge import vec_sqlite
from coze_lab.core.knowledge.chunking import ChunkStrategy, chunk_text
from coze_lab.core.knowledge.embeddings import Embedder, pack
from coze_lab.core.knowledge.parsers import ParseError, parse
from coze_lab.core.knowledge.search import index_vectors, prepare_vector_index
from coze_lab.store import Database
from coze_lab.store.models import DatasetChunk, DatasetDocument, KnowledgeJob

log = logging.getLogger("coze_lab.knowledge")

#: a document whose job was claimed this many times without finishing fails
MAX_ATTEMPTS = 3


class IngestWorker:
    """Claims queued documents and ingests them, one at a time.

    Example:
        >>> worker = IngestWorker(db, embedder=lambda: None)   # doctest: +SKIP
        >>> await worker.run_once()                             # doctest: +SKIP
        1
    """

    def __init__(
        self,
        db: Database,
        *,
        embedder: Callable[[], Embedder | None],
        clock: Clock = utcnow,
        lease_s: float = 120.0,
        poll_s: float = 2.0,
    ) -> None:
        self._db = db
        self._embedder = embedder
        self._clock = clock
        self._lease = timedelta(seconds=lease_s)
        self._poll_s = poll_s
        self.name = f"ingest-{secrets.token_hex(6)}"
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Run in the background of the running event loop."""
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._loop())

    def wake(self) -> None:
        """A document was queued: look now (thread-safe enough: only sets an event)."""
        if self._wake is not None and self._task is not None:
            self._task.get_loop().call_soon_threadsafe(self._wake.set)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        assert self._wake is not None
        while True:
            try:
                await self.run_once()
            except Exception:  # the loop outlives one bad round: log it, try again later
                log.exception("knowledge ingestion round failed")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._poll_s)
            self._wake.clear()

    async def run_once(self) -> int:
        """Ingest every claimable document; how many were handled."""
        handled = 0
        while (document_id := self.claim()) is not None:
            await self.process(document_id)
            handled += 1
        return handled

    def claim(self) -> int | None:
        """Take the oldest free (or lease-expired) job; None when there is none."""
        now = self._clock()
        free = or_(KnowledgeJob.lease_until.is_(None), KnowledgeJob.lease_until < now)
        with self._db.read() as conn:
            candidates = (
                conn.execute(
                    select(KnowledgeJob.document_id)
                    .where(free)
                    .order_by(KnowledgeJob.created_at)
                    .limit(5)
                )
                .scalars()
                .all()
            )
        for document_id in candidates:
            with self._db.write() as conn:
                taken = conn.execute(
                    update(KnowledgeJob)
                    .where(KnowledgeJob.document_id == document_id, free)
                    .values(
                        worker=self.name,
                        lease_until=now + self._lease,
                        attempts=KnowledgeJob.attempts + 1,
                    )
                ).rowcount
            if taken == 1:
                return int(document_id)
        return None

    async def process(self, document_id: int) -> None:
        """Ingest one claimed document (parse and chunk in a thread, embed, store)."""
        with self._db.read() as conn:
            job = conn.execute(
                select(
                    KnowledgeJob.payload,
                    KnowledgeJob.attempts,
                    DatasetDocument.file_type,
                    DatasetDocument.chunk_strategy,
                    DatasetDocument.dataset_id,
                    DatasetDocument.space_id,
                )
                .join(DatasetDocument, DatasetDocument.id == KnowledgeJob.document_id)
                .where(KnowledgeJob.document_id == document_id)
            ).first()
        if job is None:
            return
        if job.attempts > MAX_ATTEMPTS:
            self._fail(
                document_id, f"gave up after {MAX_ATTEMPTS} attempts (the worker stopped each time)"
            )
            return
        strategy = ChunkStrategy.from_dict(job.chunk_strategy)
        try:
            chunks, chars = await asyncio.to_thread(
                _cut, job.file_type, bytes(job.payload), strategy
            )
        except ParseError as exc:
            self._fail(document_id, str(exc))
            return
        self._progress(document_id, 20)
        vectors: list[bytes | None] = [None] * len(chunks)
        embedder = self._embedder()
        if embedder is not None:
            step = 32
            for start in range(0, len(chunks), step):
                try:
                    batch = await embedder.embed(chunks[start : start + step])
                except Exception as exc:  # any provider failure fails the document
                    self._fail(document_id, f"embedding failed: {exc}")
                    return
                vectors[start : start + len(batch)] = [pack(v) for v in batch]
                done = min(len(chunks), start + step)
                self._progress(document_id, 20 + int(75 * done / max(len(chunks), 1)))
        self._store(document_id, job.dataset_id, job.space_id, chunks, vectors, chars)

    def _store(
        self,
        document_id: int,
        dataset_id: int,
        space_id: int,
        chunks: list[str],
        vectors: list[bytes | None],
        chars: int,
    ) -> None:
        # set up (DDL) before this transaction locks the table
        prepare_vector_index(self._db, (len(v) for v in vectors if v is not None))
        with self._db.transaction() as session:
            mine = session.scalars(
                select(KnowledgeJob.document_id)
                .where(KnowledgeJob.document_id == document_id, KnowledgeJob.worker == self.name)
                .with_for_update()
            ).first()
            if mine is None:  # deleted meanwhile, or claimed by another worker after our lease
                return
            indexed = self._db.has_sqlite_vec()
            if indexed:
                vec_sqlite.forget(session.connection(), "document_id = :d", {"d": document_id})
            session.execute(delete(DatasetChunk).where(DatasetChunk.document_id == document_id))
            rows = [
                DatasetChunk(
                    id=new_id(),
                    document_id=document_id,
                    dataset_id=dataset_id,
                    space_id=space_id,
                    seq=i,
                    content=text,
                    embedding=vectors[i],
                )
                for i, text in enumerate(chunks)
            ]
            session.add_all(rows)
            session.flush()
            index_vectors(
                self._db, session.connection(), [(r.id, dataset_id, r.embedding) for r in rows]
            )
            session.execute(
                update(DatasetDocument)
                .where(DatasetDocument.id == document_id)
                .values(
                    status="done",
                    progress=100,
                    slice_count=len(chunks),
                    char_count=chars,
                    failure=None,
                    updated_at=self._clock(),
                )
            )
            session.execute(delete(KnowledgeJob).where(KnowledgeJob.document_id == document_id))

    def _fail(self, document_id: int, reason: str) -> None:
        log.info("knowledge document %s failed: %s", document_id, reason)
        with self._db.transaction() as session:
            session.execute(
                update(DatasetDocument)
                .where(DatasetDocument.id == document_id)
                .values(status="failed", failure=reason[:2000], updated_at=self._clock())
            )
            session.execute(delete(KnowledgeJob).where(KnowledgeJob.document_id == document_id))

    def _progress(self, document_id: int, percent: int) -> None:
        now = self._clock()
        with self._db.write() as conn:
            conn.execute(
                update(DatasetDocument)
                .where(DatasetDocument.id == document_id)
                .values(progress=percent, updated_at=now)
            )
            conn.execute(
                update(KnowledgeJob)
                .where(
                    and_(KnowledgeJob.document_id == document_id, KnowledgeJob.worker == self.name)
                )
                .values(lease_until=now + self._lease)
            )


def _cut(kind: str, data: bytes, strategy: ChunkStrategy) -> tuple[list[str], int]:
    parsed = parse(kind, data)
    if parsed.rows:
        rule = ChunkStrategy(1, "\n\n", max(strategy.max_tokens, 100), 0)
        chunks = [c for block in parsed.blocks for c in chunk_text(block, rule)]
    else:
        chunks = [c for block in parsed.blocks for c in chunk_text(block, strategy)]
    if not chunks:
        raise ParseError(f"the {kind} file holds no text")
    return chunks, parsed.chars
