"""Settings of the code sandbox (a plain dataclass: core code does not import traitlets)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

PYODIDE_VERSION = "0.29.3"


@dataclass(frozen=True)
class SandboxSettings:
    """Everything the sandbox pool needs to know.

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
    extra: dict[str, str] = field(default_factory=dict)
