"""Activity: a session's run state and timeline, from what chats, runs and the file history
stored (real agent runs against the local model server, on every database under test)."""

from __future__ import annotations

import pytest

import coze_lab as cl
from coze_lab.core import connectors
from coze_lab.core.errors import NotFound
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.testing import ErrorReply, ModelServer, ScriptedToolCall, TextReply, ToolCallsReply
from coze_lab.web.requests import parse_bot_edit, parse_chat_request


def _bot(host: InProcessHost, **fields: object) -> int:
    user = host.user
    edit = parse_bot_edit({"name": "b", **fields}, create=True)
    return host.runtime.bots.create(user.id, user.workspace_id, edit).id


def _chat(host: InProcessHost, bot_id: int, text: str, conversation_id: int | None = None) -> int:
    """Start a Playground chat, wait for its end; the conversation's id."""
    body = {
        "bot_id": str(bot_id),
        "stream": True,
        "additional_messages": [{"role": "user", "content": text}],
    }
    chats = host.runtime.chats
    request = parse_chat_request(body, None if conversation_id is None else str(conversation_id))

    async def go() -> int:
        handle = await chats.start(host.user.id, connectors.PLAYGROUND, request)
        await chats.wait(handle.chat.id)
        return handle.chat.conversation_id

    return host.call(go(), timeout=60)


def test_a_question_waiting_in_a_tool_run_makes_the_session_wait(
    agent_host: InProcessHost, model_env: ModelServer
) -> None:
    wf = cl.Workflow("approve_launch", description="Ask before a launch")
    wf.inputs(topic=str)
    wf.question("approve", question="Ship {{start.topic}}?", choices=["yes", "no"])
    wf.end(approved="{{approve.answer}}")
    runtime, user = agent_host.runtime, agent_host.user
    saved = runtime.workflows.save(user.id, wf.validate().to_dict())
    bot_id = _bot(agent_host, workflow_id_list={"ids": [{"id": str(saved.id)}]})
    model_env.script(
        [
            ToolCallsReply([ScriptedToolCall("approve_launch", {"topic": "v2"}, id="c1")]),
            TextReply("Waiting for your approval."),
        ]
    )
    conversation = _chat(agent_host, bot_id, "Launch v2")
    states = runtime.activity.states(user.id, [conversation])
    assert states[conversation].state == "waiting"

    line = runtime.activity.conversation(user.id, conversation)
    assert line.state.state == "waiting"
    kinds = [i.kind for i in line.items]
    assert kinds[:2] == ["chat", "message"] and kinds[-1] == "answer"
    (question,) = [i for i in line.items if i.kind == "question"]
    assert question.status == "pending" and "Ship v2?" in question.title
    (call,) = [i for i in line.items if i.kind == "tool_call"]
    assert call.title == "approve_launch" and '"topic": "v2"' in call.detail
    (result,) = [i for i in line.items if i.kind == "tool_result"]
    run_id = result.run_id
    assert run_id is not None

    # the run's own timeline says the same; answered, both are done
    assert runtime.activity.run(user.id, run_id).state.state == "waiting"
    (pending,) = runtime.runs.pending(user.id, run_id)

    async def answer() -> None:
        await runtime.runs.resume(user.id, pending.event_id, "yes")
        await runtime.runs.wait(run_id)

    agent_host.call(answer(), timeout=30)
    assert runtime.activity.states(user.id, [conversation])[conversation].state == "done"
    run_line = runtime.activity.run(user.id, run_id)
    assert run_line.state.state == "done"
    assert sorted(i.kind for i in run_line.items) == ["node", "question", "run"]
    (asked,) = [i for i in run_line.items if i.kind == "question"]
    (node,) = [i for i in run_line.items if i.kind == "node"]
    assert asked.status == "resumed" and node.node_id == "approve"
    assert '"answer": "yes"' in node.detail


def test_running_failed_idle_and_someone_elses(
    agent_host: InProcessHost, model_env: ModelServer
) -> None:
    runtime, user = agent_host.runtime, agent_host.user
    bot_id = _bot(agent_host)
    model_env.script([ErrorReply(400, "context too long")])
    failed = _chat(agent_host, bot_id, "Hello")
    assert runtime.activity.states(user.id, [failed])[failed].state == "failed"
    items = runtime.activity.conversation(user.id, failed).items
    assert sorted(i.kind for i in items) == ["chat", "message"]
    (chat_item,) = [i for i in items if i.kind == "chat"]
    assert chat_item.status == "failed"
    assert "context too long" in chat_item.detail

    # a chat in progress: running, with the chat a client re-attaches to
    model_env.chunk_delay = 0.5  # still answering when its state is read
    model_env.script([TextReply("one two three four five six")])
    chats = runtime.chats
    body = {
        "bot_id": str(bot_id),
        "stream": True,
        "additional_messages": [{"role": "user", "content": "Again"}],
    }

    async def start() -> int:
        request = parse_chat_request(body, str(failed))
        handle = await chats.start(user.id, connectors.PLAYGROUND, request)
        return handle.chat.id

    chat_id = agent_host.call(start(), timeout=30)
    try:
        state = runtime.activity.states(user.id, [failed])[failed]
        assert (state.state, state.chat_id) == ("running", chat_id)
    finally:
        model_env.chunk_delay = 0.0
        agent_host.call(chats.wait(chat_id), timeout=30)
    assert runtime.activity.states(user.id, [failed])[failed].state == "done"

    # a conversation with no chat yet is idle; another user sees nothing of ours
    empty = runtime.conversations.create(user.id, connectors.PLAYGROUND, bot_id=bot_id)
    assert runtime.activity.states(user.id, [empty.id])[empty.id].state == "idle"
    other = runtime.identity.ensure_user("mallory")
    assert runtime.activity.states(other.id, [failed])[failed].state == "idle"
    with pytest.raises(NotFound):
        runtime.activity.conversation(other.id, failed)
