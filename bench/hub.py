"""Figures for the shared-hub shape (issue 13, phase 1), measured in one run.

1. List latency against history: ``GET /coze_lab/api/runs?limit=20`` on ``coze-lab serve``
   with 1k, 10k and 100k stored runs (a quarter of them the caller's, the rest three other
   users'), with the indexes of migration 0007 and,
   side by side, without them (the single-column ``owner_id`` index of before), on SQLite
   and on PostgreSQL.
2. ``/v1/workflow/run`` (3-node workflow, 16 concurrent clients) on PostgreSQL against
   SQLite, one server process each.
3. 50 simulated hub users (``bench/hub_users.py``): a real JupyterHub, hub API tokens from
   its REST API, chats with a published bot and workflow runs that ask a question, through
   the hub's proxy at ``/services/coze-lab/``, against 1 and then 2 service replicas on
   PostgreSQL: throughput, p50/p95 of the first delta and of run completion, errors, the
   2-replica/1-replica ratio, and each process group's CPU per operation (from ``/proc``).

Every figure is min / median / max of 3 rounds, printed with the machine's load average
(other work shares these two cores).

    python bench/hub.py [--sizes 1000,10000,100000] [--pg URL | --no-pg] [--users 50]
    python bench/hub.py --quick     # a smoke run: every part, small and once
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
from sqlalchemy import insert, text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.engine import chain  # noqa: E402
from bench.hub_users import hub_users  # noqa: E402
from coze_lab.config import CozeLab  # noqa: E402
from coze_lab.core.ids import new_id  # noqa: E402
from coze_lab.services import Runtime  # noqa: E402
from coze_lab.store import sqlite_url  # noqa: E402
from coze_lab.store.models import WorkflowRun  # noqa: E402
from tests.support import ServerProcess, pg_schema, run_cli  # noqa: E402

PG_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
ROUNDS = 3
#: runs per round of the throughput part
RUNS = 300


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def spread(values: list[float], unit: str, digits: int = 2) -> str:
    return (
        f"{min(values):.{digits}f} / {statistics.median(values):.{digits}f} / "
        f"{max(values):.{digits}f} {unit}"
    )


@contextmanager
def database(kind: str, pg_url: str, tmp: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield sqlite_url(tmp / f"{secrets.token_hex(3)}" / "coze_lab.db")
    else:
        with pg_schema(pg_url, "bench_") as url:
            yield url


# ---- 1. list latency --------------------------------------------------------------------
def add_runs(runtime: Runtime, owners: list[int], workflow: int, count: int) -> None:
    """``count`` finished runs, every fourth one the first owner's (the one who lists), the
    rest other users'; each carries its definition as real runs do. PostgreSQL's statistics
    are refreshed (autovacuum would); SQLite's are not (nothing runs ANALYZE there)."""
    definition = chain(3).to_dict()
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    table = WorkflowRun.__table__
    batch = []
    for i in range(count):
        at = start + timedelta(seconds=i)
        batch.append(
            {
                "id": new_id(),
                "owner_id": owners[i % len(owners)],
                "workflow_id": workflow if i % len(owners) == 0 else None,
                "version": 1,
                "definition": definition,
                "status": "succeeded",
                "inputs": {"value": "x"},
                "outputs": {"value": "x"},
                "created_at": at,
                "updated_at": at,
                "finished_at": at,
            }
        )
        if len(batch) == 5000 or i == count - 1:
            with runtime.db.write() as connection:
                connection.execute(insert(table), batch)
            batch = []
    if runtime.db.dialect == "postgresql":
        with runtime.db.engine.begin() as connection:
            connection.execute(text("analyze"))


def without_0007(runtime: Runtime) -> None:
    """The runs table's indexes as they were before migration 0007."""
    with runtime.db.engine.begin() as connection:
        connection.execute(
            text("create index ix_workflow_runs_owner_id on workflow_runs (owner_id)")
        )
        connection.execute(
            text("create index ix_workflow_runs_workflow_id on workflow_runs (workflow_id)")
        )
        connection.execute(text("drop index ix_workflow_runs_owner_id_id"))
        connection.execute(text("drop index ix_workflow_runs_workflow_owner_id"))


def list_p50(server: ServerProcess, token: str, requests: int) -> float:
    """Median latency (ms) of GET /coze_lab/api/runs?limit=20 over ``requests`` calls."""
    samples = []
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as http:
        http.get("/coze_lab/api/runs", params={"limit": 20}).raise_for_status()  # warm-up
        for _ in range(requests):
            began = time.perf_counter()
            response = http.get("/coze_lab/api/runs", params={"limit": 20})
            samples.append((time.perf_counter() - began) * 1000)
            assert len(response.json()["data"]["runs"]) == 20
    return statistics.median(samples)


