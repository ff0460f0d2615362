"""Benchmark of the code sandbox, with fair baselines, on this machine, in one run.

    python bench/sandbox.py [--cache-dir DIR] [--rounds 3] [--runs 300] [--fresh 3]

Compares one trivial code node run three ways, p50 against p50:
* coze_lab's warm pool (the same owner's runs, one at a time);
* Coze's default runner: a fresh ``python3`` process per run;
* Coze's sandbox mode: a fresh ``deno run`` that loads Pyodide per run.
Then the price of isolating owners: the first run of a new owner (a spare interpreter is
bound to it), with no spare ready (a boot from the snapshot), runs/s with 10 owners
interleaved against one owner, and memory per warm interpreter.

Every figure is repeated (``--rounds``, default 3) and printed as min / median / max, next to
the machine's load average (other people's work shares the cores).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import banner, load_average, percentile, process_cpu, spread  # noqa: E402

from coze_lab.core.sandbox import SandboxSettings, WorkerPool, install_pyodide  # noqa: E402
from coze_lab.core.sandbox.install import deno_bin, deno_dir  # noqa: E402

TRIVIAL = "def main(args):\n    return {'y': args.params['x'] + 1}\n"

FRESH_DENO = """
import { loadPyodide } from "npm:pyodide@%s";
const pyodide = await loadPyodide();
pyodide.runPython(%s);
console.log(pyodide.runPython(
  "import json; json.dumps(main(type('A', (), {'params': {'x': 1}})()))"));
"""

# Coze's default runner: the code goes into a file, a fresh python3 runs it with the params
FRESH_PYTHON = """
import json, sys
%s
class Args:
    def __init__(self, params):
        self.params = params
print(json.dumps(main(Args(json.loads(sys.argv[1])))))
"""


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def row(label: str, values: list[float], digits: int = 2, unit: str = "", note: str = "") -> None:
    print(f"{label:<58} {spread(values, digits)}{unit}{note}")


def deno_cpu_s(pool: WorkerPool) -> float:
    """CPU seconds used so far by the pool's Deno processes (user + system)."""
    total = 0.0
    for slot in pool._slots:
        if slot.proc is not None:
            with contextlib.suppress(OSError):
                total += process_cpu(slot.proc.pid)
    return total


async def warm_round(pool: WorkerPool, runs: int) -> dict[str, float]:
    for i in range(30):  # let V8 tier up this owner's interpreter
        await pool.run(TRIVIAL, {"x": i}, owner="bench")
    lat = []
    cpu0 = deno_cpu_s(pool)
    for i in range(runs):
        t = time.perf_counter()
        res = await pool.run(TRIVIAL, {"x": i}, owner="bench")
        lat.append((time.perf_counter() - t) * 1000)
        assert res.output == {"y": i + 1}, res.to_dict()
    cpu = (deno_cpu_s(pool) - cpu0) / runs * 1000
    return {"p50": percentile(lat, 0.5), "p95": percentile(lat, 0.95), "cpu": cpu}


def fresh_python(n: int) -> list[float]:
    python3 = shutil.which("python3") or sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "node.py"
        script.write_text(FRESH_PYTHON % TRIVIAL)
        times = []
        for _ in range(n):
            t = time.perf_counter()
            out = subprocess.run(
                [python3, str(script), '{"x": 1}'], capture_output=True, text=True, check=True
            )
            times.append((time.perf_counter() - t) * 1000)
            assert json.loads(out.stdout) == {"y": 2}, out.stdout
    return times


