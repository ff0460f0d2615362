# Runner loaded into every Pyodide interpreter (in a private namespace, not in sys.modules).
# An interpreter only ever serves one owner (host.js binds it); these checks keep one owner's
# runs from leaving state behind for that owner's later runs.
# run() executes one code node with fresh globals; cleanup() undoes what the run left behind
# and returns a reason string when the interpreter may be tainted (it is then replaced).
# The protocol (params in, result out) never goes through the json module or anything else
# a run can patch: it uses the C scanner/encoder of _json, built here before any user code.
import _json
import asyncio
import builtins
import contextlib
import gc
import os
import sys
import traceback
from itertools import chain as _chain
from operator import is_ as _is
from types import FunctionType as _Function
from types import ModuleType as _Module
from types import SimpleNamespace as _NS

_SKIP = {"/dev", "/proc", "/sys"}
_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: such classes cannot be patched at all
_format_exception = traceback.format_exception
_join = "".join
_state = {}
_TAINT_EVENTS = {
    "sys.addaudithook",
    "sys.setprofile",
    "sys.settrace",
    "cpython.PyInterpreterState_New",
}


def _no_constant(name):
    raise ValueError(f"{name} is not valid JSON")


_scanner = _json.make_scanner(
    _NS(
        strict=True,
        object_hook=None,
        object_pairs_hook=None,
        parse_float=float,
        parse_int=int,
        parse_constant=_no_constant,
        memo={},
    )
)
_encode_str = _json.encode_basestring
_make_encoder = _json.make_encoder


def _not_json(o):
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _loads(text):
    obj, end = _scanner(text, 0)
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return obj


def _dumps(obj):
    # a fresh encoder per call: its cycle markers must start empty
    enc = _make_encoder({}, _not_json, _encode_str, None, ":", ",", False, False, False)
    return _join(enc(obj, 0))


def _audit(event, args):
    if event in _TAINT_EVENTS:
        _state.setdefault("audit", set()).add(event)
    elif event == "object.__setattr__" or event == "object.__delattr__":
        # __code__/__defaults__ of a function that existed before the run
        obj = args[0]
        if type(obj) is _Function and obj.__globals__ is not _state.get("glb"):
            _state.setdefault("audit", set()).add("function " + str(args[1]) + " replaced")


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
    todo = ["/"]
    while todo:
        try:
            it = os.scandir(todo.pop())
        except OSError:
            continue
        with it:
            for entry in it:
                path = entry.path
                if path[:2] == "//":
                    path = path[1:]
                if path in _SKIP:
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                snap[path] = (st.st_mtime_ns, st.st_size, st.st_mode)
                if entry.is_dir(follow_symlinks=False):
                    todo.append(path)
    return snap


def _classes():
    """Every patchable class that exists now (reached through object.__subclasses__)."""
    seen = {}
    todo = [object]
    while todo:
        cls = todo.pop()
        try:
            subs = type.__subclasses__(cls)
        except TypeError:
            continue
        for sub in subs:
            if id(sub) not in seen:
                seen[id(sub)] = sub
                todo.append(sub)
    return tuple(c for c in seen.values() if not c.__flags__ & _IMMUTABLE)


def _dict_of(obj):
    # the namespace itself, not a mappingproxy of it: a patch made through
    # gc.get_referents(vars(cls))[0] shows up too
    d = vars(obj)
    return d if type(d) is dict else gc.get_referents(d)[0]


def _values(dicts):
    # one flat tuple of every attribute value (C loops only: ~20k values in well under 1 ms)
    return tuple(_chain.from_iterable(map(dict.values, dicts)))


def _modules():
    return tuple(m for m in sys.modules.values() if issubclass(type(m), _Module))


def _misc():
    import warnings

    return (sys.path, sys.meta_path, sys.path_hooks, gc.callbacks, warnings.filters)


def _misc_changed(base):
    now = _misc()
    return (
        any(len(a) != len(b) or not all(map(_is, a, b)) for a, b in zip(now, base, strict=True))
        or tuple(sys.path) != _state["path"]
    )


def _same(a, b):
    # identity first (C loop); a value replaced by an equal one compares equal, which is
    # harmless, and a comparison that raises counts as a change
    try:
        return len(a) == len(b) and bool(a == b)
    except Exception:
        return False


