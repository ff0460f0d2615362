"""Settings of the code sandbox (a plain dataclass: core code does not import traitlets)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

PYODIDE_VERSION = "0.29.3"
#: the official Pyodide package index (CDN) for a Pyodide version
CDN_INDEX_URL = "https://cdn.jsdelivr.net/pyodide/v{version}/full/"
#: packages code nodes may import by default (their dependencies are allowed with them)
DEFAULT_PACKAGES = ("numpy", "pandas")


def default_index_url(version: str = PYODIDE_VERSION) -> str:
    """The official Pyodide CDN index of ``version``.

    Example:
        >>> default_index_url("0.29.3")
        'https://cdn.jsdelivr.net/pyodide/v0.29.3/full/'
    """
    return CDN_INDEX_URL.format(version=version)


@dataclass(frozen=True)
class SandboxSettings:
    """Everything the sandbox pool needs to know.

    ``allow_*`` are Deno permission lists (empty = denied); the sandbox always gets read-only
    access to ``cache_dir`` (Pyodide + snapshot) and ``wheelhouse``, nothing else by default.

    Packages: the host (never the code) fetches the ``packages`` a code node imports (and
    their dependencies) from ``package_index_url`` (a Pyodide package index: the official
    CDN by default; ``None`` turns packages off), checks them against the index's
    ``pyodide-lock.json`` and keeps them in ``<cache_dir>/packages``.

    Example:
        >>> SandboxSettings(cache_dir=Path("/tmp/cl/sandbox")).pool_size
        2
    """

    cache_dir: Path
    pool_size: int = 2
    timeout_s: float = 10.0
    memory_limit_mb: int = 1024
    max_output_bytes: int = 1_000_000
    max_result_bytes: int = 4_000_000
    allow_net: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()
    allow_write: tuple[str, ...] = ()
    allow_env: tuple[str, ...] = ()
    allow_run: tuple[str, ...] = ()
    allow_ffi: tuple[str, ...] = ()
    wheelhouse: Path | None = None
    package_index_url: str | None = field(default_factory=default_index_url)
    #: Pyodide packages code nodes may import (dependencies come with them)
    packages: tuple[str, ...] = DEFAULT_PACKAGES
    #: seconds the host waits for the package index (lock file, each package)
    package_fetch_timeout_s: float = 60.0
    pyodide_version: str = PYODIDE_VERSION
    #: warm Python interpreters per process, each bound to one owner (plus one fresh spare)
    interpreters_per_worker: int = 3
    #: a run waits this long for the busy process that has its owner's interpreter before
    #: it takes another process (where it binds a fresh interpreter)
    affinity_wait_s: float = 0.5
    #: caps of workspace mounts (per run and direction): bytes and files
    mount_max_bytes: int = 64_000_000
    mount_max_files: int = 2000
    #: after the interrupt (KeyboardInterrupt) the run gets this long before the worker is killed
    grace_s: float = 1.0
    #: how often the pool samples worker RSS while a run is in flight
    memory_poll_s: float = 0.05
    #: a worker whose RSS stays above this fraction of the limit after a run is replaced
    recycle_rss_fraction: float = 0.75
    #: replace the Python interpreter after this many runs (0 = only when tainted; 1 = always)
    max_runs_per_worker: int = 0
    startup_timeout_s: float = 60.0
    #: fetch Pyodide from the npm registry on first use when it is not cached
    auto_install: bool = True
    extra: dict[str, str] = field(default_factory=dict)
