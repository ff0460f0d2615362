"""Workspace mounts of a code node: host folders copied into the sandbox and back.

A mount maps a logical folder name (``input``, ``scratchpad``, ``output``) to a host folder.
Before the run the pool copies the folder's regular files into the interpreter's in-memory
file system under that name (relative to the code's working directory, so
``open("input/sales.csv")`` works); read-only mounts are read-only in there too. After the
run, files the code created or changed under *writable* mounts are copied back to the host
folder. The sandbox never gets a permission on the host folders: nothing but the copied files
goes in, and nothing but regular files inside writable mounts comes out.

Copy-in follows no symlinks and copy-out writes only below the mount's host folder (no
``..``, no absolute paths, never through a symlink); both are capped in bytes and files.
Files deleted by the code are not deleted on the host.

Example:
    >>> m = Mount("/tmp/session/input")
    >>> m.read_only, m.path.name
    (True, 'input')
"""

from __future__ import annotations

import base64
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import SandboxError

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
_PART = re.compile(r"^[^\x00-\x1f/\\]{1,255}$")


@dataclass(frozen=True)
class Mount:
    """A host folder shown to a code node (``read_only`` unless said otherwise)."""

    path: Path | str
    read_only: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))


MountsArg = Mapping[str, "Mount | tuple[Path | str, bool] | Path | str"]


def normalize(mounts: MountsArg | None) -> dict[str, Mount]:
    """``{name: Mount}`` from what callers pass; bad names raise ``invalid_input``.

    Example:
        >>> m = normalize({"input": "/tmp/in", "output": ("/tmp/out", False)})
        >>> [(name, str(x.path), x.read_only) for name, x in sorted(m.items())]
        [('input', '/tmp/in', True), ('output', '/tmp/out', False)]
    """
    out: dict[str, Mount] = {}
    for name, spec in (mounts or {}).items():
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name in (".", ".."):
            raise SandboxError(
                "invalid_input", f"mount name must be a plain folder name, got {name!r}"
            )
        if isinstance(spec, Mount):
            mount = spec
        elif isinstance(spec, tuple):
            mount = Mount(Path(spec[0]), bool(spec[1]))
        else:
            mount = Mount(Path(spec))
        out[name] = mount
    return out


def _safe_rel(rel: str) -> list[str] | None:
    parts = rel.split("/")
    if not parts or any(p in ("", ".", "..") or not _PART.fullmatch(p) for p in parts):
        return None
    return parts


def read_in(mounts: dict[str, Mount], max_bytes: int, max_files: int) -> list[dict[str, Any]]:
    """The job's ``mounts`` field: every regular file below each host folder, base64."""
    total = files = 0
    job = []
    for name, mount in mounts.items():
        root = mount.path
        entries: list[dict[str, str]] = []
        if root.is_dir() and not root.is_symlink():
            for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
                for fname in sorted(filenames):
                    path = Path(dirpath) / fname
                    try:
                        st = path.lstat()
                    except OSError:
                        continue
                    if not stat.S_ISREG(st.st_mode):
                        continue  # symlinks, fifos, sockets: never followed or read
                    rel = path.relative_to(root).as_posix()
                    if _safe_rel(rel) is None:
                        continue
                    files += 1
                    total += st.st_size
                    if files > max_files or total > max_bytes:
                        raise SandboxError(
                            "invalid_input",
                            f"mount {name!r} is too large for the sandbox "
                            f"(limit {max_files} files, {max_bytes} bytes)",
                        )
                    data = _read_nofollow(path)
                    entries.append({"path": rel, "b64": base64.b64encode(data).decode("ascii")})
        elif root.exists():
            raise SandboxError("invalid_input", f"mount {name!r} is not a folder")
        job.append({"name": name, "read_only": mount.read_only, "files": entries})
    return job


def _read_nofollow(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def write_out(
    mounts: dict[str, Mount], files: list[dict[str, Any]], max_bytes: int, max_files: int
) -> list[str]:
    """Write what the code produced below the writable mounts; returns ``name/rel`` paths.

    Everything is checked before anything is written, so a refused file writes nothing.
    """
    if len(files) > max_files:
        raise SandboxError("output_too_large", f"the code wrote more than {max_files} files")
    plan: list[tuple[Path, list[str], bytes, str]] = []
    total = 0
    for item in files:
        logical = str(item.get("path", ""))
        name, _, rel = logical.partition("/")
        mount = mounts.get(name)
        parts = _safe_rel(rel)
        if mount is None or mount.read_only or parts is None:
            raise SandboxError("invalid_result", f"a file outside the writable mounts: {logical!r}")
        data = base64.b64decode(str(item.get("b64", "")), validate=True)
        total += len(data)
        if total > max_bytes:
            raise SandboxError("output_too_large", f"the code wrote more than {max_bytes} bytes")
        plan.append((mount.path, parts, data, logical))
    written = []
    for root, parts, data, logical in plan:
        _write_below(root, parts, data)
        written.append(logical)
    return written


def _write_below(root: Path, parts: list[str], data: bytes) -> None:
    """Create ``root/parts...`` without following a symlink at any level."""
    root.mkdir(parents=True, exist_ok=True)
    if root.is_symlink():
        raise SandboxError("invalid_result", f"mount folder {root} is a symlink")
    cur = root
    for part in parts[:-1]:
        cur = cur / part
        try:
            st = cur.lstat()
        except FileNotFoundError:
            cur.mkdir()
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise SandboxError("invalid_result", f"cannot write below {cur}: not a folder")
    target = cur / parts[-1]
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise SandboxError("invalid_result", f"refusing to replace {target}: not a regular file")
    tmp = cur / f".{parts[-1]}.coze-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, target)


__all__ = ["Mount", "normalize", "read_in", "write_out"]
