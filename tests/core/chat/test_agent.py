"""The agent runtime in-process: tool loop bounds, failures, cancel and events."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from coze_lab.core import connectors
from coze_lab.core.chat import agent as agent_module
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.store.signals import Signals
from coze_lab.testing import ErrorReply, ModelServer, ScriptedToolCall, TextReply, ToolCallsReply
from coze_lab.web.requests import parse_bot_edit, parse_chat_request


def chat(host: InProcessHost, bot_id: int, text: str) -> tuple[list, object]:
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


def make_bot(host: InProcessHost, **body) -> int:
    user = host.user
    return host.runtime.bots.create(
        user.id, user.workspace_id, parse_bot_edit({"name": "b", **body}, create=True)
    ).id


def test_the_tool_loop_is_bounded(agent_host: InProcessHost, model_env: ModelServer) -> None:
    bot_id = make_bot(
        agent_host,
        model_info_config={"model_id": "default", "max_tool_rounds": 2},
        workflow_id_list={"ids": []},
    )
    # a model that keeps calling an unknown tool gets error results, then no tools at all
    model_env.script(
        [ToolCallsReply([ScriptedToolCall("ghost", {"a": 1})]) for _ in range(2)]
        + [TextReply("giving up")]
    )
    events, _ = chat(agent_host, bot_id, "loop")
    assert events[-2].event == "conversation.chat.completed"
    responses = [e.message for e in events if e.message and e.message.type == "tool_response"]
    assert [r.content for r in responses] == ["error: there is no tool with this name"] * 2
    assert responses[0].meta_data["ok"] == "false"
    assert "tools" not in model_env.requests[-1]


def test_model_failure_fails_the_chat_with_the_reason(agent_host: InProcessHost, model_env) -> None:
    bot_id = make_bot(agent_host)
    model_env.script([ErrorReply(500, "the provider is down")])
    events, chat_info = chat(agent_host, bot_id, "hi")
    failed = events[-2]
    assert failed.event == "conversation.chat.failed"
    assert failed.chat.last_error["code"] == 5020
    assert "the provider is down" in failed.chat.last_error["msg"]
    stored = agent_host.runtime.chat_store.get(
        agent_host.user.id, connectors.PLAYGROUND, chat_info.conversation_id, chat_info.id
    )
    assert stored.status == "failed" and stored.failed_at is not None
    assert events[-1].event == "done"


def cancel_after_five_events(agent_host: InProcessHost, bot_id: int) -> tuple[list, Any]:
    """A streamed chat canceled once it has sent five events (the fifth a delta): the
    events it sent, and the chat."""

    async def go():
        request = parse_chat_request(
            {
                "bot_id": str(bot_id),
                "stream": True,
                "additional_messages": [{"role": "user", "content": "long"}],
            }
        )
        chats = agent_host.runtime.chats
        handle = await chats.start(agent_host.user.id, connectors.PLAYGROUND, request)
        seen = []
        async for event in handle.channel.follow():
            seen.append(event)
            if event.event == "conversation.message.delta" and len(seen) == 5:
                await chats.cancel(agent_host.user.id, connectors.PLAYGROUND, None, handle.chat.id)
        await asyncio.sleep(0)
        return seen, handle.chat

    return agent_host.call(go(), timeout=30)


def test_cancel_keeps_the_partial_answer(agent_host: InProcessHost, model_env: ModelServer) -> None:
    bot_id = make_bot(agent_host)
    model_env.chunk_delay = 0.05
    model_env.script([TextReply(" ".join(f"w{i}" for i in range(100)))])

    seen, chat_info = cancel_after_five_events(agent_host, bot_id)
    assert seen[-1].event == "done"
    assert not any(e.event == "conversation.chat.completed" for e in seen)
    assert model_env.wait_for("disconnects", 1)
    messages = agent_host.runtime.chat_store.messages(chat_info.id)
    assert len(messages) == 1 and messages[0].meta_data == {"canceled": "true"}
    assert messages[0].content.startswith("w0 w1")
    stored = agent_host.runtime.chat_store.status(chat_info.id)
    assert stored == "canceled"


def test_a_second_cancel_while_the_keeper_stops_keeps_the_partial_answer(
    agent_host: InProcessHost, model_env: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel arrives (the signal) and a second one lands while the chat stops its keeper
    (the keeper's own write found the chat canceled): the answer so far is still kept as
    canceled, not left as a partial row or lost."""
    stop = agent_module.AgentRun._stop
    interrupted: list[bool] = []

    async def stop_cancelled_again(self, keeper):  # type: ignore[no-untyped-def]
        if not interrupted:
            interrupted.append(True)
            asyncio.current_task().cancel()  # type: ignore[union-attr]
            await asyncio.sleep(0)
        await stop(self, keeper)

    monkeypatch.setattr(agent_module.AgentRun, "_stop", stop_cancelled_again)
    bot_id = make_bot(agent_host)
    model_env.chunk_delay = 0.05
    model_env.script([TextReply(" ".join(f"w{i}" for i in range(100)))])

    seen, chat_info = cancel_after_five_events(agent_host, bot_id)
    assert interrupted and seen[-1].event == "done"
    messages = agent_host.runtime.chat_store.messages(chat_info.id)
    assert len(messages) == 1 and messages[0].meta_data == {"canceled": "true"}
    assert messages[0].content.startswith("w0 w1")
    assert agent_host.runtime.chat_store.status(chat_info.id) == "canceled"


