"""A fake code-node ``Runner`` for engine tests that are not about the sandbox.

It runs Python code nodes in a child ``python -I`` process (no Deno, no Pyodide), with the
sandbox's contract (``def main(args)`` with ``args.params``, or an ``entry`` function taking
the inputs as keywords), its error types (``user_error``, ``invalid_result``, ``timeout``)
and a kill on timeout or cancel. It isolates nothing: never use it outside tests. The real
sandbox is tested on its own (``tests/core/sandbox``).

Example:
    >>> import asyncio
    >>> code = "def main(args):\\n    return {'y': args.params['x'] * 2}"
    >>> asyncio.run(FakeRunner().run(code, {"x": 21})).output
    {'y': 42}
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from typing import Any

from coze_lab.core.sandbox.errors import RunResult

_CHILD = r"""
import json, sys, traceback, types, inspect, asyncio
job = json.loads(sys.stdin.read())
scope = {"__name__": "__coze_lab_node__"}
try:
    exec(compile(job["code"], "<code node>", "exec"), scope)
    if job["entry"]:
        result = scope[job["entry"]](**job["params"])
    else:
        result = scope["main"](types.SimpleNamespace(params=job["params"]))
    if inspect.isawaitable(result):
        result = asyncio.run(result)
except BaseException as exc:
    tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
    print(json.dumps({"error": ["user_error", tail]}))
    sys.exit(0)
if not isinstance(result, dict):
    print(json.dumps({"error": ["invalid_result", "the code must return a dict"]}))
else:
    try:
        print(json.dumps({"output": result}))
    except (TypeError, ValueError) as exc:
        print(json.dumps({"error": ["invalid_result", f"the result is not JSON: {exc}"]}))
"""


class FakeRunner:
    """``Runner`` stand-in: Python code nodes in a child CPython process (tests only)."""

    def __init__(self, timeout_s: float = 10.0) -> None:
        self.timeout_s = timeout_s
        self.runs = 0

    async def start(self) -> None:
        """Nothing to prepare."""

    async def run(
        self,
        code: str,
        params: dict[str, Any],
        *,
        language: str = "python",
        entry: str | None = None,
        timeout: float | None = None,
        owner: str | None = None,
        mounts: Any = None,
    ) -> RunResult:
        """``owner`` and ``mounts`` are accepted and ignored (a fresh process per run)."""
        started = time.perf_counter()
        if language != "python":
            return RunResult.failure("invalid_input", "the fake runner runs Python only")
        self.runs += 1
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-c",
            _CHILD,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        job = json.dumps({"code": code, "params": params, "entry": entry}).encode()
        limit = timeout or self.timeout_s
        try:
            out, err = await asyncio.wait_for(proc.communicate(job), limit)
        except asyncio.TimeoutError:
            return RunResult.failure("timeout", f"execution exceeded {limit} s", _ms(started))
        finally:
            if proc.returncode is None:  # timed out or cancelled: never leave it spinning
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        lines = out.decode().strip().splitlines()
        try:
            answer = json.loads(lines[-1])
        except (IndexError, ValueError):
            return RunResult.failure("worker_crashed", err.decode()[-500:], _ms(started))
        if "error" in answer:
            return RunResult.failure(*answer["error"], duration_ms=_ms(started))
        stdout = "\n".join(lines[:-1])
        return RunResult(answer["output"], stdout=stdout, duration_ms=_ms(started))

    async def close(self) -> None:
        """Nothing to release."""

    def health(self) -> dict[str, Any]:
        return {
            "installed": True,
            "started": True,
            "workers": 0,
            "busy": 0,
            "runs": self.runs,
            "restarts": 0,
            "pyodide_version": "none (fake runner)",
        }


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