def fresh_deno(settings: SandboxSettings, n: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "fresh.js"
        script.write_text(FRESH_DENO % (settings.pyodide_version, json.dumps(TRIVIAL)))
        env = {**os.environ, "DENO_DIR": str(deno_dir(settings)), "NO_COLOR": "1"}
        cmd = [
            deno_bin(), "run", "--no-config", "--no-lock", "--node-modules-dir=none",
            "--cached-only", f"--allow-read={settings.cache_dir},{tmp}", str(script),
        ]  # fmt: skip
        times = []
        for _ in range(n):
            t = time.perf_counter()
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            times.append((time.perf_counter() - t) * 1000)
            assert json.loads(out.stdout.strip()) == {"y": 2}, out.stdout
    return times


async def wait_for_spares(pool: WorkerPool, timeout: float = 60.0) -> None:
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        if all(sl.spare_ready for sl in pool._slots if sl.alive):
            return
        await asyncio.sleep(0.05)


async def new_owner_round(pool: WorkerPool, tag: str, n: int) -> tuple[list[float], list[float]]:
    """First runs of new owners: with a spare ready, and right after another new owner."""
    with_spare, without = [], []
    for i in range(n):
        await wait_for_spares(pool)
        t = time.perf_counter()
        res = await pool.run(TRIVIAL, {"x": 1}, owner=f"{tag}-spare-{i}")
        with_spare.append((time.perf_counter() - t) * 1000)
        assert res.output == {"y": 2}, res.to_dict()
    for i in range(n):
        await wait_for_spares(pool)
        owners = [f"{tag}-burst-{i}-{k}" for k in range(len(pool._slots) + 1)]
        for owner in owners[:-1]:  # use up every process's spare
            await pool.run(TRIVIAL, {"x": 1}, owner=owner)
        t = time.perf_counter()
        res = await pool.run(TRIVIAL, {"x": 1}, owner=owners[-1])
        without.append((time.perf_counter() - t) * 1000)
        assert res.output == {"y": 2}, res.to_dict()
    return with_spare, without


async def interleaved(pool: WorkerPool, owners: int, total: int, concurrency: int) -> float:
    """runs/s: ``total`` runs spread round-robin over ``owners``, ``concurrency`` at a time."""
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            res = await pool.run(TRIVIAL, {"x": i}, owner=f"tenant-{i % owners}")
            assert res.output == {"y": i + 1}, res.to_dict()

    for i in range(owners):  # everyone warm first (as far as seats allow)
        await pool.run(TRIVIAL, {"x": i}, owner=f"tenant-{i}")
    t = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(total)))
    return total / (time.perf_counter() - t)


