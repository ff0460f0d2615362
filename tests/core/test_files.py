from __future__ import annotations

import pytest
from sqlalchemy import func, select

from coze_lab.core.errors import InvalidParameter, NotFound, PayloadTooLarge
from coze_lab.core.files import FileStore, sniff_content_type, valid_file_name
from coze_lab.services import Runtime
from coze_lab.store.models import File

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def stored_files(runtime: Runtime) -> list:
    return [p for p in runtime.files.root.rglob("*") if p.is_file()]


def file_rows(runtime: Runtime) -> int:
    with runtime.db.transaction() as session:
        return session.execute(select(func.count()).select_from(File)).scalar_one()


def test_save_and_retrieve(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    info = runtime.files.save(alice.id, "hello.txt", b"hello world")
    assert (info.bytes, info.file_name, info.content_type) == (11, "hello.txt", "text/plain")
    assert runtime.files.retrieve(alice.id, info.id) == info
    assert runtime.files.path_of(alice.id, info.id).read_bytes() == b"hello world"


def test_another_users_file_is_not_found(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    bob = runtime.identity.ensure_user("bob")
    info = runtime.files.save(alice.id, "a.txt", b"secret")
    with pytest.raises(NotFound):
        runtime.files.retrieve(bob.id, info.id)
    with pytest.raises(NotFound):
        runtime.files.path_of(bob.id, info.id)


def test_content_type_is_sniffed_from_bytes_first(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    assert runtime.files.save(alice.id, "looks.txt", PNG).content_type == "image/png"
    assert sniff_content_type(b"\x00\xff\xfe\x01", "blob") == "application/octet-stream"
    assert sniff_content_type(b"a,b\n1,2\n", "t.csv") == "text/csv"
    assert sniff_content_type("héllo".encode() * 3000, "notes") == "text/plain"


def test_oversized_upload_leaves_nothing(runtime: Runtime) -> None:
    small = FileStore(runtime.db, runtime.files.root, max_bytes=10, clock=runtime.clock)
    alice = runtime.identity.ensure_user("alice")
    upload = small.begin_upload(alice.id, "big.bin")
    upload.write(b"0123456789")
    with pytest.raises(PayloadTooLarge):
        upload.write(b"x")
    assert stored_files(runtime) == [] and file_rows(runtime) == 0


def test_empty_file_is_refused(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    with pytest.raises(InvalidParameter):
        runtime.files.save(alice.id, "empty.txt", b"")
    assert stored_files(runtime) == [] and file_rows(runtime) == 0


def test_failed_insert_removes_the_stored_bytes(runtime: Runtime) -> None:
    with pytest.raises(Exception):  # noqa: B017 - the foreign key refuses user 42
        runtime.files.save(42, "orphan.txt", b"data")
    assert stored_files(runtime) == [] and file_rows(runtime) == 0


@pytest.mark.parametrize(
    "name", ["", ".", "..", "../etc/passwd", "a/b.txt", "..\\win.ini", "a\x00b", "x" * 256]
)
def test_unsafe_names_are_refused_before_writing(runtime: Runtime, name: str) -> None:
    alice = runtime.identity.ensure_user("alice")
    with pytest.raises(InvalidParameter):
        runtime.files.save(alice.id, name, b"data")
    assert stored_files(runtime) == [] and file_rows(runtime) == 0


def test_unicode_names_are_kept() -> None:
    assert valid_file_name("报告 v2.pdf") == "报告 v2.pdf"
