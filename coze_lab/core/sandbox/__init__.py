"""Code-node sandbox: Python (Pyodide) and JavaScript in warm, permission-less Deno workers.

Example:
    >>> import asyncio
    >>> from pathlib import Path
    >>> async def demo() -> dict:
    ...     async with WorkerPool(SandboxSettings(cache_dir=Path("/tmp/cl/sandbox"))) as pool:
    ...         res = await pool.run("def main(args):\\n    return {'y': args.params['x'] * 2}",
    ...                              {"x": 21})
    ...         return res.to_dict()
    >>> asyncio.run(demo())["output"]  # doctest: +SKIP
    {'y': 42}
"""

from .errors import ERROR_TYPES, RunResult, SandboxError
from .install import install_pyodide, is_installed
from .mounts import Mount
from .pool import Runner, WorkerPool
from .settings import PYODIDE_VERSION, SandboxSettings

__all__ = [
    "ERROR_TYPES",
    "PYODIDE_VERSION",
    "Mount",
    "RunResult",
    "Runner",
    "SandboxError",
    "SandboxSettings",
    "WorkerPool",
    "install_pyodide",
    "is_installed",
]
