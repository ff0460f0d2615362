# Runner loaded into every Pyodide worker (in a private namespace, not in sys.modules).
# run() executes one code node with fresh globals; cleanup() undoes what the run left behind
# and returns a reason string when the interpreter may be tainted (the worker is then
# replaced from the snapshot).
import asyncio
import builtins
import contextlib
import gc
import json
import os
import sys
import traceback
from operator import is_ as _is
from types import ModuleType as _Module

_SKIP = {"/dev", "/proc", "/sys"}
# bound now, so a run that monkeypatches json/traceback cannot corrupt its own result
_dumps, _loads, _format_exception = json.dumps, json.loads, traceback.format_exception
_state = {}
_TAINT_EVENTS = {
    "sys.addaudithook",
    "sys.setprofile",
    "sys.settrace",
    "cpython.PyInterpreterState_New",
}


def _audit(event, args):
    if event in _TAINT_EVENTS:
        _state.setdefault("audit", set()).add(event)


sys.addaudithook(_audit)


class Args:
    """What ``main(args)`` receives: ``args.params`` is the dict of node inputs."""

    __slots__ = ("params",)

    def __init__(self, params):
        self.params = params

    def __repr__(self):
        return f"Args(params={self.params!r})"


def _fs():
    snap = {}
    for root, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in _SKIP]
        for name in dirs + files:
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            snap[path] = (st.st_mtime_ns, st.st_size, st.st_mode)
    return snap


def _mods():
    # values are kept (not ids: id() is slow here) and compared by identity.
    # JsProxy "modules" (js, pyodide_js) are skipped: listing them walks the JS realm.
    return {
        name: (m, tuple(m.__dict__.values()) if issubclass(type(m), _Module) else ())
        for name, m in list(sys.modules.items())
    }


def _mods_changed(base, now):
    changed = []
    for name, (mod, vals) in base.items():
        cur = now.get(name)
        if (
            cur is None
            or cur[0] is not mod
            or len(cur[1]) != len(vals)
            or not all(map(_is, cur[1], vals))
        ):
            changed.append(name)
    return changed


def _misc():
    import warnings

    return (sys.path, sys.meta_path, sys.path_hooks, gc.callbacks, warnings.filters)


def _misc_changed(base):
    now = _misc()
    return (
        any(len(a) != len(b) or not all(map(_is, a, b)) for a, b in zip(now, base, strict=True))
        or tuple(sys.path) != _state["path"]
    )


def baseline():
    _state["fs"] = _fs()
    _state["mods"] = _mods()
    _state["misc"] = tuple(tuple(x) for x in _misc())
    _state["path"] = tuple(sys.path)
    _state["env"] = dict(os.environ)
    _state["cwd"] = os.getcwd()
    _state["reclimit"] = sys.getrecursionlimit()
    _state["atexit"] = __import__("atexit")._ncallbacks()
    _state["io"] = (sys.stdout, sys.stderr, sys.stdin)


def _short_tb(exc):
    lines = _format_exception(type(exc), exc, exc.__traceback__)
    keep = [ln for ln in lines if "<coze_runner>" not in ln and "_pyodide/" not in ln]
    text = "".join(keep).rstrip()
    return "\n".join(text.splitlines()[-20:])


def _err(kind, message):
    return _dumps({"ok": False, "error": {"type": kind, "message": message}})


async def run(code, params_json, entry, max_result):
    os.chdir(_state["cwd"])
    try:
        params = _loads(params_json)
        glb = {"__name__": "__main__", "__builtins__": builtins}
        exec(compile(code, "<code_node>", "exec"), glb)
        name = entry or "main"
        fn = glb.get(name)
        if not callable(fn):
            return _err("user_error", f"the code does not define a function {name!r}")
        result = fn(**params) if entry else fn(Args(params))
        if asyncio.iscoroutine(result):
            result = await result
    except KeyboardInterrupt:
        return _err("timeout", "execution interrupted (time limit)")
    except MemoryError as exc:
        return _err("memory_limit", "MemoryError: " + str(exc))
    except BaseException as exc:
        return _err("user_error", _short_tb(exc))
    if not isinstance(result, dict):
        return _err("invalid_result", f"{name}() must return a dict, got {type(result).__name__}")
    try:
        text = _dumps(result, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        return _err("invalid_result", f"{name}() returned a value that is not JSON: {exc}")
    except RecursionError:
        return _err("invalid_result", f"{name}() returned a value nested too deeply for JSON")
    if len(text) > max_result:
        return _err("output_too_large", f"result is {len(text)} bytes, limit {max_result}")
    return '{"ok": true, "output": ' + text + "}"


def cleanup():
    """Undo per-run state; return a taint reason (str) or None."""
    reasons = []
    # asyncio tasks left behind
    try:
        loop = asyncio.get_event_loop()
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    except Exception:
        pending = []
    for t in pending:
        t.cancel()
    if pending:
        reasons.append(f"{len(pending)} asyncio task(s) left running")
    # restore simple process state
    sys.stdout, sys.stderr, sys.stdin = _state["io"]
    if os.getcwd() != _state["cwd"]:
        os.chdir(_state["cwd"])
    if dict(os.environ) != _state["env"]:
        os.environ.clear()
        os.environ.update(_state["env"])
    sys.setrecursionlimit(_state["reclimit"])
    if sys.gettrace() is not None or sys.getprofile() is not None:
        reasons.append("trace/profile hook installed")
    if not gc.isenabled():
        gc.enable()
    if __import__("atexit")._ncallbacks() != _state["atexit"]:
        reasons.append("atexit callback registered")
    audit = _state.pop("audit", None)
    if audit:
        reasons.append("audit event: " + ",".join(sorted(audit)))
    # modules imported by the run are forgotten; pre-existing ones must be untouched
    base = _state["mods"]
    for name in [n for n in list(sys.modules) if n not in base]:
        mod = sys.modules.pop(name, None)
        parent, _, child = name.rpartition(".")
        pm = sys.modules.get(parent)
        if pm is not None and getattr(pm, child, None) is mod:
            with contextlib.suppress(Exception):
                delattr(pm, child)
    sys.path_importer_cache.clear()
    changed = _mods_changed(base, _mods())
    if changed:
        reasons.append("modules modified: " + ", ".join(sorted(changed)[:5]))
    if _misc_changed(_state["misc"]):
        reasons.append("sys.path/meta_path/warnings/gc hooks modified")
    # in-memory file system: new files are removed, changed ones taint the interpreter
    fs = _fs()
    if fs != _state["fs"]:
        base_fs = _state["fs"]
        for path in sorted((p for p in fs if p not in base_fs), key=len, reverse=True):
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    os.rmdir(path)
                else:
                    os.unlink(path)
            except OSError:
                reasons.append("could not remove " + path)
        modified = [p for p in base_fs if fs.get(p) != base_fs[p]]
        # directory mtimes change when files inside are created/removed; ignore dirs
        modified = [p for p in modified if p not in fs or not os.path.isdir(p)]
        if modified:
            reasons.append("files modified: " + ", ".join(modified[:3]))
    return "; ".join(reasons) or None
