"""Uploaded files reach the model: cozepy uploads to a real ``coze-lab serve``, names the
files in a chat message, and the local model server records what the model received."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cozepy import (
    BotModelInfo,
    BotPromptInfo,
    ChatStatus,
    Coze,
    CozeAPIError,
    Message,
    MessageObjectString,
    TokenAuth,
)

from coze_lab.config import CozeLab
from coze_lab.core.models.client import IMAGE_OMITTED
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer, TextReply
from tests.support import ServerProcess

TEXT_CHARS = 2_000
#: a 1x1 PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def make_pdf(*pages: str) -> bytes:
    """A small valid PDF whose pages show the given lines of text (Helvetica)."""
    objects: list[bytes] = []
    page_ids = [4 + 2 * i for i in range(len(pages))]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{pid} 0 R" for pid in page_ids).encode()
    objects.append(b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % len(pages))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        stream = b"BT /F1 12 Tf 72 720 Td (" + text.encode("latin-1") + b") Tj ET"
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_ids[i] + 1)
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


class Lab:
    def __init__(self, server: ServerProcess, token: str, space: str, tmp: Path) -> None:
        self.server, self.token, self.space, self.tmp = server, token, space, tmp

    def workspace(self, conversation_id: str) -> Path:
        return self.tmp / "server-data" / "coze_workspaces" / self.space / conversation_id

    def coze(self) -> Coze:
        return Coze(auth=TokenAuth(self.token), base_url=self.server.url)

    def upload(self, name: str, content: bytes) -> str:
        path = self.tmp / name
        path.write_bytes(content)
        return self.coze().files.upload(file=path).id

    def bot(self, model_id: str) -> str:
        coze = self.coze()
        bot_id = coze.bots.create(
            space_id=self.space,
            name=f"Reader {model_id}",
            prompt_info=BotPromptInfo(prompt="Read the files."),
            model_info_config=BotModelInfo(model_id=model_id),
        ).bot_id
        coze.bots.publish(bot_id=bot_id, connector_ids=["1024"])
        return bot_id


@pytest.fixture
def lab(tmp_path: Path, db_url: str, model_server: ModelServer) -> Iterator[Lab]:
    data_dir = tmp_path / "server-data"
    runtime = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    runtime.start()
    user = runtime.identity.ensure_user("alice")
    token = runtime.tokens.create(user.id, "alice")[1]
    runtime.db.dispose()
    models = tmp_path / "models.json"
    models.write_text(
        json.dumps(
            {
                "default": "text-only",
                "models": [
                    {
                        "id": "vision",
                        "base_url": model_server.url,
                        "model": "seeing",
                        "capabilities": {"image_understanding": True},
                    },
                    {"id": "text-only", "base_url": model_server.url, "model": "reading"},
                ],
            }
        )
    )
    env = {
        "COZE_LAB_MODELS_FILE": str(models),
        "COZE_LAB_CHAT_FILE_TEXT_CHARS": str(TEXT_CHARS),
    }
    process = ServerProcess(data_dir, db_url, env=env).start()
    yield Lab(process, token, str(user.workspace_id), tmp_path)
    process.stop()


def ask(*parts: MessageObjectString) -> list[Message]:
    return [Message.build_user_question_objects(list(parts))]


def user_content(request: dict[str, Any]) -> list[dict[str, Any]]:
    return request["messages"][-1]["content"]


def texts(content: list[dict[str, Any]]) -> str:
    return "\n".join(part["text"] for part in content if part["type"] == "text")


def test_text_csv_markdown_and_pdf_text_reach_the_model(
    lab: Lab, model_server: ModelServer
) -> None:
    notes = lab.upload("notes.md", b"# Plan\n\n- ship the *workspace*\n")
    sales = lab.upload("sales.csv", b"region,amount\nnorth,120\nsouth,80\n")
    report = lab.upload("report.pdf", make_pdf("Revenue grew 42 percent", "Page two says hello"))
    long = lab.upload("long.txt", ("0123456789" * 300).encode())
    model_server.script([TextReply("Read them.")])
    chat = lab.coze().chat.create_and_poll(
        bot_id=lab.bot("text-only"),
        user_id="u-1",
        additional_messages=ask(
            MessageObjectString.build_text("Summarise these."),
            MessageObjectString.build_file(file_id=notes),
            MessageObjectString.build_file(file_id=sales),
            MessageObjectString.build_file(file_id=report),
            MessageObjectString.build_file(file_id=long),
        ),
    )
    assert chat.chat.status == ChatStatus.COMPLETED
    (request,) = model_server.requests
    content = user_content(request)
    assert content[0] == {"type": "text", "text": "Summarise these."}
    seen = texts(content)
    assert "File notes.md" in seen and "- ship the *workspace*" in seen
    assert "File sales.csv" in seen and "north,120\nsouth,80" in seen
    assert "File report.pdf (application/pdf" in seen
    assert "Revenue grew 42 percent" in seen and "Page two says hello" in seen
    assert seen.index("--- page 1 ---") < seen.index("--- page 2 ---")
    # the long file is cut at chat_file_text_chars, and the model is told so
    (long_part,) = [p["text"] for p in content if p["text"].startswith("File long.txt")]
    assert long_part.count("0123456789") == TEXT_CHARS // 10
    assert f"long.txt was cut: the model sees its first {TEXT_CHARS} characters only" in long_part
    assert "[file" not in seen  # no placeholder text
    # the uploads landed in input/ of the conversation's workspace (under the data dir for
    # coze-lab serve), byte for byte
    inputs = lab.workspace(chat.chat.conversation_id) / "input"
    assert sorted(p.name for p in inputs.iterdir()) == [
        "long.txt",
        "notes.md",
        "report.pdf",
        "sales.csv",
    ]
    assert (inputs / "sales.csv").read_bytes() == b"region,amount\nnorth,120\nsouth,80\n"
    # the next chat of the conversation reads the files again from its history
    model_server.script([TextReply("Still there.")])
    lab.coze().chat.create_and_poll(
        bot_id=chat.chat.bot_id,
        user_id="u-1",
        conversation_id=chat.chat.conversation_id,
        additional_messages=[Message.build_user_question_text("And the north?")],
    )
    history = model_server.requests[1]["messages"]
    assert any(
        isinstance(m["content"], list) and "north,120" in texts(m["content"]) for m in history
    )


def test_images_are_image_parts_for_vision_models_and_a_notice_otherwise(
    lab: Lab, model_server: ModelServer
) -> None:
    image = lab.upload("chart.png", PNG)
    question = ask(
        MessageObjectString.build_text("What is in the chart?"),
        MessageObjectString.build_image(file_id=image),
    )
    model_server.script([TextReply("A dot."), TextReply("I cannot see it.")])
    for model_id in ("vision", "text-only"):
        chat = lab.coze().chat.create_and_poll(
            bot_id=lab.bot(model_id), user_id="u-1", additional_messages=question
        )
        assert chat.chat.status == ChatStatus.COMPLETED
    seeing, reading = model_server.requests
    assert seeing["model"] == "seeing" and reading["model"] == "reading"
    images = [p for p in user_content(seeing) if p["type"] == "image_url"]
    assert images == [
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()},
        }
    ]
    assert "File chart.png (image/png" in texts(user_content(seeing))
    assert not [p for p in user_content(reading) if p["type"] == "image_url"]
    assert IMAGE_OMITTED in texts(user_content(reading))


def test_an_unreadable_pdf_fails_the_chat_clearly_and_writes_nothing(
    lab: Lab, model_server: ModelServer
) -> None:
    broken = lab.upload("broken.pdf", b"%PDF-1.4\nthis is not really a pdf\n")
    coze = lab.coze()
    bot_id = lab.bot("text-only")
    conversation = coze.conversations.create(bot_id=bot_id)
    with pytest.raises(CozeAPIError) as err:
        coze.chat.create(
            bot_id=bot_id,
            user_id="u-1",
            conversation_id=conversation.id,
            additional_messages=ask(
                MessageObjectString.build_text("Read it."),
                MessageObjectString.build_file(file_id=broken),
            ),
        )
    assert err.value.code == 4000
    assert "broken.pdf" in (err.value.msg or "") and "not a readable PDF" in (err.value.msg or "")
    assert model_server.requests == []
    assert list(coze.conversations.messages.list(conversation_id=conversation.id)) == []
    assert not lab.workspace(conversation.id).exists()
