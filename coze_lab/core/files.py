"""Uploaded files: streamed to disk under the data dir, owned by a user, sniffed for type."""

from __future__ import annotations

import hashlib
import mimetypes
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import filetype
from sqlalchemy import select

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import FileTooLarge, InvalidParameter, NotFound
from coze_lab.core.ids import new_id
from coze_lab.store import Database
from coze_lab.store.models import File

MAX_FILE_NAME = 255
_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class FileInfo:
    id: int
    user_id: int
    file_name: str
    bytes: int
    content_type: str
    sha256: str
    created_at: datetime


def valid_file_name(name: object) -> str:
    """A plain file name: no directories, no control characters, at most 255 characters.

    Example:
        >>> valid_file_name("report.pdf")
        'report.pdf'
        >>> valid_file_name("../etc/passwd")
        Traceback (most recent call last):
        coze_lab.core.errors.InvalidParameter: file name must not contain a path
    """
    if not isinstance(name, str) or not name or name.strip() in {"", ".", ".."}:
        raise InvalidParameter("file name is missing")
    if "/" in name or "\\" in name:
        raise InvalidParameter("file name must not contain a path")
    if len(name) > MAX_FILE_NAME or any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise InvalidParameter("file name is too long or contains control characters")
    return name


def sniff_content_type(head: bytes, file_name: str) -> str:
    """The content type from the bytes themselves, then the name, then text-or-binary."""
    kind = filetype.guess(head)
    if kind is not None:
        return kind.mime
    guessed, _ = mimetypes.guess_type(file_name)
    if guessed:
        return guessed
    if b"\x00" in head:
        return "application/octet-stream"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # only a multi-byte character cut by the sniff window is forgiven
        if len(head) < _SNIFF_BYTES or exc.start < len(head) - 3:
            return "application/octet-stream"
    return "text/plain"


class Upload:
    """One upload in progress: write chunks, then ``commit()`` or ``abort()``."""

    def __init__(self, store: FileStore, user_id: int, file_name: str) -> None:
        self._store = store
        self.user_id = user_id
        self.file_name = valid_file_name(file_name)
        self.size = 0
        self._head = bytearray()
        self._hash = hashlib.sha256()
        fd, path = tempfile.mkstemp(dir=store.tmp_dir, prefix="upload-")
        self._tmp = Path(path)
        self._fh = os.fdopen(fd, "wb")
        self._done = False

    def write(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self._store.max_bytes:
            self.abort()
            raise FileTooLarge(f"file exceeds the limit of {self._store.max_bytes} bytes")
        if len(self._head) < _SNIFF_BYTES:
            self._head += chunk[: _SNIFF_BYTES - len(self._head)]
        self._hash.update(chunk)
        self._fh.write(chunk)

    def commit(self) -> FileInfo:
        self._fh.close()
        if self.size == 0:
            self.abort()
            raise InvalidParameter("file is empty")
        file_id = new_id()
        key = f"{self.user_id}/{file_id}"
        target = self._store.root / key
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self._tmp, target)
        row = File(
            id=file_id,
            user_id=self.user_id,
            file_name=self.file_name,
            bytes=self.size,
            content_type=sniff_content_type(bytes(self._head), self.file_name),
            sha256=self._hash.hexdigest(),
            storage_key=key,
            created_at=self._store.clock(),
        )
        try:
            with self._store.db.transaction() as session:
                session.add(row)
        except BaseException:
            target.unlink(missing_ok=True)
            raise
        self._done = True
        return _info(row)

    def abort(self) -> None:
        if self._done:
            return
        self._done = True
        self._fh.close()
        self._tmp.unlink(missing_ok=True)


class FileStore:
    """Files owned by users, kept under ``root`` and described in the database.

    Example:
        >>> upload = files.begin_upload(user_id, "notes.txt")   # doctest: +SKIP
        >>> upload.write(b"hello")                               # doctest: +SKIP
        >>> upload.commit().content_type                         # doctest: +SKIP
        'text/plain'
    """

    def __init__(self, db: Database, root: Path, *, max_bytes: int, clock: Clock = utcnow) -> None:
        self.db = db
        self.root = root
        self.max_bytes = max_bytes
        self.clock = clock
        self.tmp_dir = root / ".tmp"
        self.tmp_dir.mkdir(parents=True, exist_ok=True)

    def begin_upload(self, user_id: int, file_name: str) -> Upload:
        return Upload(self, user_id, file_name)

    def save(self, user_id: int, file_name: str, content: bytes) -> FileInfo:
        """Store ``content`` in one go (notebooks, tests, server-side producers)."""
        upload = self.begin_upload(user_id, file_name)
        try:
            upload.write(content)
            return upload.commit()
        finally:
            upload.abort()

    def retrieve(self, user_id: int, file_id: int) -> FileInfo:
        return _info(self._owned(user_id, file_id))

    def path_of(self, user_id: int, file_id: int) -> Path:
        return self.root / self._owned(user_id, file_id).storage_key

    def _owned(self, user_id: int, file_id: int) -> File:
        with self.db.reading() as session:  # a read: callers may hold a write transaction
            row = session.scalars(
                select(File).where(File.id == file_id, File.user_id == user_id)
            ).first()
        if row is None:
            raise NotFound(f"file {file_id} does not exist")
        return row


def _info(row: File) -> FileInfo:
    return FileInfo(
        id=row.id,
        user_id=row.user_id,
        file_name=row.file_name,
        bytes=row.bytes,
        content_type=row.content_type,
        sha256=row.sha256,
        created_at=row.created_at,
    )
