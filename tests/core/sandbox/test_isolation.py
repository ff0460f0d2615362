"""State must not leak between two runs on the same interpreter (one-process pool)."""

from __future__ import annotations

import pytest

from coze_lab.core.sandbox import WorkerPool

from .conftest import assert_serves

pytestmark = pytest.mark.asyncio(loop_scope="session")

READ = "def main(args):\n    return {'r': %s}\n"


async def leak(solo: WorkerPool, setup: str, probe: str, *, is_async: bool = False) -> object:
    """Run ``setup`` then (in a fresh run on the same worker) return ``probe``."""
    head = "async def main(args):" if is_async else "def main(args):"
    body = "\n".join("    " + ln for ln in setup.strip().splitlines())
    first = await solo.run(f"{head}\n{body}\n    return {{}}\n", {})
    assert first.error is None, first.to_dict()
    second = await solo.run(READ % probe, {})
    assert second.error is None, second.to_dict()
    assert second.output is not None
    await assert_serves(solo)
    return second.output["r"]


async def test_globals_are_fresh(solo: WorkerPool) -> None:
    first = await solo.run("SECRET = 'a'\nimport builtins\ndef main(args):\n    global LEAK\n    LEAK = 1\n    return {}\n", {})
    assert first.error is None
    r = await solo.run(READ % "[n for n in ('SECRET', 'LEAK') if n in globals()]", {})
    assert r.output == {"r": []}


async def test_builtins_patch_does_not_leak(solo: WorkerPool) -> None:
    r = await leak(solo, "import builtins\nbuiltins.len = lambda x: 42\nbuiltins.pwned = True", "[len('ab'), hasattr(__builtins__, 'pwned') if not isinstance(__builtins__, dict) else 'pwned' in __builtins__]")
    assert r == [2, False]


async def test_stdlib_monkeypatch_does_not_leak(solo: WorkerPool) -> None:
    r = await leak(solo, "import json\njson.dumps = lambda *a, **k: 'pwned'", "__import__('json').dumps([1])")
    assert r == "[1]"


async def test_imported_and_injected_modules_forgotten(solo: WorkerPool) -> None:
    r = await leak(solo, "import sys, types, csv\nm = types.ModuleType('evilmod')\nm.x = 1\nsys.modules['evilmod'] = m\ncsv.pwned = 1", "['evilmod' in __import__('sys').modules, hasattr(__import__('csv'), 'pwned')]")
    assert r == [False, False]


async def test_memfs_files_removed(solo: WorkerPool) -> None:
    r = await leak(solo, "open('/tmp/leak.txt', 'w').write('x')\nopen('/home/pyodide/leak2.txt', 'w').write('y')\nimport os\nos.makedirs('/tmp/d/e', exist_ok=True)", "[__import__('os').path.exists(p) for p in ('/tmp/leak.txt', '/home/pyodide/leak2.txt', '/tmp/d')]")
    assert r == [False, False, False]


async def test_site_packages_plant_removed(solo: WorkerPool) -> None:
    setup = "import sys, os\nsp = [p for p in sys.path if p.endswith('site-packages')][0]\nopen(os.path.join(sp, 'evilplant.py'), 'w').write('X = 1')"
    r = await leak(solo, setup, "__import__('importlib.util').util.find_spec('evilplant') is None")
    assert r is True


async def test_pyodide_fs_api_write_removed(solo: WorkerPool) -> None:
    r = await leak(solo, "import pyodide_js\npyodide_js.FS.writeFile('/tmp/viajs.txt', 'x')", "__import__('os').path.exists('/tmp/viajs.txt')")
    assert r is False


async def test_environ_cwd_path_restored(solo: WorkerPool) -> None:
    r = await leak(solo, "import os, sys\nos.environ['LEAK'] = '1'\nos.makedirs('/tmp/w', exist_ok=True)\nos.chdir('/tmp/w')\nsys.path.insert(0, '/tmp/w')", "['LEAK' in __import__('os').environ, __import__('os').getcwd(), '/tmp/w' in __import__('sys').path]")
    assert r == [False, "/home/pyodide", False]


async def test_js_realm_globals_do_not_leak(solo: WorkerPool) -> None:
    r = await leak(solo, "import js\njs.globalThis.leaked = 'x'\njs.Object.prototype.polluted = 1", "[str(getattr(__import__('js'), 'leaked', None)), str(__import__('js').eval('({}).polluted'))]")
    assert r == ["None", "None"]  # JS undefined arrives as None (polluted would be "1")


async def test_left_over_asyncio_task_cannot_observe_next_run(solo: WorkerPool) -> None:
    setup = (
        "import asyncio, gc, js\n"
        "async def spy():\n"
        "    while True:\n"
        "        await asyncio.sleep(0.001)\n"
        "        js.globalThis.seen = str([o for o in gc.get_objects() if isinstance(o, dict) and 'victim' in o][:1])\n"
        "asyncio.ensure_future(spy())"
    )
    r = await leak(solo, setup, "str(getattr(__import__('js'), 'seen', None))", is_async=True)
    assert r == "None"
    res = await solo.run("import asyncio\nasync def main(args):\n    await asyncio.sleep(0.05)\n    return {'victim': args.params['victim']}\n", {"victim": "secret-param"})
    assert res.output == {"victim": "secret-param"}
    check = await solo.run(READ % "str(getattr(__import__('js'), 'seen', None))", {})
    assert check.output == {"r": "None"}


async def test_left_over_js_timer_is_cleared(solo: WorkerPool) -> None:
    setup = "import js\nfrom pyodide.ffi import create_proxy\njs.setInterval(create_proxy(lambda: setattr(js.globalThis, 'tick', 1)), 1)"
    r = await leak(solo, setup, "str(getattr(__import__('js'), 'tick', None))")
    assert r == "None"


async def test_audit_hook_does_not_survive(solo: WorkerPool) -> None:
    setup = "import sys, js\ndef hook(ev, args):\n    if ev == 'exec':\n        js.globalThis.spied = 'yes'\nsys.addaudithook(hook)"
    r = await leak(solo, setup, "str(getattr(__import__('js'), 'spied', None))")
    assert r == "None"


async def test_clean_runs_keep_the_interpreter(solo: WorkerPool) -> None:
    before = solo.health()["restarts"]
    for i in range(5):
        res = await solo.run("import csv, io\ndef main(args):\n    open('/tmp/scratch', 'w').write('a')\n    return {'i': args.params['i']}\n", {"i": i})
        assert res.output == {"i": i}
    assert solo.health()["restarts"] == before


async def test_max_runs_per_worker_gives_fresh_interpreters(sandbox_cache: object) -> None:
    from .conftest import make_settings

    p = WorkerPool(make_settings(pool_size=1, max_runs_per_worker=1))
    try:
        a = await p.run("import sys\ndef main(args):\n    return {'id': id(sys)}\n", {})
        b = await p.run("import sys\ndef main(args):\n    return {'id': id(sys)}\n", {})
        assert a.error is None and b.error is None
        assert p.health()["restarts"] >= 1
    finally:
        await p.close()
