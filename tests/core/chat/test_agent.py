"""The agent runtime in-process: tool loop bounds, failures, cancel and events."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from coze_lab.core import connectors
from coze_lab.core.chat import parse_chat_request
from coze_lab.local import LocalHost
from coze_lab.runtime import Runtime
from coze_lab.testing import ErrorReply, ModelServer, ScriptedToolCall, TextReply, ToolCallsReply


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelServer]:
    with ModelServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("COZE_LAB_DEFAULT_MODEL", "coze-lab-demo")
        yield server


@pytest.fixture
def host(runtime: Runtime, model_server: ModelServer) -> Iterator[LocalHost]:
    local = LocalHost(runtime, "agent")
    yield local
    local.close()


def chat(host: LocalHost, bot_id: int, text: str) -> tuple[list, object]:
    async def go():
        request = parse_chat_request(
            {
                "bot_id": str(bot_id),
                "stream": True,
                "additional_messages": [{"role": "user", "content": text}],
            }
        )
        handle = await host.runtime.chats.start(host.user.id, connectors.PLAYGROUND, request)
        return [e async for e in handle.channel.follow()], handle.chat

    return host.call(go(), timeout=30)


def make_bot(host: LocalHost, **body) -> int:
    user = host.user
    return host.runtime.bots.create(user.id, user.workspace_id, {"name": "b", **body}).id


def test_the_tool_loop_is_bounded(host: LocalHost, model_server: ModelServer) -> None:
    bot_id = make_bot(
        host,
        model_info_config={"model_id": "default", "max_tool_rounds": 2},
        workflow_id_list={"ids": []},
    )
    # a model that keeps calling an unknown tool gets error results, then no tools at all
    model_server.script(
        [ToolCallsReply([ScriptedToolCall("ghost", {"a": 1})]) for _ in range(2)]
        + [TextReply("giving up")]
    )
    events, _ = chat(host, bot_id, "loop")
    assert events[-2].event == "conversation.chat.completed"
    responses = [e.message for e in events if e.message and e.message.type == "tool_response"]
    assert [r.content for r in responses] == ["error: there is no tool with this name"] * 2
    assert responses[0].meta_data["ok"] == "false"
    assert "tools" not in model_server.requests[-1]


def test_model_failure_fails_the_chat_with_the_reason(host: LocalHost, model_server) -> None:
    bot_id = make_bot(host)
    model_server.script([ErrorReply(500, "the provider is down")])
    events, chat_info = chat(host, bot_id, "hi")
    failed = events[-2]
    assert failed.event == "conversation.chat.failed"
    assert failed.chat.last_error["code"] == 5020
    assert "the provider is down" in failed.chat.last_error["msg"]
    stored = host.runtime.chat_store.get(
        host.user.id, connectors.PLAYGROUND, chat_info.conversation_id, chat_info.id
    )
    assert stored.status == "failed" and stored.failed_at is not None
    assert events[-1].event == "done"


def test_cancel_keeps_the_partial_answer(host: LocalHost, model_server: ModelServer) -> None:
    bot_id = make_bot(host)
    model_server.chunk_delay = 0.05
    model_server.script([TextReply(" ".join(f"w{i}" for i in range(100)))])

    async def go():
        request = parse_chat_request(
            {
                "bot_id": str(bot_id),
                "stream": True,
                "additional_messages": [{"role": "user", "content": "long"}],
            }
        )
        chats = host.runtime.chats
        handle = await chats.start(host.user.id, connectors.PLAYGROUND, request)
        seen = []
        async for event in handle.channel.follow():
            seen.append(event)
            if event.event == "conversation.message.delta" and len(seen) == 5:
                await chats.cancel(host.user.id, connectors.PLAYGROUND, None, handle.chat.id)
        await asyncio.sleep(0)
        return seen, handle.chat

    seen, chat_info = host.call(go(), timeout=30)
    assert seen[-1].event == "done"
    assert not any(e.event == "conversation.chat.completed" for e in seen)
    assert model_server.wait_for("disconnects", 1)
    messages = host.runtime.chat_store.messages(chat_info.id)
    assert len(messages) == 1 and messages[0].meta_data == {"canceled": "true"}
    assert messages[0].content.startswith("w0 w1")
    stored = host.runtime.chat_store.status(chat_info.id)
    assert stored == "canceled"


def test_a_paused_workflow_tool_reports_the_question(host: LocalHost, model_server) -> None:
    import coze_lab as cl

    wf = cl.Workflow("ask_human")
    wf.inputs(topic=str)
    wf.question("ok", question="Approve {{start.topic}}?", choices=["yes", "no"])
    wf.end(answer="{{ok.answer}}")
    user = host.user
    saved = host.runtime.workflows.save(user.id, wf.to_json())
    bot_id = make_bot(host, workflow_id_list={"ids": [{"id": str(saved.id)}]})
    model_server.script(
        [ToolCallsReply([ScriptedToolCall("ask_human", {"topic": "lunch"})]), TextReply("waiting")]
    )
    events, _ = chat(host, bot_id, "ask")  # the Playground uses the workflow's draft
    response = next(e.message for e in events if e.message and e.message.type == "tool_response")
    body = json.loads(response.content)
    assert body["status"] == "waiting for a person"
    assert body["questions"][0]["question"] == "Approve lunch?"
    assert response.meta_data["status"] == "interrupted"
