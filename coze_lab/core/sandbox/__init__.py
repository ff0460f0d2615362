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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import ERROR_TYPES, RunResult, SandboxError
    from .install import install_pyodide, is_installed
    from .mounts import Mount
    from .pool import Runner, WorkerPool
    from .settings import PYODIDE_VERSION, SandboxSettings

#: name → the module it lives in: imported on first use, so that reading the settings (as
#: the configuration does when a Jupyter server starts) does not load the worker pool
_LAZY = {
    "ERROR_TYPES": "errors",
    "RunResult": "errors",
    "SandboxError": "errors",
    "install_pyodide": "install",
    "is_installed": "install",
    "Mount": "mounts",
    "Runner": "pool",
    "WorkerPool": "pool",
    "PYODIDE_VERSION": "settings",
    "SandboxSettings": "settings",
}

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


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
