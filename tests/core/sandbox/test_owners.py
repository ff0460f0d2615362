"""Isolation between owners (issue 11, finding 1) and within one owner.

The finding: a Python code node patched a stdlib class attribute or a JS intrinsic reachable
through ``import js``; the next run, another user's, went through the patch, so the patch saw
that user's input (an API key) and replaced that user's result. Each attack below installs
such a hook, victor runs with his key, then eve asks her hook what it saw. The pool has one
process, so before the fix both users' runs went to the same interpreter.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from coze_lab.core.sandbox import WorkerPool
from coze_lab.core.sandbox.pool import owner_key

from .conftest import make_settings

pytestmark = pytest.mark.asyncio(loop_scope="session")

KEY = "sk-victor-0123456789"
VICTOR = (
    "def main(args):\n"
    "    print('calling the API with', args.params['key'])\n"
    "    return {'api': args.params['key'][:3], 'n': len(args.params['key'])}\n"
)
VICTOR_OUT = {"api": "sk-", "n": len(KEY)}
VICTOR_STDOUT = f"calling the API with {KEY}\n"

# A Python spy on JSONDecoder.decode / JSONEncoder.encode, used directly and armed by the JS
# hooks (a JS hook is a point where eve's code runs inside the next run).
PY_SPIES = """
import json.decoder, json.encoder
def arm(box):
    if getattr(json.decoder.JSONDecoder.decode, 'box', None) is None:
        orig_decode = json.decoder.JSONDecoder.decode
        def decode(self, s, *a, **k):
            if 'sk-' in s:
                box.append(s)
            return orig_decode(self, s, *a, **k)
        decode.box = box
        json.decoder.JSONDecoder.decode = decode
    if getattr(json.encoder.JSONEncoder.encode, 'box', None) is None:
        orig_encode = json.encoder.JSONEncoder.encode
        def encode(self, o):
            if isinstance(o, dict) and 'api' in o:
                o = {'api': 'pwned-by-eve'}
            return orig_encode(self, o)
        encode.box = box
        json.encoder.JSONEncoder.encode = encode
