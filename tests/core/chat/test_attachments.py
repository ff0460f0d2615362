"""What a model gets of the files a message names, read from a real FileStore."""

from __future__ import annotations

import json

import pytest

from coze_lab.core.chat.attachments import Attachments
from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.services import Runtime
from tests.web.test_chat_files import PNG, make_pdf


def parts(*file_ids: int) -> str:
    return json.dumps([{"type": "file", "file_id": str(i)} for i in file_ids])


@pytest.fixture
def attachments(runtime: Runtime) -> Attachments:
    files = runtime.files
    return Attachments(
        lambda owner, fid: (files.retrieve(owner, fid), files.path_of(owner, fid)),
        max_text_chars=40,
    )


def test_text_is_cut_with_a_notice_and_unknown_types_are_named(
    runtime: Runtime, attachments: Attachments
) -> None:
    alice = runtime.identity.ensure_user("alice").id
    short = runtime.files.save(alice, "a.md", b"# short\n").id
    long = runtime.files.save(alice, "b.txt", b"x" * 100).id
    blob = runtime.files.save(alice, "c.bin", b"\x00\x01\x02").id
    pdf = runtime.files.save(alice, "d.pdf", make_pdf("Hello PDF")).id
    got = attachments.content(alice, parts(short, long, blob, pdf), "object_string", strict=True)
    texts = [p["text"] for p in got]
    assert texts[0] == "File a.md (text/markdown, 8 bytes):\n# short\n"
    assert "\n" + "x" * 40 + "\n[" in texts[1] and "x" * 41 not in texts[1]
    assert texts[1].endswith("[b.txt was cut: the model sees its first 40 characters only]")
    assert "c.bin" in texts[2] and "not read into the model's context" in texts[2]
    assert "--- page 1 ---\nHello PDF" in texts[3]
    # plain text messages pass through
    assert attachments.content(alice, "hi", "text", strict=True) == "hi"


def test_unreadable_files_fail_new_messages_and_become_notices_in_history(
    runtime: Runtime, attachments: Attachments
) -> None:
    alice = runtime.identity.ensure_user("alice").id
    bob = runtime.identity.ensure_user("bob").id
    broken = runtime.files.save(alice, "broken.pdf", b"%PDF-1.4 garbage").id
    with pytest.raises(InvalidParameter, match=r"broken\.pdf .*is not a readable PDF"):
        attachments.content(alice, parts(broken), "object_string", strict=True)
    (notice,) = attachments.content(alice, parts(broken), "object_string", strict=False)
    assert "broken.pdf" in notice["text"] and "not available to the model" in notice["text"]
    # another user's file: NotFound for a new message, a notice in history
    with pytest.raises(NotFound):
        attachments.content(bob, parts(broken), "object_string", strict=True)
    (hidden,) = attachments.content(bob, parts(broken), "object_string", strict=False)
    assert hidden["text"].startswith(f"[file {broken}: not available to the model")


def test_images_become_data_urls(runtime: Runtime, attachments: Attachments) -> None:
    alice = runtime.identity.ensure_user("alice").id
    image = runtime.files.save(alice, "dot.png", PNG).id
    label, picture = attachments.content(alice, parts(image), "object_string", strict=True)
    assert label["text"].startswith("File dot.png (image/png")
    assert picture["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