async def isolation(settings: SandboxSettings, rounds: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {
        k: [] for k in ("spare", "boot", "one", "ten", "ten_seated", "rss1", "rss")
    }
    pool = WorkerPool(settings)
    await pool.start()
    try:
        for r in range(rounds):
            with_spare, without = await new_owner_round(pool, f"r{r}", 3)
            out["spare"].append(statistics.median(with_spare))
            out["boot"].append(statistics.median(without))
        for _r in range(rounds):
            out["one"].append(await interleaved(pool, 1, 400, 8))
            out["ten"].append(await interleaved(pool, 10, 400, 8))
    finally:
        await pool.close()
    # enough warm seats for the 10 owners (5 per process, and the memory limit to hold them)
    seated = WorkerPool(replace(settings, interpreters_per_worker=5, memory_limit_mb=1536))
    await seated.start()
    try:
        for _r in range(rounds):
            out["ten_seated"].append(await interleaved(seated, 10, 400, 8))
    finally:
        await seated.close()
    # memory: one process, its spare plus k warm owners
    solo = WorkerPool(replace(settings, pool_size=1, interpreters_per_worker=4))
    await solo.start()
    try:
        await wait_for_spares(solo)
        out["rss1"].append(max(solo.health()["rss_mb"]))
        for k in range(4):
            await solo.run(TRIVIAL, {"x": 1}, owner=f"mem-{k}")
            await wait_for_spares(solo)
        out["rss"].append(max(solo.health()["rss_mb"]))
    finally:
        await solo.close()
    return out


async def main_async(args: argparse.Namespace, settings: SandboxSettings) -> None:
    banner(
        "sandbox",
        "one trivial code node, p50 vs p50: coze_lab's warm pool (same owner) against a fresh "
        "python3 process per run (Coze's default runner) and a fresh `deno run` + Pyodide per "
        "run (Coze's sandbox mode); then the price of isolating owners",
    )
    print(
        f"Pyodide {settings.pyodide_version}; pool_size {settings.pool_size}, "
        f"interpreters_per_worker {settings.interpreters_per_worker}; {args.rounds} rounds"
    )
    pool = WorkerPool(settings)
    t0 = time.perf_counter()
    await pool.start()
    cold = (time.perf_counter() - t0) * 1000
    warm: list[dict[str, float]] = []
    py: list[float] = []
    deno: list[float] = []
    loads: list[float] = []
    try:
        for _ in range(args.rounds):  # the three sides interleaved, round by round
            loads.append(os.getloadavg()[0])
            warm.append(await warm_round(pool, args.runs))
            py.append(statistics.median(fresh_python(args.python)))
            if args.fresh:
                deno.append(statistics.median(fresh_deno(settings, args.fresh)))
        n_conc = 2000
        t = time.perf_counter()
        results = await asyncio.gather(
            *(pool.run(TRIVIAL, {"x": i}, owner="bench") for i in range(n_conc))
        )
        busy = n_conc / (time.perf_counter() - t)
        assert all(r.output == {"y": i + 1} for i, r in enumerate(results))
    finally:
        await pool.close()
    p50 = [w["p50"] for w in warm]
    print(f"\nfigures: min / median / max over the rounds ({load_average()})")
    row("load average during the rounds", loads)
    print(f"pool cold start ({settings.pool_size} processes from the snapshot): {cold:.0f} ms")
    row(f"warm run p50, ms ({args.runs} sequential runs per round)", p50)
    row("warm run p95, ms", [w["p95"] for w in warm])
    row("sandbox CPU per warm run, ms (Deno processes)", [w["cpu"] for w in warm])
    row(f"fresh python3 per run p50, ms ({args.python} per round)", py, 1)
    row("  ratio python3 p50 / warm p50", [a / b for a, b in zip(py, p50, strict=True)], 1, " x")
    if deno:
        row(f"fresh deno run + Pyodide p50, ms ({args.fresh} per round)", deno, 0)
        ratio = [a / b for a, b in zip(deno, p50, strict=True)]
        row("  ratio fresh deno p50 / warm p50", ratio, 0, " x")
    print(f"throughput, pool busy (2000 concurrent runs, one owner): {busy:.0f} runs/s ({load()})")
    target = statistics.median(p50)
    print(
        f"target warm p50 <= 5 ms: {'met' if target <= 5 else 'NOT met'} "
        f"(median {target:.2f} ms; load {statistics.median(loads):.2f})"
    )

    print("\nprice of isolating owners (a warm interpreter never serves two owners):")
    iso = await isolation(settings, args.rounds)
    row("first run of a new owner, spare ready, ms", iso["spare"])
    row("first run of a new owner, no spare ready, ms", iso["boot"], 0)
    row("runs/s, 1 owner, 8 concurrent", iso["one"], 0)
    seats = settings.pool_size * settings.interpreters_per_worker
    note = f"  ({seats} warm seats for 10 owners)"
    row("runs/s, 10 owners interleaved, 8 concurrent", iso["ten"], 0, note=note)
    note = "  (interpreters_per_worker=5, memory_limit_mb=1536)"
    row("runs/s, 10 owners interleaved, 10 warm seats", iso["ten_seated"], 0, note=note)
    per = (iso["rss"][0] - iso["rss1"][0]) / 4
    print(
        f"memory: one process with its spare {iso['rss1'][0]:.0f} MB, with 4 warm owners "
        f"{iso['rss'][0]:.0f} MB (~{per:.0f} MB per warm owner) ({load()})"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "sandbox"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--python", type=int, default=20, help="python3 processes per round")
    ap.add_argument("--fresh", type=int, default=3, help="fresh deno runs per round (0: skip)")
    ap.add_argument("--pool-size", type=int, default=2)
    args = ap.parse_args()
    settings = SandboxSettings(cache_dir=Path(args.cache_dir), pool_size=args.pool_size)
    install_pyodide(settings)
    asyncio.run(main_async(args, settings))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