"""

# Replace target[prop] by a function that records what passes through (arguments, return
# values, strings decoded from bytes), alters results it recognises, and arms the Python spies.
JS_HOOK = """
import js
from pyodide.ffi import create_proxy
hook = js.eval('''(target, prop, arm) => {
  const orig = target[prop];
  const f = function (...a) {
    const seen = (v) => {
      try {
        let s = typeof v === "string" ? v
          : (v instanceof Uint8Array) ? String.fromCharCode(...v.slice(0, 4096))
          : JSON.stringify(v);
        if (s && s.includes("sk-")) f.box.push(s);
      } catch (e) { /* ignore */ }
    };
    a.forEach(seen);
    try { arm(f.box); } catch (e) { /* ignore */ }
    if (prop === "postMessage" && a[0] && a[0].res && a[0].res.output) a[0].res.output = {api: "pwned-by-eve"};
    const r = orig.apply(this, a);
    seen(r);
    return r;
  };
  f.box = [];
  target[prop] = f;
}''')
hook(TARGET, PROP, create_proxy(lambda box: arm(box)))
"""


def _js_attack(target: str, prop: str) -> tuple[str, str]:
    install = (PY_SPIES + JS_HOOK).replace("TARGET", target).replace("PROP", repr(prop))
    install += "def main(args):\n    return {}\n"
    peek = f"import js\ndef main(args):\n    return {{'seen': str(getattr({target}.{prop}, 'box', None))}}\n"
    return install, peek


ATTACKS = {
    "json.decoder.JSONDecoder.decode": (
        PY_SPIES + "arm([])\ndef main(args):\n    return {}\n",
        "import json.decoder\ndef main(args):\n"
        "    return {'seen': str(getattr(json.decoder.JSONDecoder.decode, 'box', None))}\n",
    ),
    "json.encoder.JSONEncoder.encode": (
        PY_SPIES + "arm([])\ndef main(args):\n    return {}\n",
        "import json.encoder\ndef main(args):\n"
        "    return {'seen': str(getattr(json.encoder.JSONEncoder.encode, 'box', None))}\n",
    ),
    "MessagePort.prototype.postMessage": _js_attack("js.MessagePort.prototype", "postMessage"),
    "TextDecoder.prototype.decode": _js_attack("js.TextDecoder.prototype", "decode"),
    "Atomics.store": _js_attack("js.Atomics", "store"),
    "Uint8Array.prototype.set": _js_attack("js.Uint8Array.prototype", "set"),
}


@pytest.mark.parametrize("attribute", list(ATTACKS))
async def test_finding_11_1_eve_patching_cannot_see_or_alter_victors_run(
    solo: WorkerPool, attribute: str
) -> None:
    install, peek = ATTACKS[attribute]
    res = await solo.run(install, {}, owner="eve")
    assert res.error is None, res.to_dict()
    victor = await solo.run(VICTOR, {"key": KEY}, owner="victor")
    assert victor.error is None, victor.to_dict()
    assert victor.output == VICTOR_OUT  # not replaced
    assert victor.stdout == VICTOR_STDOUT
    for _ in range(2):  # eve asks her hook (in whatever interpreter she now gets)
        seen = await solo.run(peek, {}, owner="eve")
        assert seen.error is None, seen.to_dict()
        assert "sk-victor" not in str(seen.to_dict())
    again = await solo.run(VICTOR, {"key": KEY}, owner="victor")
    assert again.output == VICTOR_OUT and again.stdout == VICTOR_STDOUT


@pytest.mark.parametrize("attribute", list(ATTACKS))
async def test_within_one_owner_a_patch_is_detected_and_the_interpreter_replaced(
    solo: WorkerPool, attribute: str
) -> None:
    install, peek = ATTACKS[attribute]
    before = solo.health()["interpreter_restarts"]
    res = await solo.run(install, {}, owner="mallory")
    assert res.error is None, res.to_dict()
    mine = await solo.run(VICTOR, {"key": KEY}, owner="mallory")
    assert mine.output == VICTOR_OUT and mine.stdout == VICTOR_STDOUT
    seen = await solo.run(peek, {}, owner="mallory")
    assert seen.output == {"seen": "None"}, seen.to_dict()  # a fresh interpreter
    assert solo.health()["interpreter_restarts"] > before


# A note kept inside a pre-existing module's cache: the checks do not look there (a module
# attribute is compared, a dict inside it is not), so it stays with the interpreter.
PUT = (
    "import re\ndef main(args):\n    re._cache[('note', 0, 0)] = args.params['v']\n    return {}\n"
)
GET = "import re\ndef main(args):\n    return {'v': re._cache.get(('note', 0, 0))}\n"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def roomy(sandbox_cache: object) -> AsyncIterator[WorkerPool]:
    """One process with room for its warm interpreters (the shared ``solo`` pool may be
    replaced for memory after many owners, which would drop warm state legitimately)."""
    p = WorkerPool(make_settings(pool_size=1, memory_limit_mb=2048))
    await p.start()
    yield p
    await p.close()


async def test_owner_state_stays_with_its_owner(roomy: WorkerPool) -> None:
    solo = roomy
    await solo.run(PUT, {"v": "alice's"}, owner="alice")
    assert (await solo.run(GET, {}, owner="alice")).output == {"v": "alice's"}  # warm
    assert (await solo.run(GET, {}, owner="bob")).output == {"v": None}  # never another's


async def test_anonymous_runs_never_share_an_interpreter_with_a_named_owner(
    roomy: WorkerPool,
) -> None:
    solo = roomy
    await solo.run(PUT, {"v": "anonymous"}, owner=None)
    await solo.run(PUT, {"v": "carol's"}, owner="carol")
    assert (await solo.run(GET, {}, owner=None)).output == {"v": "anonymous"}
    assert (await solo.run(GET, {}, owner="carol")).output == {"v": "carol's"}
    assert (await solo.run(GET, {}, owner="")).output == {"v": None}  # "" is not None
    assert len({owner_key(None), owner_key("anonymous"), owner_key("")}) == 3


async def test_a_new_owner_binds_the_spare_and_the_least_recent_is_retired(
    sandbox_cache: object,
) -> None:
    pool = WorkerPool(make_settings(pool_size=1, interpreters_per_worker=2))
    try:
        await pool.start()
        assert pool.health()["warm_interpreters"] == 0
        for owner in ("a", "b"):
            await pool.run(PUT, {"v": owner}, owner=owner)
        for owner in ("a", "b"):  # both stay warm
            assert (await pool.run(GET, {}, owner=owner)).output == {"v": owner}
        assert pool.health()["warm_interpreters"] == 2
        # a third owner: "a", used least recently, is retired (never handed to "c")
        assert (await pool.run(GET, {}, owner="c")).output == {"v": None}
        assert pool.health()["warm_interpreters"] == 2
        assert (await pool.run(GET, {}, owner="b")).output == {"v": "b"}
        assert (await pool.run(GET, {}, owner="a")).output == {"v": None}  # a fresh one
        assert pool.health()["interpreter_restarts"] == 0  # retiring is not a restart
    finally:
        await pool.close()


@pytest.mark.parametrize("call", ["Deno.exit()", "self.close()", "close()", "Deno.exit(3)"])
async def test_finding_11_5_js_exit_or_close_answers_at_once(pool: WorkerPool, call: str) -> None:
    t0 = time.perf_counter()
    res = await pool.run(
        f"function main() {{ {call}; return {{}}; }}", {}, language="javascript", timeout=5
    )
    elapsed = time.perf_counter() - t0
    assert res.error is not None and res.error.type == "worker_crashed", res.to_dict()
    assert "closed its worker" in res.error.message
    assert elapsed < 2.5, elapsed  # not the 5 s time limit
    nxt = await pool.run("function main() { return {ok: 1}; }", {}, language="javascript")
    assert nxt.output == {"ok": 1}


@pytest.mark.parametrize("call", ["js.Deno.exit(3)", "js.close()"])
async def test_python_exit_or_close_answers_at_once(solo: WorkerPool, call: str) -> None:
    t0 = time.perf_counter()
    res = await solo.run(
        f"import js\ndef main(args):\n    {call}\n    return {{}}\n", {}, timeout=5
    )
    assert res.error is not None and res.error.type == "worker_crashed", res.to_dict()
    assert time.perf_counter() - t0 < 2.5
    nxt = await solo.run("def main(args):\n    return {'ok': 1}\n", {})
    assert nxt.output == {"ok": 1}


async def test_a_process_that_dies_between_runs_is_replaced(sandbox_cache: object) -> None:
    import os
    import signal

    pool = WorkerPool(make_settings(pool_size=1))
    try:
        assert (await pool.run(GET, {}, owner="a")).error is None
        proc = pool._slots[0].proc
        assert proc is not None
        os.kill(proc.pid, signal.SIGKILL)
        await proc.wait()
        res = await pool.run(GET, {}, owner="a")  # waits for the replacement, then runs
        assert res.error is None and res.output == {"v": None}, res.to_dict()
        assert pool.health()["process_restarts"] == 1
    finally:
        await pool.close()
