"""Settings of the code sandbox (a plain dataclass: core code does not import traitlets)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

PYODIDE_VERSION = "0.29.3"


@dataclass(frozen=True)
class SandboxSettings:
    """Everything the sandbox pool needs to know.

    ``allow_*`` are Deno permission lists (empty = denied); the sandbox always gets read-only
    access to ``cache_dir`` (Pyodide + snapshot) and ``wheelhouse``, nothing else by default.

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
    package_index_url: str | None = None
    pyodide_version: str = PYODIDE_VERSION
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
