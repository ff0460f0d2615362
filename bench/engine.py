"""Workflow engine figures, each side by side with its baseline in one run, over rounds.

1. Overhead per node of a 50-node pass-through workflow, durable per-node commits on SQLite,
   against LangGraph on the same graph with ``SqliteSaver``: ``durability="sync"`` (each
   checkpoint committed before the next step, as our engine commits each step) is the
   headline, ``"async"`` (LangGraph's default) is shown too. Same SQLite settings on both
   (WAL, ``synchronous=NORMAL``, read back and printed). The sides alternate in blocks of
   runs (A/B/C/A/B/C...), so drift of the shared machine touches all of them.
2. 3-node workflow runs through ``/v1/workflow/run`` on one ``coze-lab serve`` process:
   runs per second with 16 concurrent clients, and the server's own CPU per run (its
   process time from ``/proc``), so the figure does not depend on the load generator
   sharing the cores; capacity = 1000 / CPU ms per run.

    python bench/engine.py [--rounds N] [--only nodes|api]    # (make bench)

``--rounds`` defaults to 5 for the per-node figures (short rounds on a shared machine: the
median of 5 is steadier) and to ``COZE_LAB_BENCH_ROUNDS`` (3) for the API figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import ROUNDS, Figures, banner, percentile, process_cpu  # noqa: E402

from coze_lab.core.identity import IdentityService  # noqa: E402
from coze_lab.core.workflows import Edge, InputSpec, NodeSpec, WorkflowSpec  # noqa: E402
from coze_lab.core.workflows.engine import Engine  # noqa: E402
from coze_lab.core.workflows.validate import validate  # noqa: E402
from coze_lab.store import Database, sqlite_url  # noqa: E402
from tests.support import ServerProcess, run_cli  # noqa: E402

NODES = 50
NODE_ROUNDS = 5  # the per-node ratio moves with the shared machine: more rounds, steadier median
RUNS_PER_ROUND = 60  # per side
BLOCK = 5  # runs of one side before the next side's turn
API_RUNS = 600  # per round
CONCURRENCY = 16
LANGGRAPH_VENV = ROOT / ".cache" / "bench-langgraph"
SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def chain(nodes: int) -> WorkflowSpec:
    """start → (nodes - 2) text nodes passing the value on → end."""
    specs = [NodeSpec("start", "start", outputs={"value": "string"})]
    edges = []
    previous, field = "start", "value"
    for i in range(nodes - 2):
        specs.append(
            NodeSpec(
                f"n{i}",
                "text",
                outputs={"output": "string"},
                config={"template": f"{{{{{previous}.{field}}}}}"},
            )
        )
        edges.append(Edge(previous, f"n{i}"))
        previous, field = f"n{i}", "output"
    specs.append(NodeSpec("end", "end", inputs={"value": f"{{{{{previous}.{field}}}}}"}))
    edges.append(Edge(previous, "end"))
    spec = WorkflowSpec(
        f"chain{nodes}", inputs=(InputSpec("value"),), nodes=tuple(specs), edges=tuple(edges)
    )
    validate(spec)
    return spec


class Ours:
    """coze_lab's engine on an SQLite file, in this process."""

    def __init__(self, tmp: Path, nodes: int) -> None:
        self.db = Database(sqlite_url(tmp / "bench.db"))
        self.db.upgrade()
        self.user = IdentityService(self.db).ensure_user("bench")
        self.engine = Engine(self.db, code_runner=lambda: None)
        self.spec = chain(nodes)
        self.nodes = nodes
        with self.db.engine.connect() as connection:
            self.sqlite = {
                "journal_mode": connection.exec_driver_sql("PRAGMA journal_mode").scalar(),
                "synchronous": SYNCHRONOUS[
                    connection.exec_driver_sql("PRAGMA synchronous").scalar()
                ],
            }

    async def run(self, runs: int) -> tuple[list[float], list[float]]:
        """Per run: wall ms per node and this process's CPU ms per node."""
        per_node, cpu_per_node = [], []
        for _ in range(runs):
            cpu, start = time.process_time(), time.perf_counter()
            info = await self.engine.wait(
                await self.engine.start(self.user.id, self.spec, {"value": "x"})
            )
            per_node.append((time.perf_counter() - start) / self.nodes * 1000)
            cpu_per_node.append((time.process_time() - cpu) / self.nodes * 1000)
            assert info.status == "succeeded" and len(info.nodes) == self.nodes
        return per_node, cpu_per_node

    async def close(self) -> None:
        await self.engine.close()
        self.db.dispose()


