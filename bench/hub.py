"""Figures for the shared-hub shape (issue 13, phase 1), measured in one run.

1. List latency against history: ``GET /coze_lab/api/runs?limit=20`` on ``coze-lab serve``
   with 1k, 10k and 100k stored runs (a quarter of them the caller's, the rest three other
   users'), with the indexes of migration 0007 and,
   side by side, without them (the single-column ``owner_id`` index of before), on SQLite
   and on PostgreSQL.
2. ``/v1/workflow/run`` (3-node workflow, 16 concurrent clients) on PostgreSQL against
   SQLite, one server process each, with the CPU each process group spends per run (the
   server, PostgreSQL's backends of its connections, all postgres processes, the load
   generator) and what the two cores allow for that sum; ``--baseline DIR`` alternates
   servers running an older checkout with this one's in every round.
3. 50 simulated hub users (``bench/hub_users.py``): a real JupyterHub, hub API tokens from
   its REST API, chats with a published bot and workflow runs that ask a question, through
   the hub's proxy at ``/services/coze-lab/``, against 1 and then 2 service replicas on
   PostgreSQL: throughput, p50/p95 of the first delta and of run completion, errors, the
   2-replica/1-replica ratio, and each process group's CPU per operation (from ``/proc``).

Every figure is min / median / max of 3 rounds, printed with the machine's load average
(other work shares these two cores).

    python bench/hub.py [--sizes 1000,10000,100000] [--pg URL | --no-pg] [--users 50]
    python bench/hub.py --skip-lists --skip-hub-users --baseline /tmp/base --runs 600
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
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
from sqlalchemy import create_engine, insert, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.engine import chain  # noqa: E402
from bench.hub_users import CLK, cpu_delta, cpu_s, hub_users, postgres_pids  # noqa: E402
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
@dataclass(frozen=True)
class Side:
    """One side of the throughput comparison: a database kind and the code that serves it
    (``tree``: a checkout of the baseline, None: this one)."""

    kind: str
    tree: Path | None = None

    @property
    def label(self) -> str:
        return self.kind + (", baseline" if self.tree is not None else "")

    def env(self) -> dict[str, str]:
        """The server's environment: the baseline's package first on the import path (and
        not the working directory, which ``python -m`` would put before it)."""
        if self.tree is None:
            return {}
        return {"PYTHONPATH": str(self.tree), "PYTHONSAFEPATH": "1"}


@dataclass
class Rate:
    """One round of one side: throughput, failures and CPU ms per run of each group."""

    runs_s: float
    failures: int
    cpu_ms: dict[str, float]
    #: PostgreSQL sessions opened per run (whole database; 0 on SQLite)
    sessions: float = 0.0


def backend_pids(url: str, name: str) -> list[int]:
    """PostgreSQL backends of the connections named ``name`` (``application_name``)."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text("select pid from pg_stat_activity where application_name = :name"),
                {"name": name},
            )
            return [int(pid) for (pid,) in rows]
    finally:
        engine.dispose()


def cpu_with_reaped(pid: int) -> float:
    """CPU seconds of a process and of its children that ended (the postmaster's backends
    that exited count there)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / CLK


def sessions(url: str) -> int:
    """Sessions opened on the database so far (PostgreSQL counts one when it ends or its
    statistics are flushed; other users of the database included)."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return int(
                connection.execute(
                    text("select sessions from pg_stat_database where datname = current_database()")
                ).scalar_one()
            )
    finally:
        engine.dispose()


def cpu_sample(server: int, url: str, name: str | None) -> dict[str, dict[int, float]]:
    """CPU seconds so far of each process group: the server, PostgreSQL's backends of its
    connections (those alive at the end), every postgres process with the backends that
    exited (other users of this PostgreSQL included), and this process (the load
    generator)."""
    sample = {"server": {server: cpu_s(server)}, "load generator": {0: sum(os.times()[:2])}}
    if name is not None:
        sample["its postgres backends"] = {p: cpu_s(p) for p in backend_pids(url, name)}
        sample["all postgres processes"] = {p: cpu_with_reaped(p) for p in postgres_pids()}
    return sample


async def run_rate(side: Side, url: str, data: Path, total: int, concurrency: int) -> Rate:
    data.parent.mkdir(parents=True, exist_ok=True)
    path = data.parent / "three.json"
    path.write_text(json.dumps(chain(3).to_dict()))
    name = None
    if side.kind == "postgresql":  # the server's backends carry its name
        name = f"bench_{secrets.token_hex(4)}"
        url = (
            make_url(url)
            .update_query_dict({"application_name": name})
            .render_as_string(hide_password=False)
        )
    args = ["--data-dir", str(data), "--database-url", url]
    wid = run_cli(*args, "workflow", "import", str(path), "--user", "bench", "--publish")
    wid_value = wid.stdout.split()[-1]
    token = run_cli(*args, "pat", "create", "--user", "bench", "--name", "b").stdout.split()[-1]
    server = ServerProcess(data, url, env=side.env()).start()
    assert server.proc is not None
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

            opened = sessions(url) if name is not None else 0
            before = cpu_sample(server.proc.pid, url, name)
            began = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            elapsed = time.perf_counter() - began
            after = cpu_sample(server.proc.pid, url, name)
            if name is not None:
                await asyncio.sleep(1.1)  # PostgreSQL flushes session counts once a second
                opened = sessions(url) - opened - 1  # the count's own session
    finally:
        server.stop()
    cpu = {group: cpu_delta(before[group], after[group]) * 1000 / total for group in after}
    return Rate(total / elapsed, failures, cpu, opened / total)


