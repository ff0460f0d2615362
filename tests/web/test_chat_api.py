"""Bots and chat through cozepy against a real ``coze-lab serve`` and the local model server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cozepy import (
    BotModelInfo,
    BotPromptInfo,
    ChatEventType,
    ChatStatus,
    Coze,
    CozeAPIError,
    Message,
    MessageType,
    TokenAuth,
    ToolOutput,
    WorkflowIDList,
)

from coze_lab.config import CozeLab
from coze_lab.runtime import Runtime
from coze_lab.testing import ModelServer, ScriptedToolCall, TextReply, ToolCallsReply
from tests.support import ServerProcess


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


@dataclass
class Lab:
    server: ServerProcess
    tokens: dict[str, str]
    workspaces: dict[str, str]
    data_dir: Path
    db_url: str

    def coze(self, who: str = "alice") -> Coze:
        return Coze(auth=TokenAuth(self.tokens[who]), base_url=self.server.url)

    def post(self, path: str, who: str = "alice", **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return httpx.post(self.server.url + path, headers=headers, timeout=30, **kwargs)

    def get(self, path: str, who: str = "alice", **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return httpx.get(self.server.url + path, headers=headers, timeout=30, **kwargs)


@pytest.fixture
def lab(tmp_path: Path, db_url: str, model_server: ModelServer) -> Iterator[Lab]:
    data_dir = tmp_path / "server-data"
    runtime = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    runtime.start()
    tokens: dict[str, str] = {}
    workspaces: dict[str, str] = {}
    for name, connector in (("alice", None), ("alice_web", "999"), ("bob", None)):
        user = runtime.identity.ensure_user(name.split("_")[0])
        tokens[name] = runtime.tokens.create(user.id, name, connector_id=connector)[1]
        workspaces[name] = str(user.workspace_id)
    runtime.db.dispose()
    env = {
        "OPENAI_BASE_URL": model_server.url,
        "OPENAI_API_KEY": "test-key",
        "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
    }
    process = ServerProcess(data_dir, db_url, env=env).start()
    yield Lab(process, tokens, workspaces, data_dir, db_url)
    process.stop()


def make_bot(lab: Lab, who: str = "alice", prompt: str = "You are terse.", **extra) -> str:
    bot = lab.coze(who).bots.create(
        space_id=lab.workspaces[who],
        name="Helper",
        prompt_info=BotPromptInfo(prompt=prompt),
        model_info_config=BotModelInfo(model_id="default", temperature=0.1),
        **extra,
    )
    return bot.bot_id


def publish(lab: Lab, bot_id: str, who: str = "alice") -> None:
    lab.coze(who).bots.publish(bot_id=bot_id, connector_ids=["1024", "999"])


def ask(text: str) -> list[Message]:
    return [Message.build_user_question_text(text)]


def test_publish_stream_events_and_fields(lab: Lab, model_server: ModelServer) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    model_server.script([TextReply("Paris is the capital of France.")])
    events = list(
        lab.coze().chat.stream(bot_id=bot_id, user_id="u-1", additional_messages=ask("Capital?"))
    )
    names = [e.event for e in events]
    assert names[0] == ChatEventType.CONVERSATION_CHAT_CREATED
    assert names[1] == ChatEventType.CONVERSATION_CHAT_IN_PROGRESS
    assert names[-2:] == [
        ChatEventType.CONVERSATION_MESSAGE_COMPLETED,
        ChatEventType.CONVERSATION_CHAT_COMPLETED,
    ]
    deltas = [e.message for e in events if e.event == ChatEventType.CONVERSATION_MESSAGE_DELTA]
    assert len(deltas) > 1
    answer = events[-2].message
    assert "".join(d.content for d in deltas) == answer.content == "Paris is the capital of France."
    assert {d.id for d in deltas} == {answer.id}
    chat = events[-1].chat
    assert chat.status == ChatStatus.COMPLETED and chat.usage.token_count > 0
    assert chat.usage.token_count == chat.usage.input_count + chat.usage.output_count
    assert answer.chat_id == chat.id and answer.conversation_id == chat.conversation_id
    assert answer.type == MessageType.ANSWER and answer.bot_id == bot_id
    assert events[0].chat.status == ChatStatus.CREATED
    # the model saw the published prompt and the question
    sent = model_server.requests[-1]["messages"]
    assert sent[0] == {"role": "system", "content": "You are terse."}
    assert sent[-1]["content"] == "Capital?"