def test_a_cancel_whose_signal_was_lost_stops_the_chat_at_its_next_write(
    agent_host: InProcessHost, model_env: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replica running the chat never hears of the cancel (no signal, no poll): the
    keeper's next partial save finds the chat ended and stops it."""
    monkeypatch.setattr(agent_module, "CANCEL_POLL_S", 3600.0)
    monkeypatch.setattr(Signals, "notify", lambda self, connection, topic: None)
    bot_id = make_bot(agent_host)
    model_env.chunk_delay = 0.05
    model_env.script([TextReply(" ".join(f"w{i}" for i in range(200)))])
    store = agent_host.runtime.chat_store

    async def go():
        request = parse_chat_request(
            {
                "bot_id": str(bot_id),
                "stream": True,
                "additional_messages": [{"role": "user", "content": "long"}],
            }
        )
        handle = await agent_host.runtime.chats.start(
            agent_host.user.id, connectors.PLAYGROUND, request
        )
        seen = []
        async for event in handle.channel.follow():
            seen.append(event)
            if event.event == "conversation.message.delta" and len(seen) == 5:
                await asyncio.to_thread(store.cancel, handle.chat.id)
        return seen, handle.chat

    seen, chat_info = agent_host.call(go(), timeout=30)
    assert not any(e.event == "conversation.chat.completed" for e in seen)
    assert model_env.wait_for("disconnects", 1), "the chat streamed on after its cancel"
    assert store.status(chat_info.id) == "canceled"
    [answer] = store.messages(chat_info.id)
    assert answer.meta_data == {"canceled": "true"} and answer.content.startswith("w0 w1")


def test_a_paused_workflow_tool_reports_the_question(agent_host: InProcessHost, model_env) -> None:
    import coze_lab as cl

    wf = cl.Workflow("ask_human")
    wf.inputs(topic=str)
    wf.question("ok", question="Approve {{start.topic}}?", choices=["yes", "no"])
    wf.end(answer="{{ok.answer}}")
    user = agent_host.user
    saved = agent_host.runtime.workflows.save(user.id, wf.to_json())
    bot_id = make_bot(agent_host, workflow_id_list={"ids": [{"id": str(saved.id)}]})
    model_env.script(
        [ToolCallsReply([ScriptedToolCall("ask_human", {"topic": "lunch"})]), TextReply("waiting")]
    )
    events, _ = chat(agent_host, bot_id, "ask")  # the Playground uses the workflow's draft
    response = next(e.message for e in events if e.message and e.message.type == "tool_response")
    body = json.loads(response.content)
    assert body["status"] == "waiting for a person"
    assert body["questions"][0]["question"] == "Approve lunch?"
    assert response.meta_data["status"] == "interrupted"


def test_cancel_during_a_workflow_tool_cancels_its_run(
    agent_host: InProcessHost, model_env: ModelServer
) -> None:
    import coze_lab as cl

    wf = cl.Workflow("wait_for_human")
    wf.inputs(topic=str)
    wf.question("ok", question="Approve {{start.topic}}?")
    wf.end(answer="{{ok.answer}}")
    saved = agent_host.runtime.workflows.save(agent_host.user.id, wf.to_json())
    bot_id = make_bot(agent_host, workflow_id_list={"ids": [{"id": str(saved.id)}]})
    model_env.script([ToolCallsReply([ScriptedToolCall("wait_for_human", {"topic": "x"})])])
    engine = agent_host.runtime.engine

    async def go():
        request = parse_chat_request(
            {
                "bot_id": str(bot_id),
                "stream": True,
                "additional_messages": [{"role": "user", "content": "go"}],
            }
        )
        chats = agent_host.runtime.chats
        original = engine.wait
        started: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def slow_wait(run_id: int):  # the tool is still waiting when the cancel comes
            if not started.done():
                started.set_result(run_id)
            await asyncio.sleep(30)
            return await original(run_id)

        engine.wait = slow_wait
        try:
            handle = await chats.start(agent_host.user.id, connectors.PLAYGROUND, request)
            run_id = await asyncio.wait_for(started, 10)
            await chats.cancel(agent_host.user.id, connectors.PLAYGROUND, None, handle.chat.id)
            await chats.wait(handle.chat.id)
        finally:
            engine.wait = original
        return run_id, handle.chat.id

    run_id, chat_id = agent_host.call(go(), timeout=30)
    assert agent_host.runtime.chat_store.status(chat_id) == "canceled"
    assert engine.store.get(run_id, nodes=False).status == "canceled"


def test_the_answer_is_kept_while_it_streams_and_replaced_when_done(
    agent_host: InProcessHost, model_env: ModelServer
) -> None:
    """Partial answers are written as the answer streams (a killed server loses at most
    half a second of it); the finished answer takes their place, and text said before tool
    calls leaves no answer behind."""
    bot_id = make_bot(agent_host, functions=[{"name": "lookup"}])
    model_env.chunk_delay = 0.05
    words = " ".join(f"w{i}" for i in range(40))  # two seconds of streaming
    model_env.script([ToolCallsReply([ScriptedToolCall("lookup", {})], text=words)])
    store = agent_host.runtime.chat_store
    partials: list[str] = []

    async def go():
        request = parse_chat_request(
            {
                "bot_id": str(bot_id),
                "stream": True,
                "additional_messages": [{"role": "user", "content": "look it up"}],
            }
        )
        chats = agent_host.runtime.chats
        handle = await chats.start(agent_host.user.id, connectors.PLAYGROUND, request)
        async for event in handle.channel.follow():
            if event.event == "conversation.message.delta":
                kept = [m for m in store.messages(handle.chat.id) if m.type == "answer"]
                partials.extend(m.content for m in kept if m.meta_data == {"partial": "true"})
        return handle.chat

    first = agent_host.call(go(), timeout=30)
    assert partials and words.startswith(partials[-1])  # written while streaming
    assert store.status(first.id) == "requires_action"
    assert [m.type for m in store.messages(first.id)] == ["function_call"]  # no stray answer

    model_env.script([TextReply(words)])
    events, done = chat(agent_host, bot_id, "now answer")
    assert events[-2].event == "conversation.chat.completed"
    answers = [m for m in store.messages(done.id) if m.type == "answer"]
    assert len(answers) == 1 and answers[0].content == words and answers[0].meta_data == {}


def test_a_model_that_fails_before_its_request_fails_the_chat_visibly(
    agent_host: InProcessHost, model_env: ModelServer, tmp_path, monkeypatch
) -> None:
    """The key variable of the bot's model is unset: the run fails before any request goes
    out, and the failure is still recorded on the chat's row (written first)."""
    registry = tmp_path / "models.json"
    spec = model_env.spec("keyless", api_key_env="COZE_LAB_TEST_UNSET_KEY")
    registry.write_text(
        json.dumps(
            [
                {
                    "id": spec.id,
                    "base_url": spec.base_url,
                    "model": spec.model,
                    "api_key_env": "COZE_LAB_TEST_UNSET_KEY",
                }
            ]
        )
    )
    monkeypatch.setenv("COZE_LAB_MODELS_FILE", str(registry))
    monkeypatch.delenv("COZE_LAB_TEST_UNSET_KEY", raising=False)
    bot_id = make_bot(agent_host, model_info_config={"model_id": "keyless"})
    events, chat_info = chat(agent_host, bot_id, "hi")
    assert [e.event for e in events[-2:]] == ["conversation.chat.failed", "done"]
    assert "COZE_LAB_TEST_UNSET_KEY" in events[-2].chat.last_error["msg"]
    stored = agent_host.runtime.chat_store.get(
        agent_host.user.id, connectors.PLAYGROUND, chat_info.conversation_id, chat_info.id
    )
    assert stored.status == "failed"
    assert model_env.requests == []
