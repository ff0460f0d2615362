"""The production :class:`Runner`: a pool of long-lived Deno processes with Pyodide loaded.

Each pool slot is one ``deno run`` process (``runtime/host.js``) started with only the
permissions in :class:`SandboxSettings`. Its control thread talks to this pool over a private
unix socket (removed from the file system as soon as it is connected) and runs the code in
Deno workers that have even fewer permissions and never see that socket:

* Python: long-lived Pyodide interpreters restored from a memory snapshot, each bound to the
  *owner* of its first run (``run(..., owner=...)``) and never used for another owner; fresh
  globals per run, state left behind by a run undone or the interpreter replaced;
* JavaScript: a fresh worker per run (a spare one is kept warm).

The pool routes a run to a process that already has a warm interpreter for its owner when it
can; otherwise the process binds its spare (a booted interpreter no code has run in) to the
owner and boots a new spare. Packages (numpy, pandas) are fetched and verified by the pool
(:mod:`.packages`) and installed into the owner's interpreter before the run; workspace
folders (:mod:`.mounts`) are copied in and out around it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import tempfile
import time
from collections import Counter, deque
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .errors import RunResult, SandboxError
from .install import (
    absolute,
    deno_bin,
    deno_dir,
    install_pyodide,
    is_installed,
    prelude_source,
    runtime_dir,
    snapshot_path,
    write_runtime,
)
from .mounts import Mount, MountsArg, normalize, read_in, write_out
from .packages import PackageIndex
from .settings import SandboxSettings

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LANGS = ("python", "javascript")


@runtime_checkable
class Runner(Protocol):
    """Something that runs code nodes.

    Example:
        >>> async def demo(runner: Runner) -> dict:
        ...     await runner.start()
        ...     code = "def main(args):\\n    return {'x': args.params['a']}"
        ...     res = await runner.run(code, {"a": 1})
        ...     return res.output   # {'x': 1}
    """

    async def start(self) -> None:
        """Make the runner ready (may install Pyodide on first use)."""

    async def run(
        self,
        code: str,
        params: dict[str, Any],
        *,
        language: str = "python",
        entry: str | None = None,
        timeout: float | None = None,
        owner: str | None = None,
        mounts: MountsArg | None = None,
    ) -> RunResult:
        """Run ``code``; ``entry=None`` calls ``main(args)``, else ``entry(**params)``.

        ``owner`` (a user or space id) decides which warm interpreters may serve the run:
        never one that ran another owner's code (``None`` is one more owner, "anonymous").
        ``mounts`` maps folder names the code sees (``input``) to host folders
        (:class:`~coze_lab.core.sandbox.mounts.Mount`).
        """

    async def close(self) -> None:
        """Stop all workers."""

    def health(self) -> dict[str, Any]:
        """JSON-serialisable status; never blocks and never starts anything."""


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        pass
    return 0.0


def owner_key(owner: str | None) -> str:
    """The key interpreters are bound by; anonymous runs never share with named owners.

    Example:
        >>> owner_key(None), owner_key("42"), owner_key("")
        ('anonymous', 'owner:42', 'owner:')
    """
    return "anonymous" if owner is None else "owner:" + str(owner)


class _Waiter:
    __slots__ = ("any_slot", "fut", "key")

    def __init__(self, key: str, fut: asyncio.Future[_Slot]) -> None:
        self.key = key
        self.fut = fut
        self.any_slot = False  # waited long enough for its warm slot: any slot will do


class _Slot:
    """One Deno process of the pool."""

    def __init__(self, pool: WorkerPool, index: int) -> None:
        self.pool = pool
        self.index = index
        self.gen = 0
        self.proc: asyncio.subprocess.Process | None = None
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.alive = False
        self.busy = False
        self.respawning = False
        self.boot_ms = 0.0
        #: owner keys with a warm interpreter in this process, and whether a spare is booted
        self.warm: frozenset[str] = frozenset()
        self.spare_ready = False
        self._fut: asyncio.Future[tuple[dict[str, Any], dict[str, Any] | None]] | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._stderr_tail = b""
        self._next_id = 0

    @property
    def available(self) -> bool:
        return self.alive and not self.busy

    def _status(self, msg: dict[str, Any]) -> None:
        warm = msg.get("warm")
        if isinstance(warm, list):
            self.warm = frozenset(str(k) for k in warm)
        if "spare" in msg:
            self.spare_ready = bool(msg.get("spare"))

    # -- lifecycle -------------------------------------------------------------------
    async def spawn(self) -> None:
        s = self.pool.settings
        self.gen += 1
        self._stderr_tail = b""

        self.warm, self.spare_ready = frozenset(), False
        sock = self.pool.sock_dir / f"w{self.index}-{self.gen}.sock"
        loop = asyncio.get_running_loop()
        connected: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]]
        connected = loop.create_future()

        def on_conn(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            if connected.done():
                w.close()  # only the first connection is ever accepted
            else:
                connected.set_result((r, w))

        limit = 16 * (s.max_result_bytes + s.max_output_bytes) + 2 * s.mount_max_bytes + (1 << 20)
        server = await asyncio.start_unix_server(on_conn, path=str(sock), limit=limit)
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.pool.command(sock),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                env=self.pool.child_env(),
                cwd=str(s.cache_dir),
                start_new_session=True,
            )
            self._tasks = [asyncio.create_task(self._drain_stderr(self.proc))]
            try:
                reader, self.writer = await asyncio.wait_for(
                    asyncio.shield(connected), s.startup_timeout_s
                )
                self.reader = reader
            except asyncio.TimeoutError:
                raise SandboxError(
                    "worker_crashed", "sandbox process did not connect: " + self._stderr_text()
                ) from None
        finally:
            server.close()
            with contextlib.suppress(OSError):
                sock.unlink()
        await self._send({"op": "init", "cfg": self.pool.worker_config()})
        deadline = loop.time() + s.startup_timeout_s
        msg: dict[str, Any] = {"op": "init"}
        while msg.get("op") not in ("ready", "boot_error", None):
            try:
                line = await asyncio.wait_for(reader.readline(), deadline - loop.time())
            except asyncio.TimeoutError:
                line = b""
            msg = json.loads(line) if line.strip() else {"op": None}
        if msg.get("op") != "ready":
            await self.kill()
            raise SandboxError(
                "worker_crashed",
                "sandbox worker failed to boot: "
                + str(msg.get("message") or self._stderr_text() or "no reply"),
            )
        self.boot_ms = float(msg.get("boot_ms", 0.0))
        self._status(msg)
        self.alive = True
        self._tasks.append(asyncio.create_task(self._read_loop(reader, self.proc, self.gen)))

    async def kill(self) -> None:
        self.alive = False
        self.warm, self.spare_ready = frozenset(), False
        proc, self.proc = self.proc, None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5)
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        tasks, self._tasks = self._tasks, []
        if tasks:  # the stderr drain ends at EOF; let it, so the transport closes cleanly
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(tasks[0]), 1.0)
        for t in tasks:
            if t is not asyncio.current_task():
                t.cancel()
        if proc is not None:
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
        self._fail_pending("worker_crashed", "sandbox process stopped")

    def _fail_pending(self, kind: str, message: str) -> None:
        if self._fut is not None and not self._fut.done():
            self._fut.set_result(({"ok": False, "error": {"type": kind, "message": message}}, None))

    def _stderr_text(self) -> str:
        return self._stderr_tail.decode("utf-8", "replace").strip()[-800:]

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while True:
            chunk = await proc.stderr.read(65536)
            if not chunk:
                return
            self._stderr_tail = (self._stderr_tail + chunk)[-4096:]

    async def _read_loop(
        self, reader: asyncio.StreamReader, proc: asyncio.subprocess.Process, gen: int
    ) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                msg = json.loads(line)
                op = msg.get("op")
                if op == "result":
                    self._status(msg)
                    if (
                        self._fut is not None
                        and not self._fut.done()
                        and msg.get("id") == self._next_id
                    ):
                        self._fut.set_result((msg, msg.get("output")))
                elif op == "status":
                    self._status(msg)
                    self.pool.slot_changed(self)
                elif op == "recycled":
                    self.pool.count_restarts(1, str(msg.get("reason", "")))
        except (ValueError, asyncio.LimitOverrunError, ConnectionError):
            pass
        # the process is gone (or talks nonsense): fail the run in flight
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 2)
        if gen != self.gen:
            return  # a newer process already took this slot
        self.alive = False
        self.warm, self.spare_ready = frozenset(), False
        detail = self._stderr_text()
        self._fail_pending(
            "worker_crashed",
            "the sandbox process died" + (f": {detail[-300:]}" if detail else ""),
        )
        if not self.busy:  # died between runs: nobody else will notice
            self.pool._respawn(self)

    async def _send(self, obj: dict[str, Any]) -> None:
        assert self.writer is not None
        self.writer.write(json.dumps(obj, ensure_ascii=False).encode() + b"\n")
        await self.writer.drain()

    # -- one run -----------------------------------------------------------------------
    async def execute(
        self, job: dict[str, Any], timeout: float, prepare_s: float = 0.0
    ) -> tuple[dict[str, Any], Any, str | None]:
        """Send ``job``; returns (reply, output, kill_reason)."""
        s = self.pool.settings
        loop = asyncio.get_running_loop()
        self._next_id += 1
        self._fut = loop.create_future()
        job = {
            **job,
            "op": "run",
            "id": self._next_id,
            "timeoutMs": int(timeout * 1000),
            "maxOutput": s.max_output_bytes,
            "maxResult": s.max_result_bytes,
        }
        try:
            await self._send(job)
        except (ConnectionError, AssertionError):
            self._fut = None
            self.alive = False
            return {"ok": False, "error": {"type": "worker_crashed"}}, None, "unsent"
        hard_deadline = loop.time() + timeout + s.grace_s + 5.0 + prepare_s
        pid = self.proc.pid if self.proc else 0
        kill_reason: str | None = None
        while not self._fut.done():
            await asyncio.wait({self._fut}, timeout=s.memory_poll_s)
            if self._fut.done():
                break
            rss = _rss_mb(pid)
            if rss > s.memory_limit_mb:
                kill_reason = "memory_limit"
                await self.kill()
                self._fut = None
                return (
                    {
                        "ok": False,
                        "error": {
                            "type": "memory_limit",
                            "message": f"worker memory {rss:.0f} MB exceeded the "
                            f"{s.memory_limit_mb} MB limit (worker replaced)",
                        },
                    },
                    None,
                    kill_reason,
                )
            if loop.time() > hard_deadline:
                kill_reason = "timeout"
                await self.kill()
                self._fut = None
                return (
                    {
                        "ok": False,
                        "error": {
                            "type": "timeout",
                            "message": f"execution exceeded {timeout:g} s (sandbox process killed)",
                        },
                    },
                    None,
                    kill_reason,
                )
        reply, output = self._fut.result()
        self._fut = None
        if not self.alive:
            kill_reason = "crashed"
        elif reply.get("recycled"):
            # the interpreter was killed mid-run (hard timeout, crash): V8 frees a dead
            # worker's wasm memory lazily, so the whole process is replaced instead
            kill_reason = "replaced"
        elif _rss_mb(pid) > s.memory_limit_mb * s.recycle_rss_fraction:
            kill_reason = "bloated"  # wasm memory never shrinks: start afresh
        return reply, output, kill_reason


class WorkerPool:
    """Pool of warm Deno + Pyodide sandboxes (the production :class:`Runner`).

    Example:
        >>> async def demo() -> None:
        ...     pool = WorkerPool(SandboxSettings(cache_dir=Path("/tmp/cl/sandbox")))
        ...     await pool.start()
        ...     res = await pool.run("def main(args):\\n    return {'n': args.params['n'] + 1}",
        ...                          {"n": 1}, owner="user-7")
        ...     assert res.output == {"n": 2}
        ...     clean = "def clean(doc: str) -> dict:\\n    return {'doc': doc.strip()}"
        ...     res = await pool.run(clean, {"doc": " x "}, entry="clean", owner="user-7")
        ...     await pool.close()
    """

    def __init__(
        self, settings: SandboxSettings, *, package_index: PackageIndex | None = None
    ) -> None:
        self.settings = absolute(settings)
        self.sock_dir = Path(".")
        self._slots: list[_Slot] = []
        self._waiters: deque[_Waiter] = deque()
        self._started = False
        self._closing = False
        self._start_lock: asyncio.Lock | None = None
        self._respawns: set[asyncio.Task[None]] = set()
        self._runs = 0
        self._restarts = 0
        self._process_restarts = 0
        self._interpreter_restarts = 0
        self._last_restart_reason: str | None = None
        self._errors: Counter[str] = Counter()
        self._cold_start_ms = 0.0
        self._runtime: Path | None = None
        self._package_index = package_index

    @property
    def packages(self) -> PackageIndex:
        """The allow-listed Pyodide packages (made on first use)."""
        if self._package_index is None:
            self._package_index = PackageIndex(self.settings)
        return self._package_index

    # -- configuration of the child processes ------------------------------------------
    def _read_paths(self) -> list[str]:
        s = self.settings
        paths = [str(Path(s.cache_dir).resolve())]
        if s.wheelhouse:
            paths.append(str(Path(s.wheelhouse).resolve()))
        return paths + list(s.allow_read)

    def command(self, sock: Path) -> list[str]:
        """argv of one sandbox process (code and data never go on the command line)."""
        s = self.settings
        assert self._runtime is not None
        read = [*self._read_paths(), str(sock)]
        args = [
            deno_bin(),
            "run",
            "--no-config",
            "--no-lock",
            "--node-modules-dir=none",
            "--cached-only",
            "--no-prompt",
            "--quiet",
            "--unstable-worker-options",
            f"--allow-read={','.join(read)}",
            f"--allow-write={','.join([str(sock), *s.allow_write])}",
            f"--allow-net={','.join(['unix:' + str(sock), *s.allow_net])}",
            f"--v8-flags=--max-old-space-size={int(s.memory_limit_mb)}",
        ]
        for flag, values in (("env", s.allow_env), ("run", s.allow_run), ("ffi", s.allow_ffi)):
            if values:
                args.append(f"--allow-{flag}={','.join(values)}")
        return [*args, str(self._runtime / "host.js"), str(sock)]

    def child_env(self) -> dict[str, str]:
        """Environment of a sandbox process: nothing but Deno's own settings and allow_env."""
        env = {
            "DENO_DIR": str(deno_dir(self.settings)),
            "NO_COLOR": "1",
            "DENO_NO_UPDATE_CHECK": "1",
            "HOME": str(self.settings.cache_dir),
            "PATH": os.environ.get("PATH", ""),
        }
        for name in self.settings.allow_env:
            if name in os.environ:
                env[name] = os.environ[name]
        return env

    def worker_config(self) -> dict[str, Any]:
        """What host.js passes to its workers (permissions, snapshot, wheels, prelude)."""
        s = self.settings

        def perm(values: list[str]) -> list[str] | bool:
            return list(values) if values else False

        wheels: list[str] = []
        if s.wheelhouse and Path(s.wheelhouse).is_dir():
            wheels = sorted(str(p.resolve()) for p in Path(s.wheelhouse).glob("*.whl"))
        return {
            "permissions": {
                "read": self._read_paths(),
                "write": perm(list(s.allow_write)),
                "net": perm(list(s.allow_net)),
                "env": perm(list(s.allow_env)),
                "run": perm(list(s.allow_run)),
                "ffi": perm(list(s.allow_ffi)),
                "sys": False,
                "import": False,
            },
            "snapshotPath": str(snapshot_path(s)),
            "wheels": wheels,
            "prelude": prelude_source(),
            "graceMs": int(s.grace_s * 1000),
            "maxRunsPerWorker": s.max_runs_per_worker,
            "maxInterpreters": max(1, s.interpreters_per_worker),
            "prepareTimeoutMs": int(s.package_fetch_timeout_s * 1000) + 30_000,
            "mountMaxBytes": s.mount_max_bytes,
            "mountMaxFiles": s.mount_max_files,
        }

    # -- Runner API ------------------------------------------------------------------------
    async def start(self) -> None:
        """Install Pyodide if needed (``auto_install``) and boot ``pool_size`` workers.

        Raises :class:`SandboxError` (``not_installed`` / ``worker_crashed``) on failure.
        """
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._started:
                return
            t0 = time.perf_counter()
            s = self.settings
            if not is_installed(s):
                if not s.auto_install:
                    raise SandboxError(
                        "not_installed", "Pyodide is not cached; run `coze-lab sandbox install`"
                    )
                await asyncio.to_thread(install_pyodide, s)
            self._runtime = await asyncio.to_thread(write_runtime, s)
            self.sock_dir = Path(tempfile.mkdtemp(prefix="coze-sbx-"))
            os.chmod(self.sock_dir, 0o700)
            self._waiters = deque()
            self._slots = [_Slot(self, i) for i in range(max(1, s.pool_size))]
            results = await asyncio.gather(
                *(slot.spawn() for slot in self._slots), return_exceptions=True
            )
            failures = [r for r in results if isinstance(r, BaseException)]
            if failures:
                for slot in self._slots:
                    await slot.kill()
                shutil.rmtree(self.sock_dir, ignore_errors=True)
                err = failures[0]
                if isinstance(err, SandboxError):
                    raise err
                raise SandboxError("worker_crashed", f"sandbox failed to start: {err!r}")
            self._closing = False
            self._started = True
            self._cold_start_ms = (time.perf_counter() - t0) * 1000

    async def run(
        self,
        code: str,
        params: dict[str, Any] | None = None,
        *,
        language: str = "python",
        entry: str | None = None,
        timeout: float | None = None,
        owner: str | None = None,
        mounts: MountsArg | None = None,
    ) -> RunResult:
        """Run one code node and return its :class:`RunResult` (errors are in ``.error``).

        ``entry=None``: the seed contract, ``main(args)`` with ``args.params``.
        ``entry="clean"``: ``clean(**params)`` (JavaScript: ``clean(params)``).
        ``owner``: the user (or space) the run belongs to; an interpreter that ran one
        owner's code never runs another's. ``None`` is the anonymous owner.
        ``mounts``: ``{"input": Mount(path), "output": Mount(path, read_only=False)}``:
        folders the code sees relative to its working directory; files it writes below
        writable mounts are copied back (``result.meta["files_written"]``).
        """
        t0 = time.perf_counter()

        def fail(kind: str, message: str) -> RunResult:
            self._errors[kind] += 1
            return RunResult.failure(kind, message, (time.perf_counter() - t0) * 1000)

        if language not in _LANGS:
            return fail("invalid_input", f"unknown language {language!r}; use one of {_LANGS}")
        if entry is not None and not _IDENT.fullmatch(entry):
            return fail("invalid_input", f"entry must be an identifier, got {entry!r}")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return fail("invalid_input", "params must be a JSON object")
        try:
            params_json = json.dumps(params, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            return fail("invalid_input", f"params are not JSON: {exc}")
        s = self.settings
        job: dict[str, Any] = {
            "lang": language,
            "code": code,
            "params": params_json,
            "entry": entry,
            "owner": owner_key(owner),
        }
        if not self._started:
            try:
                await self.start()
            except SandboxError as exc:
                return fail(exc.type, exc.message)
        mount_map: dict[str, Mount] = {}
        prepare_s = 0.0
        try:
            if mounts:
                if language != "python":
                    raise SandboxError("invalid_input", "mounts are available to Python code only")
                mount_map = normalize(mounts)
                job["mounts"] = await asyncio.to_thread(
                    read_in, mount_map, s.mount_max_bytes, s.mount_max_files
                )
                prepare_s += 10.0
        except SandboxError as exc:
            return fail(exc.type, exc.message)
        if language == "python":
            wanted = self.packages.wanted(code)
            if wanted:
                loaded, missing = await self.packages.prepare(wanted)
                job["packages"] = [{"path": p.path, "imports": list(p.imports)} for p in loaded]
                if missing:
                    job["unavailable"] = json.dumps(missing, ensure_ascii=False)
                if loaded:
                    prepare_s += s.package_fetch_timeout_s + 30.0
        timeout = float(timeout if timeout is not None else s.timeout_s)
        kill_reason: str | None = "unsent"
        attempts = 0
        while kill_reason == "unsent" and attempts < 3:
            # a process that died just before the job was sent: run it on its replacement
            attempts += 1
            slot = await self._acquire(job["owner"])
            kill_reason = None
            try:
                reply, output, kill_reason = await slot.execute(job, timeout, prepare_s)
            finally:
                if kill_reason or not slot.alive:
                    slot.busy = False
                    self._respawn(slot)
                else:
                    self._release(slot)
        self._runs += 1
        if kill_reason == "unsent":
            reply["error"]["message"] = "the sandbox process is gone (retried)"
        duration = (time.perf_counter() - t0) * 1000
        error = None
        written: list[str] = []
        if reply.get("error"):
            e = reply["error"]
            error = SandboxError(str(e.get("type", "worker_crashed")), str(e.get("message", "")))
            output = None
        elif not isinstance(output, dict):
            error = SandboxError("invalid_result", "the code node returned no object")
            output = None
        elif reply.get("files"):
            try:
                written = await asyncio.to_thread(
                    write_out, mount_map, reply["files"], s.mount_max_bytes, s.mount_max_files
                )
            except SandboxError as exc:
                error, output = exc, None
        if error is not None:
            self._errors[error.type] += 1
        return RunResult(
            output=output,
            stdout=reply.get("stdout", "") or "",
            stderr=reply.get("stderr", "") or "",
            error=error,
            duration_ms=duration,
            meta={
                "killed": kill_reason,
                "timing": reply.get("timing"),
                "files_written": written,
            },
        )

    # -- routing: an owner's runs go where its warm interpreter is ---------------------------
    async def _acquire(self, key: str) -> _Slot:
        slot = self._pick(key, any_slot=False)
        if slot is not None:
            slot.busy = True
            return slot
        loop = asyncio.get_running_loop()
        waiter = _Waiter(key, loop.create_future())
        self._waiters.append(waiter)
        timer = None
        if any(key in sl.warm for sl in self._slots if sl.alive):
            # our warm process is busy: wait a little for it before binding a new interpreter
            # elsewhere (which may retire another owner's)
            timer = loop.call_later(self.settings.affinity_wait_s, self._stop_waiting, waiter)
        try:
            return await waiter.fut
        except asyncio.CancelledError:
            if waiter.fut.done() and not waiter.fut.cancelled():
                self._release(waiter.fut.result())  # handed over just as we were canceled
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            raise
        finally:
            if timer is not None:
                timer.cancel()

    def _pick(self, key: str, *, any_slot: bool) -> _Slot | None:
        """An idle slot for ``key``: its warm one; else, unless ``key`` is warm in a busy
        slot (and ``any_slot`` is false), the idle slot that can bind it fastest."""
        free = [sl for sl in self._slots if sl.available]
        if not free:
            return None
        for sl in free:
            if key in sl.warm:
                return sl
        if not any_slot and any(key in sl.warm for sl in self._slots if sl.alive):
            return None
        return min(free, key=lambda sl: (not sl.spare_ready, len(sl.warm)))

    def _stop_waiting(self, waiter: _Waiter) -> None:
        if waiter.fut.done():
            return
        waiter.any_slot = True
        slot = self._pick(waiter.key, any_slot=True)
        if slot is not None:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            slot.busy = True
            waiter.fut.set_result(slot)

    def _release(self, slot: _Slot) -> None:
        slot.busy = False
        if not slot.alive or self._closing:
            return
        self.slot_changed(slot)

    def slot_changed(self, slot: _Slot) -> None:
        """Hand an idle ``slot`` to the best waiter (its owner's run first, else the oldest)."""
        if not slot.available or not self._waiters:
            return
        chosen = None
        for i, w in enumerate(self._waiters):
            if i >= 32:
                break
            if not w.fut.done() and slot.warm and w.key in slot.warm:
                chosen = w
                break
        if chosen is None:
            # the oldest waiter that has waited long enough, or is warm nowhere; the others
            # keep waiting for their own process (their timer moves them on)
            for i, w in enumerate(self._waiters):
                if i >= 32:
                    break
                if w.fut.done():
                    continue
                if w.any_slot or not any(w.key in sl.warm for sl in self._slots if sl.alive):
                    chosen = w
                    break
        while self._waiters and self._waiters[0].fut.done():
            self._waiters.popleft()
        if chosen is None:
            return
        with contextlib.suppress(ValueError):
            self._waiters.remove(chosen)
        slot.busy = True
        chosen.fut.set_result(slot)

    def _respawn(self, slot: _Slot) -> None:
        if self._closing or slot.respawning:
            return
        slot.respawning = True
        slot.alive = False  # no run may pick it before the new process is up
        self._restarts += 1
        self._process_restarts += 1

        async def go() -> None:
            try:
                await slot.kill()
                delay = 0.0
                while not self._closing:
                    try:
                        await slot.spawn()
                    except (SandboxError, OSError, ValueError, RuntimeError):
                        delay = min(5.0, delay * 2 or 0.2)
                        await asyncio.sleep(delay)
                        continue
                    if self._closing:
                        await slot.kill()
                        return
                    slot.respawning = False
                    self._release(slot)
                    return
            finally:
                slot.respawning = False

        task = asyncio.create_task(go())
        self._respawns.add(task)
        task.add_done_callback(self._respawns.discard)

    def count_restarts(self, n: int, reason: str) -> None:
        """Interpreter replacements done inside a process (reported by host.js)."""
        self._restarts += n
        self._interpreter_restarts += n
        self._last_restart_reason = reason

    async def close(self) -> None:
        """Kill every sandbox process; the pool can be started again afterwards."""
        self._closing = True
        for task in list(self._respawns):
            task.cancel()
        for slot in self._slots:
            await slot.kill()
        for w in self._waiters:
            if not w.fut.done():
                w.fut.cancel()
        self._waiters.clear()
        self._slots = []
        self._started = False
        if self.sock_dir != Path("."):
            shutil.rmtree(self.sock_dir, ignore_errors=True)

    def health(self) -> dict[str, Any]:
        """Pool status for the server's health endpoint (cheap, never blocks; no owner ids).

        Example:
            >>> WorkerPool(SandboxSettings(cache_dir=Path("/nonexistent"))).health()["started"]
            False
        """
        s = self.settings
        return {
            "installed": is_installed(s),
            "started": self._started,
            "pool_size": s.pool_size,
            "workers": sum(1 for sl in self._slots if sl.alive),
            "busy": sum(1 for sl in self._slots if sl.busy),
            "warm_interpreters": sum(len(sl.warm) for sl in self._slots if sl.alive),
            "interpreters_per_worker": s.interpreters_per_worker,
            "runs": self._runs,
            "restarts": self._restarts,
            "process_restarts": self._process_restarts,
            "interpreter_restarts": self._interpreter_restarts,
            "last_restart_reason": self._last_restart_reason,
            "errors": dict(self._errors),
            "cold_start_ms": round(self._cold_start_ms, 1),
            "rss_mb": [
                round(_rss_mb(sl.proc.pid), 1) for sl in self._slots if sl.alive and sl.proc
            ],
            "pyodide_version": s.pyodide_version,
            "packages": list(s.packages) if s.package_index_url else [],
        }

    async def __aenter__(self) -> WorkerPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = ["Runner", "WorkerPool", "owner_key", "runtime_dir"]