def list_curve(kind: str, pg_url: str, sizes: list[int], tmp: Path) -> list[tuple[str, str]]:
    rows = []
    for old in (False, True):
        with database(kind, pg_url, tmp) as url:
            data = tmp / secrets.token_hex(3)
            runtime = Runtime(CozeLab(data_dir=str(data), database_url=url))
            runtime.start()
            user = runtime.identity.ensure_user("bench")
            others = [runtime.identity.ensure_user(f"other{i}").id for i in range(3)]
            token = runtime.tokens.create(user.id, "bench")[1]
            workflow = runtime.workflows.save(user.id, chain(3).to_dict()).id
            if old:
                without_0007(runtime)
            stored = 0
            for size in sizes:
                add_runs(runtime, [user.id, *others], workflow, size - stored)
                stored = size
                server = ServerProcess(data, url).start()
                try:
                    requests = 30 if old and size >= 100_000 else 100
                    rounds = [list_p50(server, token, requests) for _ in range(ROUNDS)]
                finally:
                    server.stop()
                label = "before 0007 (owner_id index)" if old else "with 0007 (owner_id, id)"
                rows.append(
                    (
                        f"runs list p50, {kind}, {size:>7,} runs, {label}",
                        f"{spread(rounds, 'ms')}  ({load()})",
                    )
                )
                print(*rows[-1], flush=True)
            runtime.db.dispose()
    return rows


# ---- 2. /v1/workflow/run throughput -----------------------------------------------------
async def run_rate(url: str, data: Path, total: int, concurrency: int) -> tuple[float, int]:
    data.parent.mkdir(parents=True, exist_ok=True)
    path = data.parent / "three.json"
    path.write_text(json.dumps(chain(3).to_dict()))
    args = ["--data-dir", str(data), "--database-url", url]
    wid = run_cli(*args, "workflow", "import", str(path), "--user", "bench", "--publish")
    wid_value = wid.stdout.split()[-1]
    token = run_cli(*args, "pat", "create", "--user", "bench", "--name", "b").stdout.split()[-1]
    server = ServerProcess(data, url).start()
    failures = 0
    try:
        headers = {"Authorization": f"Bearer {token}"}
        body = {"workflow_id": wid_value, "parameters": {"value": "x"}}
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as client:
            for _ in range(20):
                (await client.post("/v1/workflow/run", json=body)).raise_for_status()
            left = total

            async def worker() -> None:
                nonlocal left, failures
                while left > 0:
                    left -= 1
                    reply = (await client.post("/v1/workflow/run", json=body)).json()
                    failures += reply["code"] != 0

            began = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            elapsed = time.perf_counter() - began
    finally:
        server.stop()
    return total / elapsed, failures


def run_throughput(pg_url: str | None, tmp: Path) -> list[tuple[str, str]]:
    rates: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
    failed = 0
    kinds = ["sqlite", "postgresql"] if pg_url else ["sqlite"]
    for _ in range(ROUNDS):  # interleaved, so both see the same load
        for kind in kinds:
            with database(kind, pg_url or "", tmp) as url:
                rate, failures = asyncio.run(
                    run_rate(url, tmp / secrets.token_hex(3) / "data", RUNS, 16)
                )
                rates[kind].append(rate)
                failed += failures
                print(f"  /v1/workflow/run {kind}: {rate:.0f} runs/s ({load()})", flush=True)
    rows = [
        (f"/v1/workflow/run, {kind}, 16 concurrent", f"{spread(rates[kind], 'runs/s', 0)}")
        for kind in kinds
    ]
    if pg_url:
        ratio = statistics.median(rates["postgresql"]) / statistics.median(rates["sqlite"])
        rows.append(
            ("/v1/workflow/run PostgreSQL / SQLite (medians; target >= 0.8)", f"{ratio:.2f}")
        )
    rows.append(("failed runs", str(failed)))
    return [(name, f"{value}  ({load()})") for name, value in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--pg", default=os.environ.get("COZE_LAB_BENCH_DATABASE_URL", PG_DEFAULT))
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--skip-lists", action="store_true")
    parser.add_argument("--skip-runs", action="store_true")
    parser.add_argument("--skip-hub-users", action="store_true")
    parser.add_argument("--users", type=int, default=50, help="simulated hub users")
    parser.add_argument("--per-user", type=int, default=2, help="(chat, run) pairs per round")
    parser.add_argument("--quick", action="store_true", help="every part, small, one round")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    pg = None if args.no_pg else args.pg
    sizes = [int(s) for s in args.sizes.split(",")]
    global ROUNDS, RUNS
    if args.quick:
        ROUNDS, RUNS, sizes = 1, 40, [200]
        args.users, args.per_user = min(args.users, 4), 1
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_lists:
            for kind in ["sqlite"] + (["postgresql"] if pg else []):
                rows += list_curve(kind, pg or "", sizes, Path(tmp))
        if not args.skip_runs:
            rows += run_throughput(pg, Path(tmp))
        if pg and not args.skip_hub_users:
            with pg_schema(pg, "bench_") as url:
                rows += hub_users(
                    url,
                    Path(tmp) / "hub",
                    count=args.users,
                    per_user=args.per_user,
                    rounds=ROUNDS,
                )
    print()
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
