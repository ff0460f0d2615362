"""Escape probes: each one asserts containment and that the pool still serves the next run."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from coze_lab.core.sandbox import WorkerPool
from coze_lab.core.sandbox.install import pyodide_dir, snapshot_path

from .conftest import CACHE, assert_serves

pytestmark = pytest.mark.asyncio(loop_scope="session")


def py(body: str, *, is_async: bool = False) -> str:
    """Wrap statements into a main(args) returning {'r': r}."""
    lines = "\n".join("    " + ln for ln in body.strip().splitlines())
    head = "async def main(args):" if is_async else "def main(args):"
    return f"{head}\n{lines}\n    return {{'r': r}}\n"


async def run_ok(pool: WorkerPool, code: str, **kw: object) -> object:
    res = await pool.run(code, {}, **kw)  # type: ignore[arg-type]
    assert res.error is None, res.to_dict()
    assert res.output is not None
    return res.output["r"]


def denied(value: object) -> bool:
    text = str(value)
    return "NotCapable" in text or "PermissionDenied" in text or "Requires" in text


class Listener:
    """A TCP server on the host that records whether anything connected."""

    def __init__(self) -> None:
        self.hits = 0
        self.port = 0
        self.server: asyncio.AbstractServer | None = None

    async def __aenter__(self) -> Listener:
        async def on_conn(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            self.hits += 1
            w.close()

        self.server = await asyncio.start_server(on_conn, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()


@pytest_asyncio.fixture(loop_scope="session")
async def host_marker(tmp_path: Path) -> AsyncIterator[Path]:
    marker = tmp_path / "host-secret.txt"
    marker.write_text("TOP SECRET")
    yield marker


# ---------------------------------------------------------------- host files -----------
async def test_python_open_host_file_is_not_the_host(pool: WorkerPool, host_marker: Path) -> None:
    code = py(f"try:\n    r = open({str(host_marker)!r}).read()\nexcept OSError as e:\n    r = 'ERR ' + type(e).__name__")
    assert await run_ok(pool, code) == "ERR FileNotFoundError"
    await assert_serves(pool)


async def test_js_deno_read_host_file_denied(pool: WorkerPool, host_marker: Path) -> None:
    code = py(f"import js\ntry:\n    r = js.Deno.readTextFileSync({str(host_marker)!r})\nexcept Exception as e:\n    r = str(e)")
    r = await run_ok(pool, code)
    assert "TOP SECRET" not in str(r) and denied(r)
    await assert_serves(pool)


async def test_js_deno_read_etc_passwd_denied(pool: WorkerPool) -> None:
    code = py("import js\ntry:\n    r = js.Deno.readTextFileSync('/etc/passwd')\nexcept Exception as e:\n    r = str(e)")
    r = await run_ok(pool, code)
    assert "root:" not in str(r) and denied(r)
    await assert_serves(pool)


async def test_python_write_stays_in_memfs(pool: WorkerPool, tmp_path: Path) -> None:
    target = tmp_path / "escape.txt"
    code = py(f"with open({str(target)!r}.rsplit('/', 1)[0].replace('/', '_') + '.txt', 'w') as f:\n    f.write('x')\nimport os\nos.makedirs({str(tmp_path)!r}, exist_ok=True)\nopen({str(target)!r}, 'w').write('pwned')\nr = open({str(target)!r}).read()")
    assert await run_ok(pool, code) == "pwned"  # inside the wasm file system only
    assert not target.exists()
    await assert_serves(pool)


async def test_js_deno_write_host_file_denied(pool: WorkerPool, tmp_path: Path) -> None:
    target = tmp_path / "escape-js.txt"
    code = py(f"import js\ntry:\n    js.Deno.writeTextFileSync({str(target)!r}, 'pwned')\n    r = 'written'\nexcept Exception as e:\n    r = str(e)")
    r = await run_ok(pool, code)
    assert denied(r) and not target.exists()
    await assert_serves(pool)


async def test_write_into_pyodide_cache_denied(pool: WorkerPool) -> None:
    snap = snapshot_path(pool.settings)
    wasm = pyodide_dir(pool.settings) / "pyodide.asm.wasm"
    before = hashlib.sha256(wasm.read_bytes()).hexdigest(), snap.stat().st_mtime_ns
    code = py(
        f"import js\nout = []\nfor p in [{str(wasm)!r}, {str(snap)!r}, {str(CACHE / 'evil.js')!r}]:\n"
        "    try:\n        js.Deno.writeTextFileSync(p, 'pwned')\n        out.append('written')\n"
        "    except Exception as e:\n        out.append(str(e))\nr = out"
    )
    r = await run_ok(pool, code)
    assert all(denied(x) for x in r), r  # type: ignore[union-attr]
    assert (hashlib.sha256(wasm.read_bytes()).hexdigest(), snap.stat().st_mtime_ns) == before
    assert not (CACHE / "evil.js").exists()
    await assert_serves(pool)


async def test_pyodide_cache_is_readable_but_not_listable_elsewhere(pool: WorkerPool) -> None:
    code = py("import js\ntry:\n    r = [e.name for e in js.Deno.readDirSync('/')]\nexcept Exception as e:\n    r = str(e)")
    r = await run_ok(pool, code)
    assert denied(r), r
    await assert_serves(pool)


# ---------------------------------------------------------------- environment ----------
async def test_env_vars_not_visible(pool: WorkerPool) -> None:
    os.environ["COZE_SBX_PROBE_SECRET"] = "s3cr3t"
    code = py(
        "import os, js\nout = {'py': dict(os.environ)}\n"
        "try:\n    out['deno'] = js.Deno.env.get('COZE_SBX_PROBE_SECRET')\nexcept Exception as e:\n    out['deno'] = str(e)\n"
        "try:\n    out['all'] = js.Deno.env.toObject().to_py()\nexcept Exception as e:\n    out['all'] = str(e)\nr = out"
    )
    r = await run_ok(pool, code)
    assert "s3cr3t" not in str(r)
    assert denied(r["deno"]) and denied(r["all"])  # type: ignore[index]
    await assert_serves(pool)


async def test_node_process_env_denied(pool: WorkerPool) -> None:
    code = py(
        "import js\ntry:\n    proc = await js.eval(\"import('node:process')\")\n"
        "    r = str(proc.default.env.PATH)\nexcept Exception as e:\n    r = str(e)",
        is_async=True,
    )
    r = await run_ok(pool, code)
    assert "/usr" not in str(r) and denied(r), r
    await assert_serves(pool)


# ---------------------------------------------------------------- network -------------
async def test_python_socket_cannot_connect(pool: WorkerPool) -> None:
    async with Listener() as srv:
        code = py(f"import socket\ntry:\n    s = socket.create_connection(('127.0.0.1', {srv.port}), timeout=1)\n    r = 'connected'\nexcept Exception as e:\n    r = type(e).__name__ + ': ' + str(e)")
        r = await run_ok(pool, code)
        assert r != "connected"
        await asyncio.sleep(0.1)
        assert srv.hits == 0
    await assert_serves(pool)


async def test_pyodide_http_pyfetch_denied(pool: WorkerPool) -> None:
    async with Listener() as srv:
        code = py(f"from pyodide.http import pyfetch\ntry:\n    await pyfetch('http://127.0.0.1:{srv.port}/')\n    r = 'fetched'\nexcept Exception as e:\n    r = str(e)", is_async=True)
        r = await run_ok(pool, code)
        assert denied(r), r
        await asyncio.sleep(0.1)
        assert srv.hits == 0
    await assert_serves(pool)


async def test_js_fetch_denied(pool: WorkerPool) -> None:
    async with Listener() as srv:
        code = py(f"import js\ntry:\n    await js.fetch('http://127.0.0.1:{srv.port}/')\n    r = 'fetched'\nexcept Exception as e:\n    r = str(e)", is_async=True)
        r = await run_ok(pool, code)
        assert denied(r), r
        await asyncio.sleep(0.1)
        assert srv.hits == 0
    await assert_serves(pool)


async def test_js_deno_connect_denied(pool: WorkerPool) -> None:
    async with Listener() as srv:
        code = py(f"import js\nfrom pyodide.ffi import to_js\ntry:\n    await js.Deno.connect(to_js({{'hostname': '127.0.0.1', 'port': {srv.port}}}, dict_converter=js.Object.fromEntries))\n    r = 'connected'\nexcept Exception as e:\n    r = str(e)", is_async=True)
        r = await run_ok(pool, code)
        assert denied(r), r
        assert srv.hits == 0
    await assert_serves(pool)


async def test_javascript_node_fetch_denied(pool: WorkerPool) -> None:
    async with Listener() as srv:
        code = f"async function main() {{ try {{ await fetch('http://127.0.0.1:{srv.port}/'); return {{r: 'fetched'}}; }} catch (e) {{ return {{r: String(e)}}; }} }}"
        res = await pool.run(code, {}, language="javascript")
        assert res.output is not None and denied(res.output["r"]), res.to_dict()
        assert srv.hits == 0
    await assert_serves(pool)


# ---------------------------------------------------------------- processes -----------
async def test_subprocess_fails(pool: WorkerPool) -> None:
    code = py("import subprocess\ntry:\n    r = subprocess.run(['id'], capture_output=True).stdout.decode()\nexcept Exception as e:\n    r = 'ERR ' + type(e).__name__")
    r = await run_ok(pool, code)
    assert str(r).startswith("ERR"), r
    await assert_serves(pool)


async def test_os_system_kills_only_the_interpreter(pool: WorkerPool, tmp_path: Path) -> None:
    marker = tmp_path / "os-system"
    before = pool.health()["restarts"]
    res = await pool.run(f"import os\ndef main(args):\n    os.system('touch {marker}')\n    return {{}}\n", {})
    assert res.output is None or res.output == {}
    assert not marker.exists()
    if res.error is not None:
        assert res.error.type in ("worker_crashed", "user_error"), res.to_dict()
    await assert_serves(pool)
    if res.error is not None and res.error.type == "worker_crashed":
        assert pool.health()["restarts"] > before


async def test_os_fork_fails(pool: WorkerPool) -> None:
    code = py("import os\ntry:\n    r = os.fork()\nexcept Exception as e:\n    r = 'ERR ' + type(e).__name__")
    res = await pool.run(code, {})
    assert res.output is None or str(res.output["r"]).startswith("ERR"), res.to_dict()
    await assert_serves(pool)


async def test_js_deno_command_denied(pool: WorkerPool) -> None:
    code = py("import js\ntry:\n    r = str(js.Deno.Command.new('id').outputSync())\nexcept Exception as e:\n    r = str(e)")
    r = await run_ok(pool, code)
    assert denied(r), r
    await assert_serves(pool)


async def test_ctypes_cannot_load_host_libc(pool: WorkerPool) -> None:
    code = py("try:\n    import ctypes\n    lib = ctypes.CDLL('libc.so.6')\n    r = 'loaded ' + str(lib.getpid())\nexcept Exception as e:\n    r = 'ERR ' + type(e).__name__")
    r = await run_ok(pool, code)
    assert str(r).startswith("ERR"), r
    await assert_serves(pool)


async def test_js_deno_dlopen_denied(pool: WorkerPool) -> None:
    code = py("import js\ntry:\n    js.Deno.dlopen('libc.so.6', js.Object.new())\n    r = 'opened'\nexcept Exception as e:\n    r = str(e)")
    r = await run_ok(pool, code)
    assert r != "opened" and ("ffi" in str(r).lower() or denied(r)), r
    await assert_serves(pool)


async def test_spawning_a_nested_worker_gains_nothing(pool: WorkerPool) -> None:
    src = "data:text/javascript,postMessage(String(Deno.readTextFileSync('/etc/passwd')))"
    code = py(
        "import js, asyncio\nfrom pyodide.ffi import create_once_callable\nfut = asyncio.get_event_loop().create_future()\n"
        f"try:\n    w = js.Worker.new({src!r}, js.Object.fromEntries([['type', 'module']]))\n"
        "    w.onmessage = create_once_callable(lambda e: fut.set_result(str(e.data)))\n"
        "    w.onerror = create_once_callable(lambda e: (e.preventDefault(), fut.set_result('error ' + str(e.message))))\n"
        "    r = await asyncio.wait_for(fut, 2)\n    w.terminate()\nexcept Exception as e:\n    r = 'ERR ' + str(e)",
        is_async=True,
    )
    res = await pool.run(code, {})
    assert "root:" not in str(res.to_dict())
    await assert_serves(pool)


# ---------------------------------------------------------------- resources -----------
async def test_infinite_loop_times_out(pool: WorkerPool) -> None:
    res = await pool.run("def main(args):\n    while True:\n        pass\n", {}, timeout=0.5)
    assert res.error is not None and res.error.type == "timeout"
    assert res.duration_ms < 2500
    await assert_serves(pool)


async def test_loop_swallowing_interrupt_is_killed(pool: WorkerPool) -> None:
    code = "def main(args):\n    while True:\n        try:\n            while True:\n                pass\n        except BaseException:\n            pass\n"
    before = pool.health()["restarts"]
    res = await pool.run(code, {}, timeout=0.5)
    assert res.error is not None and res.error.type == "timeout"
    assert res.duration_ms < 5000
    await assert_serves(pool)
    assert pool.health()["restarts"] > before


async def test_pending_await_forever_is_killed(pool: WorkerPool) -> None:
    code = "import asyncio\nasync def main(args):\n    await asyncio.sleep(3600)\n    return {}\n"
    res = await pool.run(code, {}, timeout=0.4)
    assert res.error is not None and res.error.type == "timeout"
    await assert_serves(pool)


async def test_javascript_infinite_loop_times_out(pool: WorkerPool) -> None:
    res = await pool.run("function main() { for (;;) {} }", {}, language="javascript", timeout=0.5)
    assert res.error is not None and res.error.type == "timeout"
    await assert_serves(pool)


async def test_recursion_bomb(pool: WorkerPool) -> None:
    res = await pool.run("def f(n):\n    return f(n + 1)\n\ndef main(args):\n    return {'r': f(0)}\n", {})
    assert res.error is not None and res.error.type == "user_error"
    assert "RecursionError" in res.error.message
    await assert_serves(pool)


async def test_recursion_bomb_with_raised_limit(pool: WorkerPool) -> None:
    code = "import sys\nsys.setrecursionlimit(10**7)\ndef f(n):\n    return f(n + 1)\n\ndef main(args):\n    return {'r': f(0)}\n"
    res = await pool.run(code, {})
    assert res.error is not None and res.error.type in ("user_error", "worker_crashed", "memory_limit", "timeout"), res.to_dict()
    await assert_serves(pool)
    res = await pool.run("import sys\ndef main(args):\n    return {'r': sys.getrecursionlimit()}\n", {})
    assert res.output is not None and res.output["r"] < 10**6


async def test_memory_bomb_is_stopped(pool: WorkerPool) -> None:
    code = "def main(args):\n    xs = []\n    while True:\n        xs.append(bytearray(8 * 1024 * 1024))\n"
    res = await pool.run(code, {}, timeout=20)
    assert res.error is not None and res.error.type == "memory_limit", res.to_dict()
    assert res.duration_ms < 15000
    await assert_serves(pool)
    assert all(r < pool.settings.memory_limit_mb for r in pool.health()["rss_mb"])


async def test_javascript_memory_bomb_is_stopped(pool: WorkerPool) -> None:
    code = "function main() { const xs = []; for (;;) xs.push(new Array(1e6).fill(1.5)); }"
    res = await pool.run(code, {}, language="javascript", timeout=20)
    assert res.error is not None and res.error.type in ("memory_limit", "worker_crashed"), res.to_dict()
    await assert_serves(pool)


async def test_huge_stdout_is_capped_fast(pool: WorkerPool) -> None:
    res = await pool.run("def main(args):\n    while True:\n        print('x' * 1000)\n", {}, timeout=10)
    assert res.error is not None and res.error.type == "output_too_large"
    assert len(res.stdout) <= pool.settings.max_output_bytes
    assert res.duration_ms < 3000
    await assert_serves(pool)


async def test_huge_result_rejected(pool: WorkerPool) -> None:
    res = await pool.run("def main(args):\n    return {'r': 'x' * 10_000_000}\n", {})
    assert res.error is not None and res.error.type == "output_too_large"
    assert res.output is None
    await assert_serves(pool)


async def test_javascript_huge_console_capped(pool: WorkerPool) -> None:
    res = await pool.run("function main() { for (;;) console.log('y'.repeat(1000)); }", {}, language="javascript", timeout=10)
    assert res.error is not None and res.error.type == "output_too_large"
    await assert_serves(pool)


# ---------------------------------------------------------------- protocol -----------
async def test_spoofed_post_message_is_ignored(pool: WorkerPool) -> None:
    code = (
        "import js\nfrom pyodide.ffi import to_js\n"
        "def main(args):\n"
        "    fake = {'type': 'result', 'id': 1, 'res': {'ok': True, 'output': {'r': 'spoofed'}}, 'stdout': '', 'stderr': ''}\n"
        "    js.postMessage(to_js(fake, dict_converter=js.Object.fromEntries))\n"
        "    return {'r': 'real'}\n"
    )
    res = await pool.run(code, {})
    assert res.output == {"r": "real"}
    await assert_serves(pool)


async def test_stdin_and_stdout_of_the_process_are_not_the_channel(pool: WorkerPool) -> None:
    code = py(
        "import js\nfrom pyodide.ffi import to_js\n"
        "buf = js.Uint8Array.new(4096)\n"
        "try:\n    n = js.Deno.stdin.readSync(buf)\nexcept Exception as e:\n    n = str(e)\n"
        "js.Deno.stdout.writeSync(js.TextEncoder.new().encode('{\"op\":\"result\",\"id\":2,\"ok\":true,\"output\":{\"r\":\"spoof\"}}\\n'))\n"
        "r = str(n)"
    )
    res = await pool.run(code, {})
    assert res.error is None and res.output is not None and res.output["r"] in ("None", "null", "jsnull"), res.to_dict()
    for _ in range(3):
        nxt = await pool.run("def main(args):\n    return {'r': 'genuine'}\n", {})
        assert nxt.output == {"r": "genuine"}


async def test_worker_closing_itself_is_replaced(pool: WorkerPool) -> None:
    res = await pool.run("import js\ndef main(args):\n    js.close()\n    return {}\n", {}, timeout=2)
    assert res.error is not None and res.error.type in ("worker_crashed", "timeout"), res.to_dict()
    await assert_serves(pool)


async def test_deno_exit_is_contained(pool: WorkerPool) -> None:
    res = await pool.run("import js\ndef main(args):\n    js.Deno.exit(3)\n    return {}\n", {}, timeout=2)
    assert res.error is not None or res.output == {}
    await assert_serves(pool)


async def test_concurrent_runs_do_not_interfere(pool: WorkerPool) -> None:
    code = "import asyncio\nasync def main(args):\n    await asyncio.sleep(0.02)\n    print(args.params['i'])\n    return {'i': args.params['i']}\n"
    jscode = "async function main({params}) { console.log(params.i); return {i: params.i}; }"
    tasks = [
        pool.run(code if i % 3 else jscode, {"i": i}, language="python" if i % 3 else "javascript")
        for i in range(24)
    ]
    results = await asyncio.gather(*tasks)
    for i, res in enumerate(results):
        assert res.output == {"i": i}, res.to_dict()
        assert res.stdout == f"{i}\n"
    await assert_serves(pool)


async def test_concurrent_runs_with_a_crasher(pool: WorkerPool) -> None:
    bad = pool.run("def main(args):\n    while True:\n        pass\n", {}, timeout=0.5)
    good = [pool.run("def main(args):\n    return {'i': args.params['i']}\n", {"i": i}) for i in range(10)]
    res = await asyncio.gather(bad, *good)
    assert res[0].error is not None and res[0].error.type == "timeout"
    assert [r.output for r in res[1:]] == [{"i": i} for i in range(10)]