def baseline():
    _state["fs"] = _fs()
    _state["names"] = tuple(sys.modules)
    _state["mods"] = _modules()
    _state["classes"] = _classes()
    _state["all_dicts"] = [_dict_of(o) for o in _state["mods"] + _state["classes"]]
    _state["all_values"] = _values(_state["all_dicts"])
    _state["all_mods"] = tuple(sys.modules.values())
    _state["detail"] = [tuple(d.values()) for d in _state["all_dicts"]]
    _state["misc"] = tuple(tuple(x) for x in _misc())
    _state["path"] = tuple(sys.path)
    _state["env"] = dict(os.environ)
    _state["cwd"] = os.getcwd()
    _state["reclimit"] = sys.getrecursionlimit()
    _state["atexit"] = __import__("atexit")._ncallbacks()
    _state["io"] = (sys.stdout, sys.stderr, sys.stdin)


def preload(names_json):
    """Import the packages just installed (once per interpreter), then take a new baseline."""
    failed = []
    for name in _loads(names_json):
        try:
            __import__(name)
        except Exception as exc:  # reported by the run that imports it
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
    baseline()
    return "; ".join(failed) or None


def _short_tb(exc):
    lines = _format_exception(type(exc), exc, exc.__traceback__)
    keep = [ln for ln in lines if "<coze_runner>" not in ln and "_pyodide/" not in ln]
    text = _join(keep).rstrip()
    return "\n".join(text.splitlines()[-20:])


def _err(kind, message):
    return _dumps({"ok": False, "error": {"type": kind, "message": message}})


def _missing_package(exc, unavailable):
    while exc is not None:
        if isinstance(exc, ModuleNotFoundError):
            root = (exc.name or "").partition(".")[0]
            if root in unavailable:
                return unavailable[root]
        exc = exc.__cause__ or exc.__context__
    return None


async def run(code, params_json, entry, max_result, unavailable_json):
    os.chdir(_state["cwd"])
    name = entry or "main"
    try:
        params = _loads(params_json)
        glb = {"__name__": "__main__", "__builtins__": builtins}
        _state["glb"] = glb
        exec(compile(code, "<code_node>", "exec"), glb)
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
        missing = _missing_package(exc, _loads(unavailable_json)) if unavailable_json else None
        if missing:
            return _err("package_unavailable", missing + "\n\n" + _short_tb(exc))
        return _err("user_error", _short_tb(exc))
    finally:
        _state["glb"] = None
    if not isinstance(result, dict):
        return _err("invalid_result", f"{name}() must return a dict, got {type(result).__name__}")
    try:
        text = _dumps(result)
    except (TypeError, ValueError) as exc:
        return _err("invalid_result", f"{name}() returned a value that is not JSON: {exc}")
    except RecursionError:
        return _err("invalid_result", f"{name}() returned a value nested too deeply for JSON")
    if len(text) > max_result:
        return _err("output_too_large", f"result is {len(text)} bytes, limit {max_result}")
    return '{"ok":true,"output":' + text + "}"


def _changed_names():
    objs = _state["mods"] + _state["classes"]
    out = {"modules": [], "classes": []}
    for o, d, base in zip(objs, _state["all_dicts"], _state["detail"], strict=True):
        if not _same(tuple(d.values()), base):
            kind = "modules" if isinstance(o, _Module) else "classes"
            out[kind].append(str(getattr(o, "__qualname__", None) or getattr(o, "__name__", "?")))
    parts = [f"{k} modified: " + ", ".join(sorted(v)[:5]) for k, v in out.items() if v]
    return "; ".join(parts) or "module or class attributes modified"


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
    names = _state["names"]
    base_names = set(names)
    for name in [n for n in list(sys.modules) if n not in base_names]:
        mod = sys.modules.pop(name, None)
        parent, _, child = name.rpartition(".")
        pm = sys.modules.get(parent)
        if pm is not None and getattr(pm, child, None) is mod:
            with contextlib.suppress(Exception):
                delattr(pm, child)
    sys.path_importer_cache.clear()
    if tuple(sys.modules) != names or not _same(tuple(sys.modules.values()), _state["all_mods"]):
        reasons.append("sys.modules modified")
    # module attributes (json.dumps = ...) and class attributes
    # (json.decoder.JSONDecoder.decode = ...) of everything that existed before the run
    elif not _same(_values(_state["all_dicts"]), _state["all_values"]):
        reasons.append(_changed_names())
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
