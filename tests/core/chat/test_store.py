from __future__ import annotations

from datetime import timedelta

from coze_lab.core.chat.store import ChatStore
from coze_lab.core.clock import utcnow
from coze_lab.core.conversations import MessageInfo
from coze_lab.core.ids import new_id
from coze_lab.services import Runtime
from coze_lab.web.requests import parse_bot_edit
from tests.support import FakeClock


def _chat(runtime: Runtime, store: ChatStore):
    user = runtime.identity.ensure_user("alice")
    bot = runtime.bots.create(
        user.id, user.workspace_id, parse_bot_edit({"name": "b"}, create=True)
    )
    runtime.bots.publish(user.id, bot.id, ["1024"])
    conversation = runtime.conversations.create(user.id, "1024", bot_id=bot.id)
    new = store.prepare(
        conversation, bot_id=bot.id, bot_version=None, messages=[], meta_data={}, persist=True
    )
    new.write()
    return new.chat


def test_a_chat_whose_heartbeat_stops_is_failed_visibly(runtime: Runtime, clock: FakeClock) -> None:
    store = runtime.chat_store
    alive, lost = _chat(runtime, store), _chat(runtime, store)
    clock.advance(timedelta(minutes=3))
    store.touch(alive.id)
    assert runtime.chats.recover() == 1
    assert store.status(lost.id) == "failed" and store.status(alive.id) == "in_progress"
    failed = store.get(lost.owner_id, "1024", None, lost.id)
    assert "stopped" in failed.last_error["msg"] and failed.failed_at is not None
    assert runtime.chats.recover() == 0


def test_a_cancel_wins_over_a_late_finish(runtime: Runtime) -> None:
    store = runtime.chat_store
    chat = _chat(runtime, store)
    assert store.cancel(chat.id).status == "canceled"
    assert store.finish(chat.id, "completed", usage={"token_count": 1}) is None
    assert store.status(chat.id) == "canceled"
    assert store.resume(chat.id) is None


def test_a_cancel_marks_the_answer_kept_so_far_canceled(runtime: Runtime) -> None:
    store = runtime.chat_store
    chat = _chat(runtime, store)
    now = utcnow()
    partial = MessageInfo(
        id=new_id(),
        conversation_id=chat.conversation_id,
        section_id=chat.section_id,
        chat_id=chat.id,
        bot_id=chat.bot_id,
        role="assistant",
        type="answer",
        content="Half an ans",
        content_type="text",
        meta_data={"partial": "true"},
        created_at=now,
        updated_at=now,
    )
    assert store.save_partial(chat.id, chat.owner_id, partial)
    store.cancel(chat.id)
    (kept,) = store.messages(chat.id)
    assert kept.content == "Half an ans" and kept.meta_data == {"canceled": "true"}
    # the replica running the chat finds it ended and writes nothing more
    assert not store.save_partial(chat.id, chat.owner_id, partial)
    assert store.messages(chat.id)[0].meta_data == {"canceled": "true"}
