"""A chat whose server is killed mid-answer: another server on the same database fails it
within ``chat_lost_after_s`` and the answer streamed so far stays readable (review finding:
it stayed ``in_progress`` for minutes and the partial answer was lost)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cozepy import ChatEventType, ChatStatus, Coze, Message, TokenAuth
from cozepy.bots import BotModelInfo, BotPromptInfo

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer, TextReply
from tests.support import ServerProcess

LOST_AFTER_S = 5.0
WORDS = [f"word{i}" for i in range(400)]


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    with ModelServer(chunk_delay=0.05) as server:  # 400 words: a 20 s answer
        yield server


def test_a_chat_whose_server_is_killed_fails_within_the_deadline_with_its_partial_answer(
    tmp_path: Path, db_url: str, model_server: ModelServer
) -> None:
    runtime = Runtime(CozeLab(data_dir=str(tmp_path / "a"), database_url=db_url))
    runtime.start()
    user = runtime.identity.ensure_user("alice")
    token = runtime.tokens.create(user.id, "alice")[1]
    runtime.db.dispose()
    env = {
        "OPENAI_BASE_URL": model_server.url,
        "OPENAI_API_KEY": "k",
        "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
        "COZE_LAB_CHAT_LOST_AFTER_S": str(LOST_AFTER_S),
    }
    first = ServerProcess(tmp_path / "a", db_url, env=env).start()
    second = ServerProcess(tmp_path / "b", db_url, env=env).start()  # a replica, same database
    try:
        coze = Coze(auth=TokenAuth(token), base_url=first.url)
        bot = coze.bots.create(
            space_id=str(user.workspace_id),
            name="Talker",
            prompt_info=BotPromptInfo(prompt="Talk."),
            model_info_config=BotModelInfo(model_id="default"),
        )
        coze.bots.publish(bot_id=bot.bot_id, connector_ids=["1024"])
        model_server.script([TextReply(" ".join(WORDS))])
        stream = coze.chat.stream(
            bot_id=bot.bot_id,
            user_id="u",
            additional_messages=[Message.build_user_question_text("talk")],
        )
        streamed, chat, started = "", None, time.monotonic()
        for event in stream:
            if event.event == ChatEventType.CONVERSATION_CHAT_CREATED:
                chat = event.chat
            if event.event == ChatEventType.CONVERSATION_MESSAGE_DELTA:
                streamed += event.message.content
                # long enough for a few partial writes, and for the replica to see it alive
                if time.monotonic() - started > 4 * LOST_AFTER_S * 0.6 / 3 + 1.5:
                    break
        assert chat is not None and streamed
        first.kill()  # SIGKILL: no shutdown code runs
        killed = time.monotonic()

        other = Coze(auth=TokenAuth(token), base_url=second.url)
        status = other.chat.retrieve(conversation_id=chat.conversation_id, chat_id=chat.id).status
        assert status == ChatStatus.IN_PROGRESS  # a live chat was never failed by the replica
        while time.monotonic() - killed < LOST_AFTER_S + 3:  # the setting, plus slack for load
            failed = other.chat.retrieve(conversation_id=chat.conversation_id, chat_id=chat.id)
            if failed.status == ChatStatus.FAILED:
                break
            time.sleep(0.2)
        assert failed.status == ChatStatus.FAILED, "not failed within chat_lost_after_s"
        assert "stopped" in failed.last_error.msg
        messages = other.chat.messages.list(conversation_id=chat.conversation_id, chat_id=chat.id)
        answers = [m for m in messages if m.type == "answer"]
        assert len(answers) == 1 and answers[0].meta_data == {"partial": "true"}
        kept = answers[0].content
        assert kept and " ".join(WORDS).startswith(kept)
        # at most PARTIAL_SAVE_S (0.5 s) of the stream is lost, plus what was still in flight
        assert len(kept) >= len(streamed) - len(" ".join(WORDS[:40]))
    finally:
        first.stop()
        second.stop()
