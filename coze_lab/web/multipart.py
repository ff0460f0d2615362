"""A streaming ``multipart/form-data`` reader that hands the ``file`` part to a sink."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from coze_lab.core.errors import InvalidParameter


class FileSink(Protocol):
    def write(self, chunk: bytes) -> None: ...


class MultipartFileReader:
    """Feed request chunks; the part named ``field`` streams into ``open_sink(filename)``.

    Example:
        >>> reader = MultipartFileReader(content_type, "file", files.begin_upload)  # doctest: +SKIP
        >>> reader.feed(chunk)                                                    # doctest: +SKIP
        >>> upload = reader.finish()                                              # doctest: +SKIP
    """

    def __init__(self, content_type: str, field: str, open_sink: Callable[[str], FileSink]) -> None:
        kind, options = parse_options_header(content_type)
        boundary = options.get(b"boundary")
        if kind != b"multipart/form-data" or not boundary:
            raise InvalidParameter("request must be multipart/form-data with a boundary")
        self._field = field.encode()
        self._open_sink = open_sink
        self.sink: FileSink | None = None
        self._headers: dict[bytes, bytes] = {}
        self._header_name = b""
        self._header_value = b""
        self._current: FileSink | None = None
        self._parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._on_part_begin,
                "on_header_field": self._on_header_field,
                "on_header_value": self._on_header_value,
                "on_header_end": self._on_header_end,
                "on_headers_finished": self._on_headers_finished,
                "on_part_data": self._on_part_data,
                "on_part_end": self._on_part_end,
            },
        )
        self._ended = False

    def feed(self, chunk: bytes) -> None:
        try:
            self._parser.write(chunk)
        except MultipartParseError as exc:
            raise InvalidParameter(f"malformed multipart body: {exc}") from exc

    def finish(self) -> FileSink:
        try:
            self._parser.finalize()
        except MultipartParseError as exc:
            raise InvalidParameter(f"malformed multipart body: {exc}") from exc
        if self.sink is None:
            raise InvalidParameter(f"multipart body has no '{self._field.decode()}' file part")
        if not self._ended:
            raise InvalidParameter("multipart body ended in the middle of the file part")
        return self.sink

    def _on_part_begin(self) -> None:
        self._headers = {}
        self._current = None

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _on_header_end(self) -> None:
        self._headers[self._header_name.strip().lower()] = self._header_value.strip()
        self._header_name = b""
        self._header_value = b""

    def _on_headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        if options.get(b"name") != self._field:
            return
        if self.sink is not None:
            raise InvalidParameter(f"more than one '{self._field.decode()}' part")
        filename = options.get(b"filename")
        if filename is None:
            raise InvalidParameter("the file part has no filename")
        self.sink = self._current = self._open_sink(filename.decode("utf-8", "replace"))

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self._current is not None:
            self._current.write(data[start:end])

    def _on_part_end(self) -> None:
        if self._current is not None:
            self._ended = True
        self._current = None
