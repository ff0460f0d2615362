"""The code-node contract: main(args), async main, entry functions, JavaScript, typed errors."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from coze_lab.core.sandbox import (
    Runner,
    RunResult,
    SandboxError,
    SandboxSettings,
    WorkerPool,
    is_installed,
)

from .conftest import TRIVIAL, assert_serves, make_settings

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_seed_contract_main_args_params(pool: WorkerPool) -> None:
    code = "def main(args):\n    print('hello', args.params['name'])\n    return {'greeting': 'hi ' + args.params['name']}\n"
    res = await pool.run(code, {"name": "coze"})
    assert res.error is None
    assert res.output == {"greeting": "hi coze"}
    assert res.stdout == "hello coze\n"
    assert res.duration_ms > 0
    d = res.to_dict()
    assert set(d) == {"output", "stdout", "stderr", "error", "duration_ms"}
    assert json.loads(json.dumps(d)) == d


async def test_async_main_and_stderr(pool: WorkerPool) -> None:
    code = (
        "import asyncio, sys\n"
        "async def main(args):\n"
        "    await asyncio.sleep(0.01)\n"
        "    print('warn', file=sys.stderr)\n"
        "    return {'sum': sum(args.params['xs'])}\n"
    )
    res = await pool.run(code, {"xs": [1, 2, 3]})
    assert res.output == {"sum": 6}
    assert res.stderr == "warn\n"


async def test_entry_function_receives_keyword_params(pool: WorkerPool) -> None:
    code = "def clean(doc: str, upper: bool = False) -> dict:\n    d = doc.strip()\n    return {'doc': d.upper() if upper else d}\n"
    res = await pool.run(code, {"doc": "  x y  ", "upper": True}, entry="clean")
    assert res.output == {"doc": "X Y"}
    bad = await pool.run(code, {"nope": 1}, entry="clean")
    assert bad.error is not None and bad.error.type == "user_error"
    assert "TypeError" in bad.error.message and "nope" in bad.error.message


async def test_user_error_has_traceback_tail(pool: WorkerPool) -> None:
    code = "def helper(x):\n    return 1 / x\n\ndef main(args):\n    return {'v': helper(0)}\n"
    res = await pool.run(code, {})
    assert res.output is None
    assert res.error is not None and res.error.type == "user_error"
    assert "ZeroDivisionError" in res.error.message
    assert "helper" in res.error.message and "<code_node>" in res.error.message
    assert "<coze_runner>" not in res.error.message


@pytest.mark.parametrize(
    ("ret", "kind"),
    [
        ("[1, 2]", "invalid_result"),
        ("None", "invalid_result"),
        ("{'x': object()}", "invalid_result"),
        ("{'x': float('nan')}", "invalid_result"),
        ("{'x': {1, 2}}", "invalid_result"),
    ],
)
async def test_non_dict_or_non_json_results_are_typed_errors(
    pool: WorkerPool, ret: str, kind: str
) -> None:
    res = await pool.run(f"def main(args):\n    return {ret}\n", {})
    assert res.output is None
    assert res.error is not None and res.error.type == kind, res.to_dict()


async def test_missing_main_and_syntax_error(pool: WorkerPool) -> None:
    res = await pool.run("def other(args):\n    return {}\n", {})
    assert res.error is not None and res.error.type == "user_error"
    assert "main" in res.error.message
    res = await pool.run("def main(args)\n    return {}\n", {})
    assert res.error is not None and res.error.type == "user_error"
    assert "SyntaxError" in res.error.message


async def test_invalid_inputs_rejected_before_running(pool: WorkerPool) -> None:
    res = await pool.run(TRIVIAL, {"x": object()})
    assert res.error is not None and res.error.type == "invalid_input"
    res = await pool.run(TRIVIAL, {}, language="ruby")
    assert res.error is not None and res.error.type == "invalid_input"
    res = await pool.run(TRIVIAL, {}, entry="main; import os")
    assert res.error is not None and res.error.type == "invalid_input"


async def test_unicode_and_nested_values_round_trip(pool: WorkerPool) -> None:
    params = {"text": "你好, Coze ✓", "nested": {"a": [1, 2.5, None, True]}}
    res = await pool.run("def main(args):\n    return dict(args.params)\n", params)
    assert res.output == params


async def test_javascript_main_params(pool: WorkerPool) -> None:
    code = "async function main({params}) {\n  console.log('n is', params.n);\n  return {double: params.n * 2};\n}\n"
    res = await pool.run(code, {"n": 21}, language="javascript")
    assert res.error is None, res.to_dict()
    assert res.output == {"double": 42}
    assert res.stdout == "n is 21\n"


async def test_javascript_entry_and_errors(pool: WorkerPool) -> None:
    code = "function clean({doc}) { return {doc: doc.trim()}; }"
    res = await pool.run(code, {"doc": " a "}, language="javascript", entry="clean")
    assert res.output == {"doc": "a"}
    res = await pool.run("function main() { return [1]; }", {}, language="javascript")
    assert res.error is not None and res.error.type == "invalid_result"
    res = await pool.run("function main() { throw new Error('boom'); }", {}, language="javascript")
    assert res.error is not None and res.error.type == "user_error"
    assert "boom" in res.error.message
    res = await pool.run("function main() { return {b: 1n}; }", {}, language="javascript")
    assert res.error is not None and res.error.type == "invalid_result"


async def test_per_run_timeout_override(pool: WorkerPool) -> None:
    code = "import time\ndef main(args):\n    t = time.time()\n    while time.time() - t < 5:\n        pass\n    return {}\n"
    res = await pool.run(code, {}, timeout=0.3)
    assert res.error is not None and res.error.type == "timeout"
    assert res.duration_ms < 2500
    await assert_serves(pool)


async def test_health_reports_counts(pool: WorkerPool) -> None:
    before = pool.health()
    await pool.run(TRIVIAL, {"n": 1})
    h = pool.health()
    assert json.loads(json.dumps(h)) == h
    assert h["installed"] is True and h["started"] is True
    assert h["workers"] == 2 and h["busy"] == 0
    assert h["runs"] == before["runs"] + 1
    assert h["pyodide_version"] == pool.settings.pyodide_version
    assert isinstance(pool, Runner)


async def test_health_of_unstarted_pool_does_not_start(tmp_path: Path) -> None:
    p = WorkerPool(SandboxSettings(cache_dir=tmp_path / "none", auto_install=False))
    h = p.health()
    assert h["started"] is False and h["installed"] is False and h["workers"] == 0
    assert not (tmp_path / "none").exists()
    res = await p.run(TRIVIAL, {})
    assert res.error is not None and res.error.type == "not_installed"
    assert not is_installed(p.settings)


def _make_wheel(dirpath: Path) -> Path:
    whl = dirpath / "cozetiny-0.1-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("cozetiny/__init__.py", "def shout(s):\n    return s.upper() + '!'\n")
        z.writestr("cozetiny-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: cozetiny\nVersion: 0.1\n")
        z.writestr("cozetiny-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr("cozetiny-0.1.dist-info/RECORD", "")
    return whl


async def test_wheelhouse_and_unreachable_package_index(
    sandbox_cache: Path, tmp_path: Path
) -> None:
    _make_wheel(tmp_path)
    p = WorkerPool(
        make_settings(
            pool_size=1, wheelhouse=tmp_path, package_index_url="http://127.0.0.1:9/pyodide/"
        )
    )
    try:
        res = await p.run("import cozetiny\ndef main(args):\n    return {'v': cozetiny.shout('hi')}\n", {})
        assert res.output == {"v": "HI!"}, res.to_dict()
        res = await p.run("import numpy\ndef main(args):\n    return {}\n", {})
        assert res.error is not None and res.error.type == "package_unavailable"
        assert res.error.message.startswith(
            "numpy is not available: no Pyodide package index is reachable (http://127.0.0.1:9/"
        )
        assert "Set sandbox_package_index_url" in res.error.message
        # the wheel is still importable on the next run (module forgotten, files kept)
        res = await p.run("import cozetiny\ndef main(args):\n    return {'v': cozetiny.shout('a')}\n", {})
        assert res.output == {"v": "A!"}
    finally:
        await p.close()


async def test_run_result_and_error_types() -> None:
    r = RunResult.failure("timeout", "too slow", 12.0)
    assert r.to_dict() == {
        "output": None, "stdout": "", "stderr": "",
        "error": {"type": "timeout", "message": "too slow"}, "duration_ms": 12.0,
    }
    assert SandboxError("x", "y") == SandboxError("x", "y")
    assert isinstance(SandboxError("x", "y"), Exception)


async def test_relative_cache_dir_is_resolved(
    sandbox_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(sandbox_cache.parent)
    p = WorkerPool(make_settings(cache_dir=Path(sandbox_cache.name), pool_size=1))
    assert p.settings.cache_dir == sandbox_cache.resolve()
    try:
        res = await p.run(TRIVIAL, {"n": 3})
        assert res.output == {"ok": True, "n": 3}, res.to_dict()
    finally:
        await p.close()
