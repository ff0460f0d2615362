"""Real Deno + Pyodide fixtures: Pyodide is installed once into a git-ignored cache."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from coze_lab.core.sandbox import SandboxSettings, WorkerPool, install_pyodide

REPO = Path(__file__).resolve().parents[3]
CACHE = Path(os.environ.get("COZE_LAB_TEST_SANDBOX_CACHE", REPO / ".cache" / "sandbox"))

TRIVIAL = "def main(args):\n    return {'ok': True, 'n': args.params.get('n')}\n"


def make_settings(**kw: object) -> SandboxSettings:
    base: dict[str, object] = {
        "cache_dir": CACHE,
        "pool_size": 2,
        "timeout_s": 3.0,
        "grace_s": 0.5,
        "memory_limit_mb": 900,
        "max_output_bytes": 20_000,
        "max_result_bytes": 100_000,
    }
    base.update(kw)
    return SandboxSettings(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def sandbox_cache() -> Path:
    install_pyodide(make_settings())
    return CACHE


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def pool(sandbox_cache: Path) -> AsyncIterator[WorkerPool]:
    p = WorkerPool(make_settings())
    await p.start()
    yield p
    await p.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def solo(sandbox_cache: Path) -> AsyncIterator[WorkerPool]:
    """A one-process pool: consecutive runs hit the same interpreter (state-leak probes)."""
    p = WorkerPool(make_settings(pool_size=1))
    await p.start()
    yield p
    await p.close()


async def assert_serves(pool: WorkerPool, n: int = 7) -> None:
    """The pool still answers a normal run correctly (on every worker)."""
    for _ in range(max(2, pool.settings.pool_size)):
        res = await pool.run(TRIVIAL, {"n": n})
        assert res.error is None, res.to_dict()
        assert res.output == {"ok": True, "n": n}
