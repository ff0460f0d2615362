"""A chat's events are persisted as it streams: a client re-attaches from any replica (here a
second runtime on the same database, with its own chat service) or after a reload, with the
number of the last event it saw, and gets exactly what followed."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

from coze_lab.config import CozeLab
from coze_lab.core import connectors
from coze_lab.core.chat import ChatEvent
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer, TextReply
from coze_lab.web.requests import parse_bot_edit, parse_chat_request
from tests.support import FakeClock

WORDS = [f"w{i}" for i in range(60)]


def _request(bot_id: int, text: str = "talk") -> object:
    return parse_chat_request(
        {
            "bot_id": str(bot_id),
            "stream": True,
            "additional_messages": [{"role": "user", "content": text}],
        }
    )


def _bot(host: InProcessHost) -> int:
    user = host.user
    return host.runtime.bots.create(
        user.id, user.workspace_id, parse_bot_edit({"name": "b"}, create=True)
    ).id


def _shape(event: ChatEvent) -> tuple:
    """What a client reads of an event (a replayed delta carries its first neighbour's
    timestamps: see ``events.pack``)."""
    chat = event.chat and (event.chat.id, event.chat.status, event.chat.usage)
    message = event.message and (event.message.id, event.message.type, event.message.content)
    return event.event, chat, message


def _text(events: list[ChatEvent]) -> str:
    return "".join(
        e.message.content for e in events if e.event == "conversation.message.delta" and e.message
    )


def test_every_event_is_logged_and_deltas_are_written_together(
    agent_host: InProcessHost, model_env: ModelServer
) -> None:
    bot_id = _bot(agent_host)
    model_env.script([TextReply(" ".join(WORDS))])
    chats = agent_host.runtime.chats
    store = agent_host.runtime.chat_store

    async def go() -> tuple[list[ChatEvent], int]:
        handle = await chats.start(agent_host.user.id, connectors.PLAYGROUND, _request(bot_id))
        events = [e async for e in handle.channel.follow()]
        await chats.wait(handle.chat.id)
        while handle.chat.id in chats._channels:  # the log's last write
            await asyncio.sleep(0.01)
        return events, handle.chat.id

    events, chat_id = agent_host.call(go(), timeout=30)
    logged = store.events(chat_id)
    assert [seq for seq, _ in logged] == list(range(1, len(events) + 1))
    assert [_shape(ChatEvent.from_dict(d)) for _, d in logged] == [_shape(e) for e in events]
    deltas = sum(e.event == "conversation.message.delta" for e in events)
    assert deltas >= len(WORDS) // 2
    with store.db.read() as connection:
        from sqlalchemy import select

        from coze_lab.store.models import ChatEventBatch

        stored = connection.execute(
            select(ChatEventBatch.events).where(ChatEventBatch.chat_id == chat_id)
        ).all()
    rows = len(stored)
    assert rows < deltas / 4, f"{rows} writes for {deltas} deltas: not batched"
    size = sum(len(json.dumps(r.events)) for r in stored)
    assert size < 400 * (len(events) - deltas) + 80 * deltas, f"{size} bytes: deltas not packed"

    # a reload re-attaches after any event and gets exactly what followed, then done
    async def reattach(after: int) -> list[tuple[int, ChatEvent]]:
        follow = chats.events(agent_host.user.id, connectors.PLAYGROUND, None, chat_id, after)
        return [item async for item in follow if item is not None]

    for after in (0, 3, len(events) - 1):
        tail = agent_host.call(reattach(after), timeout=10)
        assert [_shape(e) for _, e in tail] == [_shape(e) for e in events[after:]]
        assert [s for s, _ in tail] == list(range(after + 1, len(events) + 1))


def test_a_chat_running_on_one_replica_is_followed_from_another(
    agent_host: InProcessHost, model_env: ModelServer, config: CozeLab
) -> None:
    bot_id = _bot(agent_host)
    model_env.chunk_delay = 0.03  # a 2 s answer
    model_env.script([TextReply(" ".join(WORDS))])
    other = Runtime(config)  # another replica: its own chat service and signals

    async def go() -> tuple[list[ChatEvent], list[tuple[int, ChatEvent]]]:
        other.signals.start()
        await other.signals.ready()
        handle = await agent_host.runtime.chats.start(
            agent_host.user.id, connectors.PLAYGROUND, _request(bot_id)
        )
        seen: list[ChatEvent] = []
        async for event in handle.channel.follow():
            seen.append(event)
            if len(seen) == 5:
                break  # the client goes away (a reload), with 5 events seen
        assert handle.chat.id not in other.chats._channels
        follow = other.chats.events(
            agent_host.user.id, connectors.PLAYGROUND, None, handle.chat.id, len(seen)
        )
        rest = [item async for item in follow if item is not None]
        await other.signals.close()
        return seen, rest

    try:
        seen, rest = agent_host.call(go(), timeout=60)
    finally:
        other.db.dispose()
    events = seen + [e for _, e in rest]
    assert [s for s, _ in rest] == list(range(6, len(events) + 1))
    assert events[-2].event == "conversation.chat.completed" and events[-1].event == "done"
    assert _text(events) == " ".join(WORDS)


def test_a_lost_chat_ends_its_log_with_the_failure(runtime: Runtime, clock: FakeClock) -> None:
    store = runtime.chat_store
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
    started = ChatEvent("conversation.chat.in_progress", chat=new.chat)
    assert store.append_events(new.chat.id, 1, [started.to_dict()])
    clock.advance(timedelta(minutes=3))
    assert runtime.chats.recover() == 1
    logged = [(seq, ChatEvent.from_dict(d)) for seq, d in store.events(new.chat.id)]
    assert [(s, e.event) for s, e in logged] == [
        (1, "conversation.chat.in_progress"),
        (2, "conversation.chat.failed"),
        (3, "done"),
    ]
    assert logged[1][1].chat is not None and "stopped" in logged[1][1].chat.last_error["msg"]
    # the dead server's last flush, arriving late, does not overwrite the end
    assert not store.append_events(new.chat.id, 2, [started.to_dict()])


def test_an_event_is_logged_with_every_field_of_its_record() -> None:
    """The log's form of an event is the record's fields, dates as ISO text, and reads back
    as the same event (what ``dataclasses.asdict`` gave, without its deep copy)."""
    from dataclasses import asdict
    from datetime import UTC, datetime

    from coze_lab.core.chat.store import ChatInfo
    from coze_lab.core.conversations import MessageInfo

    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    chat = ChatInfo(
        id=1, owner_id=2, conversation_id=3, section_id=4, bot_id=5, bot_version=6,
        connector_id="1024", status="requires_action", usage={"token_count": 7},
        last_error=None, required_action={"type": "submit_tool_outputs", "calls": [{"id": "c"}]},
        meta_data={"k": "v"}, created_at=now, updated_at=now, completed_at=None, failed_at=now,
    )  # fmt: skip
    message = MessageInfo(
        id=8, conversation_id=3, section_id=4, chat_id=1, bot_id=5, role="assistant",
        type="answer", content="hi", content_type="text", meta_data={"partial": "true"},
        created_at=now, updated_at=now, usage={"token_count": 7, "cost": 0.5},
    )  # fmt: skip
    for event in (ChatEvent("conversation.chat.requires_action", chat=chat),
                  ChatEvent("conversation.message.completed", message=message)):  # fmt: skip
        record = event.chat or event.message
        assert record is not None
        expected = {
            k: v.isoformat() if isinstance(v, datetime) else v for k, v in asdict(record).items()
        }
        data = event.to_dict()
        assert data == {"event": event.event, ("chat" if event.chat else "message"): expected}
        assert json.loads(json.dumps(data)) == data
        assert ChatEvent.from_dict(data) == event
