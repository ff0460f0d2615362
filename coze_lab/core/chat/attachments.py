"""Files named in chat messages, turned into what the model reads.

A message's ``object_string`` part with a ``file_id`` becomes:

- text for txt, md, csv and pdf files: the file's text, cut at ``max_text_chars`` with a
  notice saying so;
- an OpenAI image part (``image_url`` with a ``data:`` URL) for images; the model client
  replaces it with a text notice for models without ``image_understanding``;
- a short text notice for any other type.

A PDF that cannot be read fails the chat before anything is written (``InvalidParameter``);
a file of an *earlier* message that can no longer be read becomes a notice instead, so one
bad file does not break every later chat of a conversation.
"""

from __future__ import annotations

import base64
import json
import mimetypes
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coze_lab.core.conversations.content import MAX_CONTENT_CHARS
from coze_lab.core.errors import CozeLabError, InvalidParameter
from coze_lab.core.files import FileInfo
from coze_lab.core.ids import parse_id

#: characters of one file's text a model gets by default (chat_file_text_chars)
DEFAULT_TEXT_CHARS = 50_000
#: images larger than this are described, not sent (a chat waiting for tool outputs keeps
#: its model messages, data URLs included, in one database row)
MAX_IMAGE_BYTES = 10 * 1024 * 1024
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/x-markdown", "text/csv"})
TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".csv"})
PDF_TYPE = "application/pdf"

#: (file info, path on disk) of a file the chat's owner may read; raises NotFound otherwise
FileReader = Callable[[int, int], tuple[FileInfo, Path]]
Content = str | list[dict[str, Any]]


class Attachments:
    """Turns stored message content into OpenAI message content, reading named files.

    Example:
        >>> attachments = Attachments(lambda owner, fid: (info, path))   # doctest: +SKIP
        >>> attachments.content(owner_id, '[{"type": "file", "file_id": "7"}]',
        ...                     "object_string", strict=True)           # doctest: +SKIP
        [{'type': 'text', 'text': 'File notes.txt (text/plain, 5 bytes):\\nhello'}]
    """

    def __init__(self, read: FileReader, *, max_text_chars: int = DEFAULT_TEXT_CHARS) -> None:
        self._read = read
        self.max_text_chars = max_text_chars

    def read(self, owner_id: int, file_id: int) -> tuple[FileInfo, Path]:
        """The file's record and its path on disk (``NotFound`` unless the owner's)."""
        return self._read(owner_id, file_id)

    def content(self, owner_id: int, content: str, content_type: str, *, strict: bool) -> Content:
        """The model content of one stored message; ``strict``: unreadable files raise."""
        if content_type != "object_string":
            return content
        result: list[dict[str, Any]] = []
        for part in json.loads(content):
            if part["type"] == "text":
                result.append({"type": "text", "text": part["text"]})
            elif part.get("file_id"):
                file_id = parse_id(part["file_id"], "file_id")
                result += self._file(owner_id, file_id, strict=strict)
            elif part["type"] == "image":
                result.append({"type": "image_url", "image_url": {"url": part["file_url"]}})
            else:
                result.append({"type": "text", "text": f"[{part['type']}: {part['file_url']}]"})
        return result

    def _file(self, owner_id: int, file_id: int, *, strict: bool) -> list[dict[str, Any]]:
        try:
            info, path = self._read(owner_id, file_id)
        except CozeLabError as exc:
            if strict:
                raise
            return [_text(f"[file {file_id}: not available to the model: {exc.msg}]")]
        kind = file_kind(info)
        head = f"File {info.file_name} ({info.content_type}, {info.bytes} bytes)"
        if kind == "image":
            if info.bytes > MAX_IMAGE_BYTES:
                return [
                    _text(
                        f"[{head}: image too large to send to the model "
                        f"(over {MAX_IMAGE_BYTES} bytes)]"
                    )
                ]
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            url = f"data:{info.content_type};base64,{data}"
            return [_text(f"{head}:"), {"type": "image_url", "image_url": {"url": url}}]
        if kind == "text":
            with path.open(encoding="utf-8", errors="replace", newline="") as fh:
                text = fh.read(self.max_text_chars + 1)
            return [_text(self._capped(head, info, text))]
        if kind == "pdf":
            try:
                text = pdf_text(path, self.max_text_chars + 1)
            except InvalidParameter as exc:
                message = f"{info.file_name} (file {file_id}): {exc.msg}"
                if strict:
                    raise InvalidParameter(message) from exc
                return [_text(f"[{head}: not available to the model: {exc.msg}]")]
            if not text.strip():
                return [_text(f"[{head}: the PDF has no extractable text (scanned pages?)]")]
            return [_text(self._capped(head, info, text))]
        return [_text(f"[{head}: this file type is not read into the model's context]")]

    def _capped(self, head: str, info: FileInfo, text: str) -> str:
        if len(text) <= self.max_text_chars:
            return f"{head}:\n{text}"
        cut = text[: self.max_text_chars]
        return (
            f"{head}:\n{cut}\n[{info.file_name} was cut: the model sees its first "
            f"{self.max_text_chars} characters only]"
        )


def file_kind(info: FileInfo) -> str:
    """``image``, ``text``, ``pdf`` or ``other``: what the model can be given of a file.

    Example:
        >>> from datetime import datetime
        >>> info = FileInfo(1, 1, "sales.csv", 9, "application/octet-stream", "", datetime.now())
        >>> file_kind(info)
        'text'
    """
    content_type = info.content_type.split(";")[0].strip().lower()
    if content_type in IMAGE_TYPES:
        return "image"
    if content_type == PDF_TYPE:
        return "pdf"
    if content_type in TEXT_TYPES or Path(info.file_name).suffix.lower() in TEXT_SUFFIXES:
        return "text"
    guessed, _ = mimetypes.guess_type(info.file_name)
    if guessed == PDF_TYPE:
        return "pdf"
    return "other"


def pdf_text(path: Path, limit: int = MAX_CONTENT_CHARS) -> str:
    """The text of a PDF's pages, read until ``limit`` characters; ``InvalidParameter`` when
    the file is not a PDF pypdf can read (damaged, not a PDF, or encrypted with a password).

    Example:
        >>> pdf_text(Path("/etc/hostname"))                    # doctest: +SKIP
        Traceback (most recent call last):
        coze_lab.core.errors.InvalidParameter: is not a readable PDF: ...
    """
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    pieces: list[str] = []
    size = 0
    try:
        reader = PdfReader(path, strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise InvalidParameter("is an encrypted PDF; upload it without a password")
        for number, page in enumerate(reader.pages, start=1):
            text = page.extract_text() or ""
            piece = f"--- page {number} ---\n{text.strip()}\n"
            pieces.append(piece)
            size += len(piece)
            if size >= limit:
                break
    except InvalidParameter:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
        raise InvalidParameter(f"is not a readable PDF: {exc}") from exc
    if not any(piece.split("\n", 1)[1].strip() for piece in pieces):
        return ""
    return "".join(pieces)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}
