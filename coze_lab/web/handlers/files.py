"""``/v1/files/upload`` and ``/v1/files/retrieve``."""

from __future__ import annotations

from tornado import web

from coze_lab.core.errors import CozeLabError, FileTooLarge
from coze_lab.core.files import Upload
from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.multipart import MultipartFileReader

_MULTIPART_SLACK = 64 * 1024  # boundaries and part headers around the file's bytes
# tornado's own cap (a bare 400) sits above ours (a Coze 413) so ours trips first
_CONNECTION_SLACK = 1024 * 1024


@web.stream_request_body
class FileUploadHandler(CozeHandler):
    """Streams the ``file`` part to disk: nothing is buffered in memory, nothing kept on error.

    A body beyond the file limit (plus the multipart framing) is refused with 413 at the
    first chunk past it, chunked or not.
    """

    _reader: MultipartFileReader | None = None
    _failure: CozeLabError | None = None
    _upload: Upload | None = None
    _size = 0

    def body_limit(self) -> int:
        return self.runtime.files.max_bytes + _MULTIPART_SLACK

    def too_large(self) -> FileTooLarge:
        return FileTooLarge(f"file exceeds the limit of {self.runtime.files.max_bytes} bytes")

    async def prepare(self) -> None:
        await super().prepare()
        if self._finished:
            return
        user = self.coze_user()
        self.request.connection.set_max_body_size(self._body_limit + _CONNECTION_SLACK)
        self._reader = MultipartFileReader(
            self.request.headers.get("Content-Type", ""), "file", self._open_upload(user.id)
        )

    def _open_upload(self, user_id: int):
        def open_upload(file_name: str) -> Upload:
            self._upload = self.runtime.files.begin_upload(user_id, file_name)
            return self._upload

        return open_upload

    def data_received(self, chunk: bytes) -> None:
        if self._finished or self._reader is None:
            return
        self._size += len(chunk)
        if self._size > self._body_limit:
            self._discard()
            self.refuse(self.too_large())
            return
        if self._failure is not None:
            return
        try:
            self._reader.feed(chunk)
        except CozeLabError as exc:  # raised again from post(): data_received cannot answer
            self._failure = exc
            self._discard()

    def post(self) -> None:
        try:
            if self._failure is not None:
                raise self._failure
            assert self._reader is not None
            upload = self._reader.finish()
            assert isinstance(upload, Upload)
            info = upload.commit()
        except BaseException:
            self._discard()  # before the error response leaves, not after
            raise
        self.reply(serialize.file_info(info))

    def on_finish(self) -> None:
        self._discard()

    def on_connection_close(self) -> None:
        self._discard()
        super().on_connection_close()

    def _discard(self) -> None:
        if self._upload is not None:
            self._upload.abort()


class FileRetrieveHandler(CozeHandler):
    def get(self) -> None:
        user = self.coze_user()
        file_id = parse_id(self.get_query_argument("file_id", ""), "file_id")
        self.reply(serialize.file_info(self.runtime.files.retrieve(user.id, file_id)))
