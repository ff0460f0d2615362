"""Memory as files: ``<root>/<space id>/<user id>/user.md`` and ``skills/<name>.md``.

The database holds the memory; a folder under the Jupyter root mirrors it so the user can
open and edit it in JupyterLab. :meth:`MemoryMirror.sync` reconciles both, clock-free: a
hidden ``.sync.json`` keeps the hash of what each file held when last synced, so

- a file whose content changed since then was **edited by the user**: it is imported;
- a file the user deleted (it was in sync before) deletes that document;
- otherwise the database wins: a missing or stale file is (re)written, a file whose
  document was deleted elsewhere is removed.

A file edited into anything (binary, huge) is read as text: UTF-8 with replacement
characters, cut to the document limit. Symlinks are never followed and files with more
than one hard link never read; writes go to a temporary file renamed over the target.

Example:
    >>> import tempfile
    >>> mirror = MemoryMirror(Path(tempfile.mkdtemp()))
    >>> mirror.sync(1, 2, {"user.md": "- Name is Ada\\n"})
    {}
    >>> (mirror.folder(1, 2) / "user.md").read_text()
    '- Name is Ada\\n'
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from coze_lab.core.memory.documents import (
    MAX_DOCUMENT_CHARS,
    MAX_SKILLS,
    SKILLS_DIR,
    USER_PATH,
    as_text,
    content_hash,
    skill_name,
)

log = logging.getLogger("coze_lab.memory")
STATE = ".sync.json"
LOCK = ".sync.lock"


class MemoryMirror:
    """The folder of memory files of every user and space under ``root``."""

    def __init__(self, root: Path | str, *, max_chars: int = MAX_DOCUMENT_CHARS) -> None:
        self.root = Path(root)
        self.max_chars = max_chars

    def folder(self, owner_id: int, space_id: int) -> Path:
        return self.root / str(int(space_id)) / str(int(owner_id))

    def sync(
        self, owner_id: int, space_id: int, documents: Mapping[str, str]
    ) -> dict[str, str | None]:
        """Bring files and ``documents`` (the database's: path → content) together; the
        edits found in files come back (path → new content, None: deleted) for the caller
        to store. Files the database wins are written here."""
        folder = self.folder(owner_id, space_id)
        with self._locked(folder):
            state = self._state(folder)
            files = self._scan(folder)
            edits: dict[str, str | None] = {}
            kept: dict[str, str] = {}
            for path in sorted({*documents, *files, *state}):
                text, synced = files.get(path), state.get(path)
                stored = documents.get(path)
                file_hash = None if text is None else content_hash(text)
                if text is not None and file_hash != synced and (synced or stored is None):
                    edits[path] = text if text.strip() or path == USER_PATH else None
                    if edits[path] is not None:
                        kept[path] = file_hash or ""
                    else:
                        self._remove(folder, path)
                elif text is None and stored is not None and synced == content_hash(stored):
                    edits[path] = None  # the user deleted the file
                elif stored is None:
                    if text is not None:
                        self._remove(folder, path)  # deleted in the database
                else:
                    if file_hash != content_hash(stored):
                        self._write(folder, path, stored)
                    kept[path] = content_hash(stored)
            self._save_state(folder, kept)
        return edits

    def forget(self, owner_id: int, space_id: int, path: str) -> None:
        """Remove one document's file (it was deleted through the API)."""
        folder = self.folder(owner_id, space_id)
        with self._locked(folder):
            self._remove(folder, path)
            state = self._state(folder)
            state.pop(path, None)
            self._save_state(folder, state)

    # ---- internals ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self, folder: Path) -> Iterator[None]:
        _real_dirs(self.root, folder / SKILLS_DIR)
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _scan(self, folder: Path) -> dict[str, str]:
        found: dict[str, str] = {}
        candidates = [USER_PATH]
        with contextlib.suppress(OSError):
            names = sorted(os.listdir(folder / SKILLS_DIR))
            candidates += [f"{SKILLS_DIR}/{n}" for n in names if skill_name(f"{SKILLS_DIR}/{n}")]
        for path in candidates[: MAX_SKILLS + 1]:
            text = self._read(folder / path)
            if text is not None:
                found[path] = text
        return found

    def _read(self, target: Path) -> str | None:
        try:
            fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:  # missing, or a symlink (never followed)
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
                return None  # a hard link could be a file from elsewhere: never read
            with os.fdopen(fd, "rb", closefd=False) as handle:
                return as_text(handle.read(self.max_chars * 4), self.max_chars)
        finally:
            os.close(fd)

    def _write(self, folder: Path, path: str, text: str) -> None:
        target = folder / path
        temp = target.with_name(f".{target.name}.coze-tmp")
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        os.replace(temp, target)

    def _remove(self, folder: Path, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (folder / path).unlink()

    def _state(self, folder: Path) -> dict[str, str]:
        text = self._read(folder / STATE)
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}

    def _save_state(self, folder: Path, state: Mapping[str, str]) -> None:
        self._write(folder, STATE, json.dumps(dict(sorted(state.items())), indent=0))


def _real_dirs(root: Path, leaf: Path) -> None:
    """Create ``leaf`` under ``root``, refusing a symlink at any level below the root."""
    root.mkdir(parents=True, exist_ok=True)
    current = root
    for part in leaf.relative_to(root).parts:
        current = current / part
        try:
            st = current.lstat()
        except FileNotFoundError:
            current.mkdir()
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise OSError(f"{current} is not a real folder")
