"""Workflow engine figures, measured in one run on this machine.

1. Overhead per node of a 50-node pass-through workflow with durable per-node commits on
   SQLite, against LangGraph on the same graph with its SqliteSaver checkpointer.
2. Executions per second of a 3-node workflow through ``/v1/workflow/run`` on one
   ``coze-lab serve`` process.

    python bench/engine.py            # (make bench) prints a table of figures
"""

from __future__ import annotations

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

from coze_lab.core.identity import IdentityService  # noqa: E402
from coze_lab.core.workflows import Edge, InputSpec, NodeSpec, WorkflowSpec  # noqa: E402
from coze_lab.core.workflows.engine import Engine  # noqa: E402
from coze_lab.core.workflows.validate import validate  # noqa: E402
from coze_lab.store import Database, sqlite_url  # noqa: E402
from tests.support import ServerProcess, run_cli  # noqa: E402

NODES = 50
RUNS = 30
LANGGRAPH_VENV = ROOT / ".cache" / "bench-langgraph"


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


async def ours(nodes: int, runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(sqlite_url(Path(tmp) / "bench.db"))
        db.upgrade()
        user = IdentityService(db).ensure_user("bench")
        engine = Engine(db, code_runner=lambda: None)
        spec = chain(nodes)
        await engine.wait(await engine.start(user.id, spec, {"value": "x"}))  # warm-up
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            info = await engine.wait(await engine.start(user.id, spec, {"value": "x"}))
            times.append(time.perf_counter() - start)
            assert info.status == "succeeded" and len(info.nodes) == nodes
        await engine.close()
        db.dispose()
    per_node = [t / nodes * 1000 for t in times]
    return {
        "median_ms_per_node": statistics.median(per_node),
        "p95_ms_per_node": sorted(per_node)[int(len(per_node) * 0.95) - 1],
    }


def langgraph(nodes: int, runs: int) -> dict[str, float]:
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
    out = subprocess.run(
        [str(python), str(ROOT / "bench" / "langgraph_baseline.py"), str(nodes), str(runs)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


async def throughput(total: int = 1000, concurrency: int = 16) -> dict[str, float]:
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
        try:
            headers = {"Authorization": f"Bearer {token}"}
            body = {"workflow_id": wid, "parameters": {"value": "x"}}
            async with httpx.AsyncClient(
                base_url=server.url, headers=headers, timeout=60
            ) as client:
                for _ in range(20):  # warm-up
                    (await client.post("/v1/workflow/run", json=body)).raise_for_status()
                queue: asyncio.Queue[int] = asyncio.Queue()
                for i in range(total):
                    queue.put_nowait(i)
                failures = 0

                async def worker() -> None:
                    nonlocal failures
                    while not queue.empty():
                        queue.get_nowait()
                        reply = (await client.post("/v1/workflow/run", json=body)).json()
                        failures += reply["code"] != 0 or json.loads(reply["data"]) != {
                            "value": "x"
                        }

                start = time.perf_counter()
                await asyncio.gather(*(worker() for _ in range(concurrency)))
                elapsed = time.perf_counter() - start
        finally:
            server.stop()
    return {
        "runs_per_s": total / elapsed,
        "total": total,
        "concurrency": concurrency,
        "failures": failures,
    }


def main() -> None:
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    mine = asyncio.run(ours(NODES, RUNS))
    theirs = langgraph(NODES, RUNS)
    rate = asyncio.run(throughput())
    ratio = mine["median_ms_per_node"] / theirs["median_ms_per_node"]
    rows = [
        (
            "coze_lab: overhead per node, median / p95 (50 nodes, durable commits, SQLite)",
            f"{mine['median_ms_per_node']:.3f} / {mine['p95_ms_per_node']:.3f} ms",
        ),
        (
            "LangGraph + SqliteSaver: overhead per node, median / p95",
            f"{theirs['median_ms_per_node']:.3f} / {theirs['p95_ms_per_node']:.3f} ms",
        ),
        ("coze_lab / LangGraph (target <= 0.5)", f"{ratio:.2f}"),
        (
            "3-node workflow via /v1/workflow/run, one server process (target >= 250/s)",
            f"{rate['runs_per_s']:.0f} runs/s ({rate['total']} runs, {rate['concurrency']} "
            f"concurrent, {rate['failures']} failed)",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
