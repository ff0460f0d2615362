"""``/v1/files/upload`` and ``/v1/files/retrieve``."""

from __future__ import annotations

import inspect

from tornado import web

from coze_lab.core.errors import CozeLabError, FileTooLarge
from coze_lab.core.files import Upload
from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.multipart import MultipartFileReader

_MULTIPART_SLACK = 64 * 1024  # boundaries and part headers around the file's bytes
# the connection cap sits above the file cap so the file cap trips first and cleans up
_CONNECTION_SLACK = 1024 * 1024


@web.stream_request_body
class FileUploadHandler(CozeHandler):
    """Streams the ``file`` part to disk: nothing is buffered in memory, nothing kept on error."""

    _reader: MultipartFileReader | None = None
    _failure: CozeLabError | None = None
    _upload: Upload | None = None

    async def prepare(self) -> None:
        result = super().prepare()
        if inspect.isawaitable(result):
            await result
        if self._finished:
            return
        user = self.coze_user()
        limit = self.runtime.files.max_bytes + _MULTIPART_SLACK
        length = self.request.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > limit:
            raise FileTooLarge(f"file exceeds the limit of {self.runtime.files.max_bytes} bytes")
        self.request.connection.set_max_body_size(self.runtime.files.max_bytes + _CONNECTION_SLACK)
        self._reader = MultipartFileReader(
            self.request.headers.get("Content-Type", ""), "file", self._open_upload(user.id)
        )

    def _open_upload(self, user_id: int):
        def open_upload(file_name: str) -> Upload:
            self._upload = self.runtime.files.begin_upload(user_id, file_name)
            return self._upload

        return open_upload

    def data_received(self, chunk: bytes) -> None:
        if self._failure is not None or self._reader is None:
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

    def _discard(self) -> None:
        if self._upload is not None:
            self._upload.abort()


class FileRetrieveHandler(CozeHandler):
    def get(self) -> None:
        user = self.coze_user()
        file_id = parse_id(self.get_query_argument("file_id", ""), "file_id")
        self.reply(serialize.file_info(self.runtime.files.retrieve(user.id, file_id)))
