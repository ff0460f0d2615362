"""Text out of the files a knowledge base accepts: txt, md, csv, pdf, docx and html.

Every parser is pure (bytes in, text out) and raises :class:`ParseError` with a reason a
person can act on; the ingestion job turns that into a ``failed`` document. docx is read
with the standard library (a docx is a zip whose ``word/document.xml`` holds the text in
``w:t`` runs of ``w:p`` paragraphs): ``python-docx`` would add lxml and a dependency for
what forty lines do, and we never write documents.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from dataclasses import dataclass
from html.parser import HTMLParser
from xml.etree import ElementTree

#: the file types a document may have (Coze's ``file_type``, the file's extension)
FILE_TYPES = ("txt", "md", "csv", "pdf", "docx", "html")
_ALIASES = {"markdown": "md", "htm": "html", "text": "txt"}


class ParseError(ValueError):
    """A file that cannot be read as its type; the message says why."""


@dataclass(frozen=True)
class Parsed:
    """A file's text: ``blocks`` of prose, or ``rows`` (a table: each row one chunk)."""

    blocks: list[str]
    rows: bool = False

    @property
    def chars(self) -> int:
        return sum(len(b) for b in self.blocks)


def file_type(value: str) -> str | None:
    """The canonical type of an extension or type name; None when not supported.

    Example:
        >>> file_type(".Markdown"), file_type("PDF"), file_type("xls")
        ('md', 'pdf', None)
    """
    name = value.strip().lower().lstrip(".")
    name = _ALIASES.get(name, name)
    return name if name in FILE_TYPES else None


def parse(kind: str, data: bytes) -> Parsed:
    """The text of ``data`` read as ``kind`` (one of :data:`FILE_TYPES`).

    Example:
        >>> parse("csv", b"city,country\\nOslo,Norway\\n").blocks
        ['city: Oslo\\ncountry: Norway']
        >>> parse("html", b"<p>Hello <b>world</b></p><script>x()</script>").blocks
        ['Hello world']
    """
    reader = _PARSERS.get(kind)
    if reader is None:
        raise ParseError(f"file type {kind!r} is not supported (use one of {FILE_TYPES})")
    parsed = reader(data)
    if not any(block.strip() for block in parsed.blocks):
        raise ParseError(f"the {kind} file holds no text")
    return parsed


def _decode(data: bytes) -> str:
    for encoding in (
        ("utf-8-sig", "utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ("utf-8-sig",)
    ):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    if b"\x00" in data[:4096]:
        raise ParseError("the file is binary, not text (is its file_type right?)")
    return data.decode("latin-1")


def _text(data: bytes) -> Parsed:
    return Parsed([_decode(data)])


def _csv(data: bytes) -> Parsed:
    text = _decode(data)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel  # type: ignore[assignment]
    try:
        rows = list(csv.reader(io.StringIO(text), dialect))
    except csv.Error as exc:
        raise ParseError(f"the csv file cannot be read: {exc}") from None
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if len(rows) < 2:
        raise ParseError("the csv file needs a header row and at least one row")
    header = [h.strip() or f"column {i + 1}" for i, h in enumerate(rows[0])]
    blocks = []
    for row in rows[1:]:
        pairs = [
            f"{header[i] if i < len(header) else f'column {i + 1}'}: {cell.strip()}"
            for i, cell in enumerate(row)
            if cell.strip()
        ]
        blocks.append("\n".join(pairs))
    return Parsed(blocks, rows=True)


def _pdf(data: bytes) -> Parsed:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ParseError("the pdf file is encrypted")
        pages = [page.extract_text() or "" for page in reader.pages]
    except ParseError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ParseError(f"the pdf file cannot be read: {exc}") from None
    return Parsed(["\n".join(pages)])


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _docx(data: bytes) -> Parsed:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            xml = archive.read("word/document.xml")
        root = ElementTree.fromstring(xml)
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError) as exc:
        raise ParseError(f"the docx file cannot be read: {exc}") from None
    paragraphs = []
    for paragraph in root.iter(f"{_W}p"):
        pieces = []
        for node in paragraph.iter():
            if node.tag == f"{_W}t" and node.text:
                pieces.append(node.text)
            elif node.tag == f"{_W}tab":
                pieces.append("\t")
            elif node.tag in (f"{_W}br", f"{_W}cr"):
                pieces.append("\n")
        paragraphs.append("".join(pieces))
    return Parsed(["\n\n".join(p for p in paragraphs if p.strip())])


class _HtmlText(HTMLParser):
    _SKIP = frozenset({"script", "style", "noscript", "template", "head"})
    _BLOCK = frozenset(
        {
            "p",
            "div",
            "br",
            "li",
            "tr",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "section",
            "article",
            "pre",
            "blockquote",
            "table",
            "ul",
            "ol",
            "title",
        }
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BLOCK:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skipping = max(0, self._skipping - 1)
        elif tag in self._BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def _html(data: bytes) -> Parsed:
    reader = _HtmlText()
    reader.feed(_decode(data))
    reader.close()
    text = re.sub(r"[ \t\r\f\v]+", " ", "".join(reader.parts))
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text)]
    return Parsed(["\n\n".join(p for p in paragraphs if p)])


_PARSERS = {
    "txt": _text,
    "md": _text,
    "csv": _csv,
    "pdf": _pdf,
    "docx": _docx,
    "html": _html,
}
