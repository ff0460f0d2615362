"""Session workspaces: a folder per conversation a data scientist can open.

Each session (a conversation) gets ``<root>/<space id>/<session id>/`` with three folders:
``input/`` (files uploaded to the chat land here), ``scratchpad/`` and ``output/``. Callers
name files by **logical paths** such as ``input/sales.csv``; :meth:`SessionWorkspace.resolve`
turns one into a host path only when it stays inside the session: no ``..``, no absolute
paths, no control characters or backslashes, no symlink at any level, and no file with more
than one hard link (which could be the same file as one outside the session).

Writes go to a temporary file beside the target and are renamed over it, so a write never
goes *through* a link.

Example:
    >>> import tempfile
    >>> ws = WorkspaceRoot(Path(tempfile.mkdtemp())).session(1, 2)
    >>> ws.write("output/summary.md", b"# Summary\\n").name
    'summary.md'
    >>> ws.read("output/summary.md")
    b'# Summary\\n'
    >>> ws.resolve("../../etc/passwd")
    Traceback (most recent call last):
    coze_lab.core.errors.InvalidParameter: path '../../etc/passwd' leaves the session workspace
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from coze_lab.core.errors import InvalidParameter, NotFound

#: the folders of every session workspace
FOLDERS = ("input", "scratchpad", "output")
MAX_PATH_CHARS = 1024
_PART_CHARS = 255


class WorkspaceRoot:
    """The folder holding every session's workspace (``<space>/<session>/``)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def session(self, space_id: int, session_id: int) -> SessionWorkspace:
        """The workspace of one session (a conversation), its three folders created."""
        return self._open(space_id, session_id, str(session_id))

    def run(self, space_id: int, run_id: int) -> SessionWorkspace:
        """The workspace of a workflow run that asked for one: ``<space>/run-<id>/``.

        Example:
            >>> import tempfile
            >>> WorkspaceRoot(Path(tempfile.mkdtemp())).run(1, 42).root.name
            'run-42'
        """
        return self._open(space_id, run_id, f"run-{run_id}")

    def _open(self, space_id: int, session_id: int, name: str) -> SessionWorkspace:
        if not isinstance(space_id, int) or not isinstance(session_id, int):
            raise InvalidParameter("workspace space and session ids must be integers")
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root
        for part in (str(space_id), name):
            path = path / part
            _real_dir(path, create=True)
        workspace = SessionWorkspace(path)
        for folder in FOLDERS:
            _real_dir(path / folder, create=True)
        return workspace


