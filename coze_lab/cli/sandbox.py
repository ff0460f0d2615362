"""``coze-lab sandbox install`` and ``coze-lab sandbox run FILE`` (debug a code node).

Example:
    $ coze-lab sandbox install
    $ coze-lab sandbox run node.py --params '{"a": 1}'
    {"output": {...}, "stdout": "", "stderr": "", "error": null, "duration_ms": 3.1}
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from coze_lab.cli._common import load_config
from coze_lab.core.sandbox import (
    RunResult,
    SandboxError,
    SandboxSettings,
    WorkerPool,
    install_pyodide,
    is_installed,
)


def _settings(args: argparse.Namespace, **overrides: Any) -> SandboxSettings:
    """The configured sandbox (``--data-dir``, ``COZE_LAB_SANDBOX_*``), with ``overrides``."""
    return dataclasses.replace(load_config(args).sandbox_settings(), **overrides)


def cmd_install(args: argparse.Namespace) -> int:
    """Fetch Pyodide into the cache and build the snapshot."""
    settings = _settings(args)
    try:
        path = install_pyodide(settings)
    except SandboxError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    print(f"Pyodide {settings.pyodide_version} cached in {path}")
    return 0


def _guess_language(path: Path, explicit: str | None) -> str:
    if explicit:
        return explicit
    return "javascript" if path.suffix in (".js", ".mjs", ".ts") else "python"


def cmd_run(args: argparse.Namespace) -> int:
    """Run a code-node file once in the sandbox and print the JSON result."""
    path = Path(args.file)
    try:
        code = path.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"error: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    try:
        params = json.loads(args.params) if args.params else {}
    except json.JSONDecodeError as exc:
        print(f"error: --params is not JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(params, dict):
        print("error: --params must be a JSON object", file=sys.stderr)
        return 2
    kw: dict[str, Any] = {"pool_size": 1}
    if args.timeout is not None:
        kw["timeout_s"] = args.timeout
    settings = _settings(args, **kw)

    async def go() -> RunResult:
        pool = WorkerPool(settings)
        try:
            return await pool.run(
                code, params, language=_guess_language(path, args.language), entry=args.entry
            )
        finally:
            await pool.close()

    result = asyncio.run(go())
    print(json.dumps(result.to_dict(), ensure_ascii=False, indent=None if args.compact else 2))
    return 0 if result.ok else 1


def cmd_status(args: argparse.Namespace) -> int:
    """Print whether Pyodide is cached."""
    settings = _settings(args)
    info = {
        "installed": is_installed(settings),
        "cache_dir": str(settings.cache_dir),
        "pyodide_version": settings.pyodide_version,
        "package_index_url": settings.package_index_url,
        "packages": list(settings.packages),
    }
    print(json.dumps(info, indent=2))
    return 0 if info["installed"] else 1


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``sandbox {install,run,status}`` to the top-level ``add_subparsers()`` result."""
    p = subparsers.add_parser("sandbox", help="code-node sandbox (Deno + Pyodide)")
    sub = p.add_subparsers(dest="sandbox_command", metavar="{install,run,status}")
    sub.required = True
    pi = sub.add_parser("install", help="cache Pyodide from the npm registry (once)")
    pi.set_defaults(func=cmd_install)
    pr = sub.add_parser("run", help="run a code-node file and print {output, stdout, ...}")
    pr.add_argument("file", help="Python (main(args)) or JavaScript code-node source")
    pr.add_argument("--params", default=None, help="node inputs as a JSON object")
    pr.add_argument("--timeout", type=float, default=None, help="wall-clock limit in seconds")
    pr.add_argument("--language", choices=("python", "javascript"), default=None)
    pr.add_argument(
        "--entry", default=None, help="call this function with the params as keyword arguments"
    )
    pr.add_argument("--compact", action="store_true", help="one-line JSON")
    pr.set_defaults(func=cmd_run)
    ps = sub.add_parser("status", help="is Pyodide cached?")
    ps.set_defaults(func=cmd_status)
    return p
