"""``cl.Bot`` in-process: the notebook API on the lab's runtime and the local model server."""

from __future__ import annotations

import pytest

import coze_lab as cl
from coze_lab.core.errors import InvalidParameter
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.testing import ScriptedToolCall, TextReply, ToolCallsReply


def test_chat_streams_and_keeps_the_conversation(agent_host: InProcessHost, model_env) -> None:
    bot = cl.Bot("helper", prompt="Hello {{name}}", variables={"name": "Ada"}, host=agent_host)
    model_env.script([TextReply("one two three")])
    reply = bot.chat("count")
    pieces = list(reply)
    assert "".join(pieces) == "one two three" and len(pieces) > 1
    assert reply.status == "completed" and reply.usage["token_count"] > 0
    assert model_env.requests[-1]["messages"][0]["content"] == "Hello Ada"
    second = bot.chat("again", variables={"name": "Bob"})
    assert second.text == "[demo model] You said: again"
    sent = model_env.requests[-1]["messages"]
    assert sent[0]["content"] == "Hello Bob"
    assert [m["content"] for m in sent[1:]] == ["count", "one two three", "again"]
    assert [m.type for m in bot.history()] == ["question", "answer", "question", "answer"]
    bot.clear()
    bot.chat("fresh").wait()
    assert [m["role"] for m in model_env.requests[-1]["messages"]] == ["system", "user"]
    # the same name is the same bot; publishing serves it on the API
    again = cl.Bot("helper", prompt="changed", host=agent_host)
    assert again.id == bot.id
    assert again.publish() == 1
    assert agent_host.runtime.bots.get(
        agent_host.user.id, int(bot.id), published=True
    ).config.prompt == ("changed")


def test_client_functions_end_in_requires_action(agent_host: InProcessHost, model_env) -> None:
    bot = cl.Bot(
        "caller",
        functions=[{"name": "lookup", "parameters": {"type": "object", "properties": {}}}],
        host=agent_host,
    )
    model_env.script([ToolCallsReply([ScriptedToolCall("lookup", {}, id="c1")])])
    reply = bot.chat("look it up")
    assert reply.status == "requires_action"
    assert reply.required_action["submit_tool_outputs"]["tool_calls"][0]["id"] == "c1"
    assert [m.type for m in reply.messages] == ["function_call"]
    # the notebook answers the client function and the chat goes on
    model_env.script([TextReply("It is 21 degrees.")])
    with pytest.raises(ValueError, match="no tool call"):
        reply.submit_tool_outputs({"c2": "?"})
    after = reply.submit_tool_outputs({"c1": {"celsius": 21}})
    assert after.status == "completed" and after.text == "It is 21 degrees."
    assert model_env.requests[-1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": '{"celsius": 21}',
    }
    with pytest.raises(RuntimeError, match="waits for no tool output"):
        after.submit_tool_outputs({"c1": "again"})


def test_bad_input_raises_before_anything_runs(agent_host: InProcessHost) -> None:
    bot = cl.Bot("strict", host=agent_host)
    with pytest.raises(InvalidParameter):
        bot.chat("x", variables={"sys_user_id": "spoof"})
    assert bot.conversation_id is None