class SessionWorkspace:
    """One session's ``input/``, ``scratchpad/`` and ``output/``, reached by logical paths."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def resolve(self, logical: object, *, must_exist: bool = False) -> Path:
        """The host path of ``logical``; ``InvalidParameter`` when it would leave the session.

        Example:
            >>> SessionWorkspace(Path("/s")).resolve("input/a.csv")   # doctest: +SKIP
            PosixPath('/s/input/a.csv')
        """
        parts = _parts(logical)
        current = self.root
        _real_dir(current, create=False, logical=str(logical))
        for part in parts[:-1]:
            current = current / part
            _real_dir(current, create=False, logical=str(logical))
        target = current / parts[-1]
        inside = os.path.realpath(self.root)
        if os.path.commonpath([inside, os.path.realpath(target.parent)]) != inside:
            raise InvalidParameter(f"path {logical!r} leaves the session workspace")
        try:
            st = target.lstat()
        except FileNotFoundError:
            if must_exist:
                raise NotFound(f"{logical} does not exist in this session's workspace") from None
            return target
        if stat.S_ISLNK(st.st_mode):
            raise InvalidParameter(f"path {logical!r} is a symlink; symlinks are not followed")
        if not stat.S_ISREG(st.st_mode):
            raise InvalidParameter(f"path {logical!r} is not a regular file")
        if st.st_nlink > 1:
            raise InvalidParameter(
                f"path {logical!r} is a hard link shared with another file; it is not used"
            )
        return target

    def list(self, folder: str | None = None) -> list[tuple[str, int]]:
        """``(logical path, size)`` of every regular file (in ``folder`` when given), sorted;
        symlinks and what lies behind them are skipped."""
        if folder is not None and folder.strip("/") not in FOLDERS:
            raise InvalidParameter(f"folder must be one of {', '.join(FOLDERS)}")
        folders = [folder.strip("/")] if folder else list(FOLDERS)
        found: list[tuple[str, int]] = []
        for name in folders:
            top = self.root / name
            _real_dir(top, create=True)
            for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
                dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
                for file_name in filenames:
                    path = Path(dirpath) / file_name
                    st = path.lstat()
                    if not stat.S_ISREG(st.st_mode) or file_name.endswith(".coze-tmp"):
                        continue
                    found.append((path.relative_to(self.root).as_posix(), st.st_size))
        return sorted(found)

    def read(self, logical: str) -> bytes:
        path = self.resolve(logical, must_exist=True)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            return fh.read()

    def write(self, logical: str, data: bytes) -> Path:
        """Write ``data`` to ``logical`` (``scratchpad/`` or ``output/``; ``input/`` is for
        uploads, see :meth:`add_input`)."""
        if _parts(logical)[0] == "input":
            raise InvalidParameter("input/ is read-only: write to scratchpad/ or output/")
        return self._write(logical, lambda fh: fh.write(data))

    def add_input(self, file_name: str, source: Path) -> Path:
        """Copy an uploaded file to ``input/<file_name>`` (a newer upload replaces it)."""
        logical = f"input/{file_name}"
        if len(_parts(logical)) != 2:
            raise InvalidParameter(f"file name {file_name!r} must not contain a path")
        fd = os.open(source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as src:
            return self._write(logical, lambda fh: shutil.copyfileobj(src, fh))

    def _write(self, logical: str, fill: object) -> Path:
        target = self.resolve(logical)
        parts = _parts(logical)
        current = self.root
        for part in parts[:-1]:  # the folder, then any sub-folders below it
            current = current / part
            _real_dir(current, create=True, logical=logical)
        tmp = target.parent / f".{target.name}.coze-tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, flags, 0o644)
        try:
            with os.fdopen(fd, "wb") as fh:
                fill(fh)  # type: ignore[operator]
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return target


def _parts(logical: object) -> list[str]:
    if not isinstance(logical, str) or not logical:
        raise InvalidParameter("a workspace path is missing")
    if len(logical) > MAX_PATH_CHARS:
        raise InvalidParameter(f"workspace path exceeds {MAX_PATH_CHARS} characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in logical) or "\\" in logical:
        raise InvalidParameter(f"path {logical!r} contains control characters or backslashes")
    if logical.startswith("/") or (len(logical) > 1 and logical[1] == ":"):
        raise InvalidParameter(
            f"path {logical!r} is absolute; use a logical path such as input/sales.csv"
        )
    parts = logical.split("/")
    if any(part in ("..", ".") for part in parts):
        raise InvalidParameter(f"path {logical!r} leaves the session workspace")
    if any(part == "" or len(part) > _PART_CHARS for part in parts):
        raise InvalidParameter(f"path {logical!r} has an empty or too long part")
    if parts[0] not in FOLDERS or len(parts) < 2:
        raise InvalidParameter(
            f"path {logical!r} must be a file under {', '.join(f + '/' for f in FOLDERS)}"
        )
    return parts


def _real_dir(path: Path, *, create: bool, logical: str = "") -> None:
    """``path`` is a directory and not a symlink (created when missing and ``create``)."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        if not create:
            return  # resolved for writing: created by the write
        path.mkdir()
        st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        where = f"path {logical!r}" if logical else f"workspace folder {path}"
        raise InvalidParameter(f"{where} goes through a symlink; symlinks are not followed")
    if not stat.S_ISDIR(st.st_mode):
        raise InvalidParameter(f"{path.name} in the workspace is not a folder")
