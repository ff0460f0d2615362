"""Knowledge bases (Coze datasets): datasets of a space, their documents, and recall.

Who may do what is the space rule (:mod:`coze_lab.core.spaces.access`): members read and
add, the maker or the space's owners and admins delete. A document is written with its
ingestion job in one transaction; the job (:mod:`coze_lab.core.knowledge.ingest`) fills in
the chunks later. Recall is restricted to datasets of one space, so another space's
documents are never recalled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.core.ids import new_id
from coze_lab.core.knowledge import search as retrieval
from coze_lab.core.knowledge.chunking import ChunkStrategy
from coze_lab.core.knowledge.embeddings import Embedder, pack
from coze_lab.core.knowledge.parsers import FILE_TYPES, file_type
from coze_lab.core.knowledge.search import Hit, Reranker, VectorCache
from coze_lab.core.limits import Limits
from coze_lab.core.spaces.access import Access, Permission, visible
from coze_lab.store import Database
from coze_lab.store.models import Dataset, DatasetDocument, KnowledgeJob

log = logging.getLogger("coze_lab.knowledge")

#: Coze's numeric document status
STATUS_CODES = {"processing": 0, "done": 1, "failed": 9}
#: documents per create request, ids per delete (Coze's limits)
MAX_DOCUMENTS, MAX_DELETE = 10, 100


@dataclass(frozen=True)
class DatasetInfo:
    id: int
    space_id: int
    owner_id: int
    name: str
    description: str
    format_type: int
    status: int
    chunk_strategy: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    doc_count: int = 0
    slice_count: int = 0
    all_file_size: int = 0
    file_list: list[str] = field(default_factory=list)
    failed_file_list: list[str] = field(default_factory=list)
    processing_file_list: list[str] = field(default_factory=list)
    processing_file_id_list: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DocumentInfo:
    id: int
    dataset_id: int
    name: str
    file_type: str
    source_type: int
    size: int
    char_count: int
    slice_count: int
    hit_count: int
    status: str
    progress: int
    failure: str | None
    chunk_strategy: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class NewDocument:
    """A document to add: its name, type and bytes (``source_type``: Coze's, 0 local file,
    5 an uploaded file id)."""

    name: str
    file_type: str
    data: bytes
    source_type: int = 0
    #: an uploaded file (``/v1/files/upload``) whose bytes are the document
    file_id: int | None = None


class KnowledgeService:
    """Datasets, documents and hybrid recall.

    Example:
        >>> kb = KnowledgeService(db)                                     # doctest: +SKIP
        >>> ds = kb.create_dataset(user.id, None, "docs")                 # doctest: +SKIP
        >>> new = [NewDocument("a.txt", "txt", b"Hi")]                    # doctest: +SKIP
        >>> kb.create_documents(user.id, ds.id, new)                      # doctest: +SKIP
        >>> await kb.search(user.id, [ds.id], "hi")                       # doctest: +SKIP
    """

    def __init__(
        self,
        db: Database,
        *,
        clock: Clock = utcnow,
        limits: Limits | None = None,
        embedder: Callable[[], Embedder | None] = lambda: None,
        reranker: Reranker | None = None,
        on_queued: Callable[[], None] = lambda: None,
        max_document_bytes: int = 50 * 1024 * 1024,
        read_file: Callable[[int, int], bytes] | None = None,
        vector_cache_bytes: int = 512 * 1024 * 1024,
    ) -> None:
        self._read_file = read_file
        #: each dataset's vectors in memory while unchanged (the exact scan's input)
        self.vectors = VectorCache(vector_cache_bytes)
        self._db = db
        self._clock = clock
        self._limits = limits or Limits()
        self._embedder = embedder
        self.reranker = reranker
        self._on_queued = on_queued
        self._max_bytes = max_document_bytes

    # ---- datasets ---------------------------------------------------------------------
    def create_dataset(
        self,
        user_id: int,
        space_id: int | None,
        name: Any,
        description: Any = "",
        *,
        format_type: Any = 0,
        icon_file_id: int | None = None,
    ) -> DatasetInfo:
        """A new, empty knowledge base in ``space_id`` (None: the personal space)."""
        name = self._limits.name(name, "name")
        description = self._limits.description(description, "description")
        if isinstance(format_type, bool) or format_type not in (0, None):
            raise InvalidParameter(
                "format_type must be 0 (text): table and image knowledge bases are not supported"
            )
        now = self._clock()
        with self._db.transaction() as session:
            access = Access.load(session, user_id)
            space = access.space(space_id)
            access.require(space, Permission.EDIT)
            row = Dataset(
                id=new_id(),
                space_id=space,
                owner_id=user_id,
                name=name,
                description=description,
                format_type=0,
                status=1,
                chunk_strategy=None,
                icon_file_id=icon_file_id,
                created_at=now,
                updated_at=now,
            )
            session.add(row)
        return _dataset(row)

    def list_datasets(
        self,
        user_id: int,
        space_id: int | None,
        *,
        name: str | None = None,
        page_num: int = 1,
        page_size: int = 10,
    ) -> tuple[list[DatasetInfo], int]:
        """A page of a space's knowledge bases (``name``: a part of the name), newest first."""
        with self._db.reading() as session:
            access = Access.load(session, user_id)
            space = access.space(space_id)
            access.require(space, Permission.READ)
            where = [Dataset.space_id == space]
            if name:
                where.append(Dataset.name.contains(name, autoescape=True))
            total = session.scalar(select(func.count()).select_from(Dataset).where(*where)) or 0
            rows = session.scalars(
                select(Dataset)
                .where(*where)
                .order_by(Dataset.id.desc())
                .offset((page_num - 1) * page_size)
                .limit(page_size)
            ).all()
            docs = session.execute(
                select(
                    DatasetDocument.dataset_id,
                    DatasetDocument.id,
                    DatasetDocument.name,
                    DatasetDocument.status,
                    DatasetDocument.size,
                    DatasetDocument.slice_count,
                ).where(DatasetDocument.dataset_id.in_([r.id for r in rows]))
            ).all()
        return [_dataset(r, [d for d in docs if d.dataset_id == r.id]) for r in rows], total

    def get_dataset(self, user_id: int, dataset_id: int) -> DatasetInfo:
        with self._db.reading() as session:
            return _dataset(self._visible(session, user_id, dataset_id))

    def update_dataset(
        self,
        user_id: int,
        dataset_id: int,
        name: Any,
        description: Any = "",
        icon_file_id: int | None = None,
    ) -> DatasetInfo:
        """Replace the name, description and icon (Coze's update refreshes all three)."""
        name = self._limits.name(name, "name")
        description = self._limits.description(description, "description")
        with self._db.transaction() as session:
            row = self._visible(session, user_id, dataset_id, for_update=True)
            Access.load(session, user_id).require(row.space_id, Permission.EDIT)
            row.name, row.description, row.icon_file_id = name, description, icon_file_id
            row.updated_at = self._clock()
        return _dataset(row)

    def delete_dataset(self, user_id: int, dataset_id: int) -> None:
        """Delete a knowledge base with its documents and chunks."""
        with self._db.transaction() as session:
            row = self._visible(session, user_id, dataset_id, for_update=True)
            Access.load(session, user_id).require_delete(
                row.space_id, row.owner_id, "this knowledge base"
            )
            session.delete(row)

    def dataset_names(self, space_id: int, dataset_ids: Sequence[int]) -> dict[int, str]:
        """The names of those of ``dataset_ids`` that belong to ``space_id``."""
        if not dataset_ids:
            return {}
        with self._db.read() as conn:
            rows = conn.execute(
                select(Dataset.id, Dataset.name).where(
                    Dataset.id.in_(list(dataset_ids)), Dataset.space_id == space_id
                )
            ).all()
        return {int(r.id): r.name for r in rows}

    # ---- documents --------------------------------------------------------------------
    def create_documents(
        self,
        user_id: int,
        dataset_id: int,
        documents: Sequence[NewDocument],
        chunk_strategy: ChunkStrategy | None = None,
    ) -> list[DocumentInfo]:
        """Add documents (all or none); each is ``processing`` until its job has run."""
        if not documents:
            raise InvalidParameter("document_bases must name at least one document")
        if len(documents) > MAX_DOCUMENTS:
            raise InvalidParameter(f"document_bases holds at most {MAX_DOCUMENTS} documents")
        checked = []
        for i, doc in enumerate(documents):
            if doc.file_id is not None:
                if self._read_file is None:
                    raise InvalidParameter("documents from uploaded files are not available here")
                doc = replace(doc, data=self._read_file(user_id, doc.file_id))
            kind = file_type(doc.file_type)
            if kind is None:
                raise InvalidParameter(
                    f"document_bases[{i}]: file_type {doc.file_type!r} is not supported "
                    f"(use one of {', '.join(FILE_TYPES)})"
                )
            if len(doc.data) > self._max_bytes:
                raise InvalidParameter(
                    f"document_bases[{i}] is larger than {self._max_bytes} bytes"
                )
            name = self._limits.name(doc.name, f"document_bases[{i}].name")
            checked.append((name, kind, doc))
        now = self._clock()
        rows = []
        with self._db.transaction() as session:
            dataset = self._visible(session, user_id, dataset_id, for_update=True)
            Access.load(session, user_id).require(dataset.space_id, Permission.EDIT)
            strategy = chunk_strategy or ChunkStrategy.from_dict(dataset.chunk_strategy)
            if dataset.chunk_strategy is None:
                dataset.chunk_strategy = strategy.to_dict()
            dataset.updated_at = now
            for name, kind, doc in checked:
                row = DatasetDocument(
                    id=new_id(),
                    dataset_id=dataset.id,
                    space_id=dataset.space_id,
                    owner_id=user_id,
                    name=name,
                    file_type=kind,
                    source_type=doc.source_type,
                    size=len(doc.data),
                    char_count=0,
                    slice_count=0,
                    hit_count=0,
                    status="processing",
                    progress=0,
                    failure=None,
                    chunk_strategy=strategy.to_dict(),
                    created_at=now,
                    updated_at=now,
                )
                session.add(row)
                session.flush()
                session.add(
                    KnowledgeJob(
                        document_id=row.id,
                        payload=doc.data,
                        attempts=0,
                        worker=None,
                        lease_until=None,
                        created_at=now,
                    )
                )
                rows.append(row)
        self._on_queued()
        return [_document(r) for r in rows]

    def list_documents(
        self, user_id: int, dataset_id: int, *, page: int = 1, size: int = 10
    ) -> tuple[list[DocumentInfo], int]:
        with self._db.reading() as session:
            self._visible(session, user_id, dataset_id)
            where = DatasetDocument.dataset_id == dataset_id
            total = (
                session.scalar(select(func.count()).select_from(DatasetDocument).where(where)) or 0
            )
            rows = session.scalars(
                select(DatasetDocument)
                .where(where)
                .order_by(DatasetDocument.id)
                .offset((page - 1) * size)
                .limit(size)
            ).all()
        return [_document(r) for r in rows], total

    def progress(
        self, user_id: int, dataset_id: int, document_ids: Sequence[int]
    ) -> list[DocumentInfo]:
        """The documents' status and progress (unknown ids: 404 naming them)."""
        with self._db.reading() as session:
            self._visible(session, user_id, dataset_id)
            rows = session.scalars(
                select(DatasetDocument).where(
                    DatasetDocument.dataset_id == dataset_id,
                    DatasetDocument.id.in_(list(document_ids)),
                )
            ).all()
        missing = set(document_ids) - {r.id for r in rows}
        if missing:
            raise NotFound(f"document {min(missing)} does not exist in dataset {dataset_id}")
        order = {d: i for i, d in enumerate(document_ids)}
        return sorted((_document(r) for r in rows), key=lambda d: order[d.id])

    def rename_document(self, user_id: int, document_id: int, name: Any) -> DocumentInfo:
        name = self._limits.name(name, "document_name")
        with self._db.transaction() as session:
            row = self._document_row(session, user_id, document_id)
            Access.load(session, user_id).require(row.space_id, Permission.EDIT)
            row.name, row.updated_at = name, self._clock()
        return _document(row)

    def delete_documents(self, user_id: int, document_ids: Sequence[int]) -> None:
        """Delete documents with their chunks (all or none)."""
        if not document_ids:
            raise InvalidParameter("document_ids must name at least one document")
        if len(document_ids) > MAX_DELETE:
            raise InvalidParameter(f"document_ids names at most {MAX_DELETE} documents")
        with self._db.transaction() as session:
            access = Access.load(session, user_id)
            for document_id in dict.fromkeys(document_ids):
                row = self._document_row(session, user_id, document_id)
                access.require_delete(row.space_id, row.owner_id, f"document {document_id}")
            session.execute(
                delete(DatasetDocument).where(DatasetDocument.id.in_(list(document_ids)))
            )

    # ---- recall -----------------------------------------------------------------------
    async def search(
        self,
        user_id: int,
        dataset_ids: Sequence[int],
        query: str,
        *,
        top_k: int = 5,
        min_score: float = 0.0,
    ) -> list[Hit]:
        """Recall from knowledge bases the user can read (another's: 404)."""
        with self._db.reading() as session:
            spaces = {self._visible(session, user_id, d).space_id for d in dataset_ids}
        hits: list[Hit] = []
        for space in spaces:
            hits.extend(
                await self.search_space(space, dataset_ids, query, top_k=top_k, min_score=min_score)
            )
        hits.sort(key=lambda h: -h.fused)
        return hits[:top_k]

    async def search_space(
        self,
        space_id: int,
        dataset_ids: Sequence[int],
        query: str,
        *,
        top_k: int = 5,
        min_score: float = 0.0,
    ) -> list[Hit]:
        """Recall from those of ``dataset_ids`` that belong to ``space_id`` (a bot's space):
        full text and vectors fused by reciprocal rank, then the reranker, then
        ``min_score`` (cosine similarity) and ``top_k``."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidParameter("query must be a non-empty string")
        if not 1 <= top_k <= 100:
            raise InvalidParameter("top_k must be between 1 and 100")
        ids = list(self.dataset_names(space_id, dataset_ids))
        if not ids:
            return []
        rankings = [retrieval.full_text(self._db, ids, query, retrieval.CANDIDATES)]
        similarity: dict[int, float] = {}
        vector: bytes | None = None
        embedder = self._embedder()
        if embedder is not None:
            try:
                vector = pack((await embedder.embed([query]))[0])
            except Exception as exc:  # the model is down: full text still answers
                log.warning("knowledge query not embedded, full text only: %s", exc)
        if vector is not None:
            schema = retrieval.pgvector(self._db)
            if schema is not None:
                near = retrieval.pg_nearest(self._db, schema, ids, vector, retrieval.CANDIDATES)
            else:
                near = retrieval.exact_scan(
                    self._db, ids, vector, retrieval.CANDIDATES, self.vectors
                )
            similarity = dict(near)
            rankings.append([chunk_id for chunk_id, _ in near])
        fused = retrieval.fuse(rankings)
        hits = retrieval.load_hits(self._db, fused, similarity, vector, len(rankings))
        if self.reranker is not None:
            hits = await self.reranker.rerank(query, hits)
        return [h for h in hits if min_score <= 0 or h.score >= min_score][:top_k]

    # ---- helpers ----------------------------------------------------------------------
    def _visible(
        self, session: Any, user_id: int, dataset_id: int, *, for_update: bool = False
    ) -> Dataset:
        query = select(Dataset).where(Dataset.id == dataset_id, visible(Dataset.space_id, user_id))
        if for_update:
            query = query.with_for_update()
        row = session.scalars(query).first()
        if row is None:
            raise NotFound(f"dataset {dataset_id} does not exist")
        return row

    def _document_row(self, session: Any, user_id: int, document_id: int) -> DatasetDocument:
        row = session.scalars(
            select(DatasetDocument).where(
                DatasetDocument.id == document_id, visible(DatasetDocument.space_id, user_id)
            )
        ).first()
        if row is None:
            raise NotFound(f"document {document_id} does not exist")
        return row


def _dataset(row: Dataset, docs: Sequence[Any] = ()) -> DatasetInfo:
    return DatasetInfo(
        row.id,
        row.space_id,
        row.owner_id,
        row.name,
        row.description,
        row.format_type,
        row.status,
        row.chunk_strategy,
        row.created_at,
        row.updated_at,
        doc_count=len(docs),
        slice_count=sum(d.slice_count for d in docs),
        all_file_size=sum(d.size for d in docs),
        file_list=[d.name for d in docs],
        failed_file_list=[d.name for d in docs if d.status == "failed"],
        processing_file_list=[d.name for d in docs if d.status == "processing"],
        processing_file_id_list=[str(d.id) for d in docs if d.status == "processing"],
    )


def _document(row: DatasetDocument) -> DocumentInfo:
    return DocumentInfo(
        row.id,
        row.dataset_id,
        row.name,
        row.file_type,
        row.source_type,
        row.size,
        row.char_count,
        row.slice_count,
        row.hit_count,
        row.status,
        row.progress,
        row.failure,
        row.chunk_strategy,
        row.created_at,
        row.updated_at,
    )
