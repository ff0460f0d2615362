"""Vectors in sqlite-vec on SQLite: a ``vec0`` table per embedding dimension.

``dataset_vectors_<dimension>`` holds each chunk's vector keyed by the chunk's id, with the
dataset as its partition key, so a k-nearest-neighbour query reads only the datasets asked
for. The chunk's ``embedding`` column stays the source of truth: these tables are an index,
written and deleted in the same transaction as the chunks, created on first use, and
rebuilt by :func:`sync` (at start-up) when they drifted (chunks written while the extension
was not loaded). Where sqlite-vec does not load, the exact scan in ``search`` is used.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, bindparam, text

from coze_lab.store import Database

log = logging.getLogger(__name__)
_NAME = re.compile(r"dataset_vectors_\d+")

#: how many KNN queries ran (tests read it to see which vector search recall used)
queries = 0


def table(size: int) -> str:
    """The vec0 table of vectors of ``size`` bytes (float32).

    Example:
        >>> table(4 * 384)
        'dataset_vectors_384'
    """
    return f"dataset_vectors_{size // 4}"


def tables(conn: Connection) -> list[str]:
    """The vec0 tables that exist."""
    rows = conn.execute(
        text(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name GLOB 'dataset_vectors_[0-9]*' AND sql LIKE '%vec0%'"
        )
    )
    return [row[0] for row in rows if _NAME.fullmatch(row[0])]  # not vec0's shadow tables


def _create(conn: Connection, size: int) -> str:
    name = table(size)
    conn.execute(
        text(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING vec0("
            "chunk_id INTEGER PRIMARY KEY, dataset_id INTEGER PARTITION KEY, "
            f"embedding float[{size // 4}] distance_metric=cosine)"
        )
    )
    return name


def store(conn: Connection, rows: Iterable[tuple[int, int, bytes | None]]) -> None:
    """Index ``(chunk id, dataset id, vector)`` rows, in the caller's transaction."""
    by_size: dict[int, list[dict[str, object]]] = {}
    for chunk_id, dataset_id, vector in rows:
        if vector:
            by_size.setdefault(len(vector), []).append(
                {"c": chunk_id, "d": dataset_id, "v": vector}
            )
    for size, values in by_size.items():
        name = _create(conn, size)
        conn.execute(
            text(f"INSERT INTO {name}(chunk_id, dataset_id, embedding) VALUES (:c, :d, :v)"),
            values,
        )


def forget(conn: Connection, where: str, params: dict[str, object]) -> None:
    """Drop the vectors of the chunks ``where`` selects (a condition on
    ``dataset_chunks``), in the caller's transaction, before those chunks go."""
    lists = [bindparam(k, expanding=True) for k, v in params.items() if isinstance(v, list)]
    for name in tables(conn):
        sql = f"DELETE FROM {name} WHERE chunk_id IN (SELECT id FROM dataset_chunks WHERE {where})"
        conn.execute(text(sql).bindparams(*lists), params)


def nearest(
    db: Database, dataset_ids: Sequence[int], vector: bytes, limit: int
) -> list[tuple[int, float]]:
    """The ``limit`` chunks of the datasets nearest to ``vector`` (cosine similarity),
    best first, by sqlite-vec's k-nearest-neighbour search."""
    global queries
    name = table(len(vector))
    with db.read() as conn:
        if name not in tables(conn):
            return []
        # with IN on the partition key vec0 returns k per partition: merged here
        statement = text(
            f"SELECT chunk_id, distance FROM {name} "
            "WHERE embedding MATCH :v AND k = :k AND dataset_id IN :ids"
        ).bindparams(bindparam("ids", expanding=True))
        rows = conn.execute(statement, {"v": vector, "k": limit, "ids": list(dataset_ids)})
        found = sorted(((int(r[0]), 1.0 - float(r[1])) for r in rows), key=lambda r: -r[1])
    queries += 1
    return found[:limit]


def sync(db: Database) -> int:
    """Rebuild each dimension's table whose rows differ from the chunks' vectors; return
    how many tables were rebuilt (start-up calls it where sqlite-vec is loaded)."""
    rebuilt = 0
    with db.write() as conn:
        sizes = {
            int(r[0]): int(r[1])
            for r in conn.execute(
                text(
                    "SELECT length(embedding), count(*) FROM dataset_chunks "
                    "WHERE embedding IS NOT NULL GROUP BY length(embedding)"
                )
            )
            if r[0] and int(r[0]) % 4 == 0
        }
        existing = set(tables(conn))
        for name in existing - {table(s) for s in sizes}:
            conn.execute(text(f"DROP TABLE {name}"))
            rebuilt += 1
        for size, count in sizes.items():
            name = table(size)
            if name in existing:
                indexed = conn.execute(text(f"SELECT count(*), max(chunk_id) FROM {name}")).one()
                newest = conn.execute(
                    text("SELECT max(id) FROM dataset_chunks WHERE length(embedding) = :s"),
                    {"s": size},
                ).scalar()
                if indexed[0] == count and indexed[1] == newest:
                    continue
                conn.execute(text(f"DROP TABLE {name}"))
            _create(conn, size)
            conn.execute(
                text(
                    f"INSERT INTO {name}(chunk_id, dataset_id, embedding) "
                    "SELECT id, dataset_id, embedding FROM dataset_chunks "
                    "WHERE length(embedding) = :s"
                ),
                {"s": size},
            )
            log.info("knowledge: rebuilt %s (%d vectors)", name, count)
            rebuilt += 1
    return rebuilt
