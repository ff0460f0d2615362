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


def test_bot_variables_in_the_notebook_and_from_a_chats_workflow(
    agent_host: InProcessHost, model_env
) -> None:
    """``bot.variables``: definitions, your Playground values, another end user's; a
    workflow the chat runs assigns one for the chat's end user; who-may-set holds."""
    from coze_lab.notebook.http import StudioError

    wf = cl.Workflow("remember_city")
    wf.inputs(city=str)
    wf.node("assign", "remember", mode="bot_variables", inputs={"city": "{{start.city}}"})
    wf.end(saved="{{remember.city}}")
    bot = cl.Bot(
        "memo",
        prompt="They live in {{city}}; plan {{plan}}.",
        variables={"city": "Paris", "plan": {"default_value": "free", "user_can_set": False}},
        workflows=[wf],
        host=agent_host,
    )
    assert dict(bot.variables) == {"city": "Paris", "plan": "free"}
    assert [d["keyword"] for d in bot.variables.definitions] == ["city", "plan"]
    assert bot.variables.definitions[1]["user_can_set"] is False
    model_env.script(
        [
            ToolCallsReply([ScriptedToolCall("remember_city", {"city": "Oslo"}, id="c1")]),
            TextReply("Noted."),
            TextReply("Hi."),
        ]
    )
    assert bot.chat("I moved to Oslo.").text == "Noted."
    assert bot.variables["city"] == "Oslo"  # the chat's end user is you, on the Playground
    bot.chat("hi", new_conversation=True).wait()
    assert model_env.requests[-1]["messages"][0]["content"] == "They live in Oslo; plan free."
    bot.variables["city"] = "Rome"
    bot.variables.update(city="Bergen")
    assert bot.variables.states()[0]["value"] == "Bergen"
    with pytest.raises(StudioError) as refused:
        bot.variables.update(city="Nice", plan="pro")
    assert refused.value.code == 4000 and "plan" in str(refused.value)
    assert dict(bot.variables.items()) == {"city": "Bergen", "plan": "free"}  # none written
    with pytest.raises(KeyError, match="colour"):
        bot.variables["colour"]
    bot.publish()
    customer = bot.variables.of("customer-7")
    assert dict(customer) == {"city": "Paris", "plan": "free"}
    customer["city"] = "Lima"
    assert customer["city"] == "Lima" and bot.variables["city"] == "Bergen"
    bot.variables.define("units", "metric")
    assert bot.variables["units"] == "metric"  # a new definition is saved before reading