def run_throughput(
    pg_url: str | None, tmp: Path, baseline: Path | None = None
) -> list[tuple[str, str]]:
    """``/v1/workflow/run`` on each side, the sides alternated in every round so that all
    see the same load; with ``baseline`` (a checkout of older code) its servers too."""
    kinds = ["sqlite", "postgresql"] if pg_url else ["sqlite"]
    sides = [Side(k) for k in kinds]
    if baseline is not None:
        sides = [s for k in kinds for s in (Side(k, baseline), Side(k))]
    rates: dict[Side, list[Rate]] = {side: [] for side in sides}
    loads: list[float] = []
    for _ in range(ROUNDS):
        for side in sides:
            with database(side.kind, pg_url or "", tmp) as url:
                loads.append(os.getloadavg()[0])
                rate = asyncio.run(
                    run_rate(side, url, tmp / secrets.token_hex(3) / "data", RUNS, 16)
                )
                rates[side].append(rate)
                cpu = ", ".join(f"{g} {ms:.2f}" for g, ms in rate.cpu_ms.items())
                opened = f"; {rate.sessions:.3f} sessions/run" if side.kind != "sqlite" else ""
                print(
                    f"  /v1/workflow/run {side.label}: {rate.runs_s:.0f} runs/s; "
                    f"CPU ms per run: {cpu}{opened} ({load()})",
                    flush=True,
                )
    rows = []
    for side in sides:
        runs = rates[side]
        rows.append(
            (
                f"/v1/workflow/run, {side.label}, 16 concurrent",
                spread([r.runs_s for r in runs], "runs/s", 0),
            )
        )
        for group in runs[0].cpu_ms:
            rows.append(
                (
                    f"  CPU ms per run, {group}",
                    spread([r.cpu_ms[group] for r in runs], "ms"),
                )
            )
        if side.kind != "sqlite":
            rows.append(
                (
                    "  PostgreSQL sessions opened per run (whole database)",
                    spread([r.sessions for r in runs], "", 3),
                )
            )
        # what the two cores allow: each run needs this much CPU of the groups that do
        # its work (the server, its backends, the load generator) ...
        need = [
            r.cpu_ms["server"]
            + r.cpu_ms.get("its postgres backends", 0)
            + r.cpu_ms["load generator"]
            for r in runs
        ]
        rows.append(
            (
                "  2 cores / CPU of those groups per run (runs/s the machine allows)",
                spread([2000 / n for n in need], "runs/s", 0),
            )
        )
    for tree in [None] + ([baseline] if baseline is not None else []):
        if not pg_url:
            break
        pg, lite = Side("postgresql", tree), Side("sqlite", tree)
        ratio = statistics.median(r.runs_s for r in rates[pg]) / statistics.median(
            r.runs_s for r in rates[lite]
        )
        label = "baseline " if tree is not None else ""
        rows.append(
            (
                f"/v1/workflow/run {label}PostgreSQL / SQLite (medians; target >= 0.8)",
                f"{ratio:.2f}",
            )
        )
    rows.append(("failed runs", str(sum(r.failures for rs in rates.values() for r in rs))))
    span = f"load {min(loads):.2f}-{max(loads):.2f} at the rounds' starts"
    return [(name, f"{value}  ({span})") for name, value in rows]


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
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a checkout of older code (the folder holding its coze_lab package): part 2 "
        "alternates its servers with this code's, e.g. "
        "mkdir /tmp/base && git archive main coze_lab | tar -x -C /tmp/base "
        "&& cp coze_lab/_version.py /tmp/base/coze_lab/",
    )
    parser.add_argument("--runs", type=int, default=300, help="runs per round of part 2")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    pg = None if args.no_pg else args.pg
    sizes = [int(s) for s in args.sizes.split(",")]
    global ROUNDS, RUNS
    RUNS = args.runs
    if args.quick:
        ROUNDS, RUNS, sizes = 1, 40, [200]
        args.users, args.per_user = min(args.users, 4), 1
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_lists:
            for kind in ["sqlite"] + (["postgresql"] if pg else []):
                rows += list_curve(kind, pg or "", sizes, Path(tmp))
        if not args.skip_runs:
            rows += run_throughput(pg, Path(tmp), args.baseline)
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
