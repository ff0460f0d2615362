"""Benchmark of the code sandbox; prints figures measured in one run on this machine.

    python bench/sandbox.py [--cache-dir DIR] [--runs 500] [--fresh 3]

* pool cold start: ``WorkerPool.start()`` with Pyodide already cached (snapshot boot);
* warm latency p50/p95 of a trivial code node, one run at a time;
* throughput with the pool busy (many concurrent runs);
* the same code the Coze way: a fresh ``deno run`` that loads Pyodide per execution.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coze_lab.core.sandbox import SandboxSettings, WorkerPool, install_pyodide  # noqa: E402
from coze_lab.core.sandbox.install import deno_bin, deno_dir  # noqa: E402

TRIVIAL = "def main(args):\n    return {'y': args.params['x'] + 1}\n"

FRESH_SCRIPT = """
import { loadPyodide } from "npm:pyodide@%s";
const pyodide = await loadPyodide();
const code = %s;
pyodide.runPython(code);
const out = pyodide.runPython(
  "import json; json.dumps(main(type('A', (), {'params': {'x': 1}})()))");
console.log(out);
"""


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


async def bench_pool(settings: SandboxSettings, runs: int) -> dict[str, float]:
    pool = WorkerPool(settings)
    t0 = time.perf_counter()
    await pool.start()
    cold = (time.perf_counter() - t0) * 1000
    try:
        for i in range(50):  # let V8 tier up the interpreter
            await pool.run(TRIVIAL, {"x": i})
        lat = []
        for i in range(runs):
            t = time.perf_counter()
            res = await pool.run(TRIVIAL, {"x": i})
            lat.append((time.perf_counter() - t) * 1000)
            assert res.output == {"y": i + 1}, res.to_dict()
        n_conc = 2000
        t = time.perf_counter()
        results = await asyncio.gather(*(pool.run(TRIVIAL, {"x": i}) for i in range(n_conc)))
        busy_s = time.perf_counter() - t
        assert all(r.output == {"y": i + 1} for i, r in enumerate(results))
        health = pool.health()
    finally:
        await pool.close()
    return {
        "cold_ms": cold,
        "p50": pct(lat, 0.5),
        "p95": pct(lat, 0.95),
        "mean": statistics.fmean(lat),
        "throughput": n_conc / busy_s,
        "rss": max(health["rss_mb"] or [0.0]),
        "restarts": health["restarts"],
    }


def bench_fresh(settings: SandboxSettings, n: int) -> list[float]:
    """Coze's way: ``deno run`` + loadPyodide + run, once per execution."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "fresh.js"
        script.write_text(FRESH_SCRIPT % (settings.pyodide_version, json.dumps(TRIVIAL)))
        env = {**os.environ, "DENO_DIR": str(deno_dir(settings)), "NO_COLOR": "1"}
        cmd = [
            deno_bin(),
            "run",
            "--no-config",
            "--no-lock",
            "--node-modules-dir=none",
            "--cached-only",
            f"--allow-read={settings.cache_dir},{tmp}",
            str(script),
        ]
        times = []
        for _ in range(n):
            t = time.perf_counter()
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            times.append((time.perf_counter() - t) * 1000)
            assert json.loads(out.stdout.strip()) == {"y": 2}, out.stdout
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cache-dir", default=str(ROOT / ".cache" / "sandbox"))
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--fresh", type=int, default=3)
    ap.add_argument("--pool-size", type=int, default=2)
    args = ap.parse_args()
    settings = SandboxSettings(cache_dir=Path(args.cache_dir), pool_size=args.pool_size)
    install_pyodide(settings)
    print(
        f"machine: {os.cpu_count()} cores; Pyodide {settings.pyodide_version}; "
        f"pool_size {settings.pool_size}"
    )
    r = asyncio.run(bench_pool(settings, args.runs))
    fresh = bench_fresh(settings, args.fresh)
    fresh_mean = statistics.fmean(fresh)
    print(f"pool cold start ({settings.pool_size} workers, snapshot): {r['cold_ms']:.0f} ms")
    print(
        f"warm run latency ({args.runs} sequential runs): p50 {r['p50']:.2f} ms, "
        f"p95 {r['p95']:.2f} ms, mean {r['mean']:.2f} ms"
    )
    print(f"throughput with the pool busy (2000 concurrent runs): {r['throughput']:.0f} runs/s")
    print(f"worker RSS: {r['rss']:.0f} MB; restarts during the bench: {r['restarts']}")
    print(
        f"fresh `deno run` + loadPyodide per execution (Coze way, n={args.fresh}): "
        f"mean {fresh_mean:.0f} ms (min {min(fresh):.0f}, max {max(fresh):.0f})"
    )
    ratio = fresh_mean / r["p50"]
    print(
        f"ratio fresh-process / warm p50: {ratio:.0f}x "
        f"(target: p50 <= 10 ms: {'yes' if r['p50'] <= 10 else 'NO'}, "
        f">= 300x: {'yes' if ratio >= 300 else 'NO'})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
