"""Fetching Pyodide from the npm registry into the cache and building the memory snapshot.

Everything lives under ``settings.cache_dir``::

    deno/                       DENO_DIR (npm:pyodide@<version> after install)
    runtime/<version>-<hash>/   the JS scripts the workers run (written by the host)
    snapshot-<version>-<hash>.bin   Pyodide memory snapshot (workers boot from it in ~0.3 s)
    packages/                   Pyodide packages fetched by the host, verified (packages.py)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import replace
from importlib import resources
from pathlib import Path

from .errors import SandboxError
from .settings import SandboxSettings

RUNTIME_FILES = ("host.js", "py_worker.js", "js_worker.js", "fetch.js", "snapshot.js")
#: stdlib modules imported before the snapshot is taken (so runs do not pay for them)
PRELOAD = (
    "json",
    "asyncio",
    "traceback",
    "re",
    "math",
    "datetime",
    "collections",
    "itertools",
    "functools",
    "typing",
    "dataclasses",
    "random",
    "string",
    "base64",
    "hashlib",
    "uuid",
    "time",
    "decimal",
    "statistics",
    "textwrap",
    "copy",
    "inspect",
    "io",
    "warnings",
    "atexit",
    # what pyodide.loadPackage imports: installing numpy/pandas costs no extra import time
    "zipfile",
    "tarfile",
    "email",
    "importlib.metadata",
    "encodings.cp437",
)


def absolute(settings: SandboxSettings) -> SandboxSettings:
    """``settings`` with absolute ``cache_dir``/``wheelhouse`` (processes run elsewhere)."""
    wheelhouse = Path(settings.wheelhouse).expanduser().resolve() if settings.wheelhouse else None
    return replace(
        settings,
        cache_dir=Path(settings.cache_dir).expanduser().resolve(),
        wheelhouse=wheelhouse,
    )


def deno_bin() -> str:
    """Path of the Deno executable shipped by the ``deno`` PyPI package.

    Example:
        >>> Path(deno_bin()).name
        'deno'
    """
    try:
        from deno import find_deno_bin

        return str(find_deno_bin())
    except Exception:  # pragma: no cover - only without the deno package
        found = shutil.which("deno")
        if not found:
            raise SandboxError("not_installed", "deno executable not found") from None
        return found


def _read(name: str) -> str:
    return (resources.files(__package__) / "runtime" / name).read_text(encoding="utf-8")


def prelude_source() -> str:
    """The Python runner executed inside every Pyodide worker."""
    return _read("prelude.py")


def _runtime_sources(settings: SandboxSettings) -> dict[str, str]:
    return {
        name: _read(name).replace("__PYODIDE_VERSION__", settings.pyodide_version)
        for name in RUNTIME_FILES
    }


def _digest(texts: list[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def deno_dir(settings: SandboxSettings) -> Path:
    """DENO_DIR used by every sandbox process."""
    return Path(settings.cache_dir) / "deno"


def pyodide_dir(settings: SandboxSettings) -> Path:
    """Where Deno unpacks ``npm:pyodide@<version>``."""
    return deno_dir(settings) / "npm" / "registry.npmjs.org" / "pyodide" / settings.pyodide_version


def runtime_dir(settings: SandboxSettings) -> Path:
    """Directory holding the worker scripts for this package + Pyodide version."""
    srcs = _runtime_sources(settings)
    key = _digest([srcs[n] for n in RUNTIME_FILES])
    return Path(settings.cache_dir) / "runtime" / f"{settings.pyodide_version}-{key}"


def snapshot_path(settings: SandboxSettings) -> Path:
    """The memory snapshot file for this Pyodide version and preload list."""
    key = _digest([",".join(PRELOAD), _runtime_sources(settings)["snapshot.js"]])
    return Path(settings.cache_dir) / f"snapshot-{settings.pyodide_version}-{key}.bin"


def write_runtime(settings: SandboxSettings) -> Path:
    """Write the worker scripts into the cache (idempotent); returns their directory."""
    target = runtime_dir(settings)
    srcs = _runtime_sources(settings)
    if all((target / n).is_file() and (target / n).read_text() == srcs[n] for n in srcs):
        return target
    target.mkdir(parents=True, exist_ok=True)
    for name, text in srcs.items():
        tmp = target / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target / name)
    return target


def _install_env(settings: SandboxSettings) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"DENO_DIR": str(deno_dir(settings)), "NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1"})
    return env


def _tail(text: str, n: int = 1500) -> str:
    return text.strip()[-n:]


def is_installed(settings: SandboxSettings) -> bool:
    """True when Pyodide and the memory snapshot are in the cache (no I/O beyond stat).

    Example:
        >>> is_installed(SandboxSettings(cache_dir=Path("/nonexistent")))
        False
    """
    return (pyodide_dir(settings) / "pyodide.asm.wasm").is_file() and snapshot_path(
        settings
    ).is_file()


def install_pyodide(settings: SandboxSettings, *, timeout: float = 600.0) -> Path:
    """Cache ``npm:pyodide@<version>`` and build the memory snapshot; returns the cache dir.

    Needs the npm registry once; afterwards the sandbox runs with ``--cached-only``.
    Raises :class:`SandboxError` (type ``not_installed``) when the download fails.

    Example:
        >>> install_pyodide(SandboxSettings(cache_dir=Path("~/.local/share/coze_lab/sandbox")))
        ... # doctest: +SKIP
    """
    settings = absolute(settings)
    cache = settings.cache_dir
    cache.mkdir(parents=True, exist_ok=True)
    rt = write_runtime(settings)
    env = _install_env(settings)
    deno = deno_bin()
    common = ["--no-config", "--no-lock", "--node-modules-dir=none", "--quiet"]
    if not (pyodide_dir(settings) / "pyodide.asm.wasm").is_file():
        proc = subprocess.run(
            [deno, "cache", *common, str(rt / "fetch.js")],
            env=env,
            cwd=cache,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0 or not (pyodide_dir(settings) / "pyodide.asm.wasm").is_file():
            raise SandboxError(
                "not_installed",
                f"could not fetch npm:pyodide@{settings.pyodide_version}: "
                + _tail(proc.stderr or proc.stdout),
            )
    snap = snapshot_path(settings)
    if not snap.is_file():
        tmp = snap.with_suffix(".tmp")
        proc = subprocess.run(
            [
                deno,
                "run",
                *common,
                "--cached-only",
                "--no-prompt",
                f"--allow-read={cache}",
                f"--allow-write={cache}",
                str(rt / "snapshot.js"),
                str(tmp),
                ",".join(PRELOAD),
            ],
            env=env,
            cwd=cache,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0 or not tmp.is_file():
            raise SandboxError(
                "not_installed", "could not build the Pyodide snapshot: " + _tail(proc.stderr)
            )
        tmp.replace(snap)
    return cache