class LangGraph:
    """``bench/langgraph_baseline.py`` as a worker in LangGraph's own virtualenv."""

    def __init__(self, nodes: int) -> None:
        python = LANGGRAPH_VENV / "bin" / "python"
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(LANGGRAPH_VENV)], check=True)
            subprocess.run(
                [
                    str(python),
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "langgraph>=1.0",
                    "langgraph-checkpoint-sqlite>=3.0",
                ],
                check=True,
            )
        self.proc = subprocess.Popen(
            [str(python), str(ROOT / "bench" / "langgraph_baseline.py"), str(nodes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        hello = json.loads(self._line())
        self.versions, self.sqlite = hello["versions"], hello["sqlite"]

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the LangGraph worker exited")
        return line

    def run(self, runs: int, durability: str) -> tuple[list[float], list[float]]:
        """Per run: wall ms per node and the worker's CPU ms per node."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"runs": runs, "durability": durability}) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self._line())
        return answer["per_node_ms"], answer["cpu_per_node_ms"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(30)


async def per_node(rounds: int) -> None:
    banner(
        "workflow engine, overhead per node (50-node pass-through graph, SQLite file)",
        "coze_lab's engine vs LangGraph + SqliteSaver, durability=sync (headline) and "
        "async, same graph, same SQLite settings, sides alternating every "
        f"{BLOCK} runs, {RUNS_PER_ROUND} runs per side per round",
    )
    with tempfile.TemporaryDirectory() as tmp:
        ours = Ours(Path(tmp), NODES)
        theirs = LangGraph(NODES)
        try:
            await ours.run(BLOCK)  # warm-up
            theirs.run(BLOCK, "sync")
            theirs.run(BLOCK, "async")
            sides = ("ours", "sync", "async")
            medians: dict[str, list[float]] = {side: [] for side in sides}
            p95: dict[str, list[float]] = {side: [] for side in sides}
            cpu: dict[str, list[float]] = {side: [] for side in sides}
            for _ in range(rounds):
                wall: dict[str, list[float]] = {side: [] for side in sides}
                used: dict[str, list[float]] = {side: [] for side in sides}
                for _ in range(RUNS_PER_ROUND // BLOCK):
                    for side in sides:
                        if side == "ours":
                            times, cpus = await ours.run(BLOCK)
                        else:
                            times, cpus = theirs.run(BLOCK, side)
                        wall[side] += times
                        used[side] += cpus
                for side in sides:
                    medians[side].append(statistics.median(wall[side]))
                    p95[side].append(percentile(wall[side], 0.95))
                    cpu[side].append(statistics.median(used[side]))
        finally:
            theirs.close()
            await ours.close()
    if ours.sqlite != theirs.sqlite:
        raise RuntimeError(f"SQLite settings differ: ours {ours.sqlite}, LangGraph {theirs.sqlite}")
    figures = Figures(rounds)
    figures.note(
        "SQLite settings read back, both sides",
        f"journal_mode={ours.sqlite['journal_mode']}, synchronous={ours.sqlite['synchronous']}",
    )
    figures.note("LangGraph", ", ".join(f"{k} {v}" for k, v in theirs.versions.items()))
    figures.add("coze_lab: per node, median of the round", medians["ours"], "ms", 3)
    figures.add("LangGraph durability=sync: per node, median", medians["sync"], "ms", 3)
    figures.add("LangGraph durability=async: per node, median", medians["async"], "ms", 3)
    figures.add(
        "coze_lab / LangGraph sync, per round (target <= 0.35)",
        [o / s for o, s in zip(medians["ours"], medians["sync"], strict=True)],
    )
    figures.add(
        "coze_lab / LangGraph async, per round",
        [o / a for o, a in zip(medians["ours"], medians["async"], strict=True)],
    )
    figures.add("coze_lab: per node, p95 of the round", p95["ours"], "ms", 3)
    figures.add("LangGraph sync: per node, p95 of the round", p95["sync"], "ms", 3)
    figures.add("coze_lab: CPU per node (process time), median", cpu["ours"], "ms", 3)
    figures.add("LangGraph sync: CPU per node (process time), median", cpu["sync"], "ms", 3)
    figures.add("LangGraph async: CPU per node (process time), median", cpu["async"], "ms", 3)
    figures.add(
        "coze_lab / LangGraph sync, CPU per node",
        [o / s for o, s in zip(cpu["ours"], cpu["sync"], strict=True)],
    )
    figures.print()


async def api(rounds: int) -> None:
    banner(
        "3-node workflow runs through /v1/workflow/run, one coze-lab serve process",
        f"throughput with {CONCURRENCY} concurrent clients (load generator on the same "
        "cores) and the server's own CPU per run (/proc process time), same server, "
        f"{API_RUNS} runs per round",
    )
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        url = sqlite_url(data / "coze_lab.db")
        path = Path(tmp) / "three.json"
        path.write_text(json.dumps(chain(3).to_dict()))
        args = ["--data-dir", str(data), "--database-url", url]
        wid = run_cli(
            *args, "workflow", "import", str(path), "--user", "bench", "--publish"
        ).stdout.split()[-1]
        token = run_cli(*args, "pat", "create", "--user", "bench", "--name", "b").stdout.split()[-1]
        server = ServerProcess(data, url).start()
        assert server.proc is not None
        pid = server.proc.pid
        try:
            headers = {"Authorization": f"Bearer {token}"}
            body = {"workflow_id": wid, "parameters": {"value": "x"}}
            limits = httpx.Limits(max_connections=CONCURRENCY)
            async with httpx.AsyncClient(
                base_url=server.url, headers=headers, timeout=60, limits=limits
            ) as client:
                for _ in range(50):  # warm-up
                    (await client.post("/v1/workflow/run", json=body)).raise_for_status()
                rates, server_ms, client_ms, failed = [], [], [], 0
                for _ in range(rounds):
                    left = API_RUNS
                    failures = 0

                    async def worker() -> None:
                        nonlocal left, failures
                        while left > 0:
                            left -= 1
                            reply = (await client.post("/v1/workflow/run", json=body)).json()
                            failures += reply["code"] != 0 or json.loads(reply["data"]) != {
                                "value": "x"
                            }

                    cpu, own = process_cpu(pid), time.process_time()
                    start = time.perf_counter()
                    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
                    elapsed = time.perf_counter() - start
                    server_ms.append((process_cpu(pid) - cpu) / API_RUNS * 1000)
                    client_ms.append((time.process_time() - own) / API_RUNS * 1000)
                    rates.append(API_RUNS / elapsed)
                    failed += failures
        finally:
            server.stop()
    figures = Figures(rounds)
    figures.add("runs/s (target >= 250)", rates, "", 0)
    figures.add("server CPU per run (target <= 3 ms)", server_ms, "ms")
    figures.add(
        "server capacity = 1000 / CPU ms per run", [1000 / m for m in server_ms], "runs/s", 0
    )
    figures.add("load generator's CPU per run (this process)", client_ms, "ms")
    figures.note("failed runs", str(failed))
    figures.print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--only", choices=["nodes", "api"])
    options = parser.parse_args()
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    if options.only in (None, "nodes"):
        asyncio.run(per_node(options.rounds or max(ROUNDS, NODE_ROUNDS)))
    if options.only in (None, "api"):
        if options.only is None:
            print()
        asyncio.run(api(options.rounds or ROUNDS))


if __name__ == "__main__":
    main()
