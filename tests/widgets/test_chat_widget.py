"""The chat widget against a real server and the scripted model: streaming, tools, clear."""

from __future__ import annotations

import time
from typing import Any

from coze_lab.notebook.studio import Studio
from coze_lab.notebook.widgets import ChatWidget
from coze_lab.notebook.widgets.chat_state import ChatState
from coze_lab.testing import TextReply
from tests.widgets.conftest import Served


def make_bot(studio: Studio, name: str) -> str:
    bot = studio.create_bot(
        name=name,
        prompt_info={"prompt": "You are terse."},
        model_info_config={"model_id": "default"},
    )
    return bot["bot_id"] if "bot_id" in bot else bot["id"]


def from_page(widget: ChatWidget, content: dict[str, Any]) -> None:
    widget._handle_custom_msg(content, [])


def test_streams_an_answer_keeps_the_conversation_and_clears(
    studio: Studio, served: Served
) -> None:
    bot_id = make_bot(studio, "widget-helper")
    chat = studio.chat(bot_id)
    assert chat.bot_name == "widget-helper" and chat.status == "idle"
    seen: list[list[dict[str, Any]]] = []
    chat.observe(lambda change: seen.append(change["new"]), names="messages")

    served.model.script([TextReply("Paris is the capital of France.", delay=0.1)])
    from_page(chat, {"type": "send", "text": "Capital of France?"})  # returns at once
    assert chat.status == "streaming"
    assert chat.messages[0] == {
        "id": "local-0",
        "role": "user",
        "type": "question",
        "content": "Capital of France?",
        "streaming": False,
    }
    chat.wait(60)
    assert chat.status == "completed", chat.error
    answer = chat.messages[-1]
    assert answer["role"] == "assistant" and answer["type"] == "answer"
    assert answer["content"] == "Paris is the capital of France." and not answer["streaming"]
    # the answer's own usage, shown under it (the follow-up suggestions are the chat's)
    assert answer["usage"]["output_count"] > 0
    assert answer["usage"]["token_count"] == (
        answer["usage"]["input_count"] + answer["usage"]["output_count"]
    )
    partial = [m[-1]["content"] for m in seen if m and m[-1]["role"] == "assistant"]
    assert any(p and p != answer["content"] for p in partial), "no partial answer was pushed"
    assert chat.conversation_id and chat.chat_id
    conversation = chat.conversation_id

    served.model.script([TextReply("Berlin.")])
    chat.send("And Germany?").wait(60)
    assert chat.conversation_id == conversation
    assert [m["content"] for m in chat.messages][-1] == "Berlin."
    assert len(served.model.requests[-1]["messages"]) > 2  # the first round was history

    from_page(chat, {"type": "clear"})
    assert chat.messages[-1]["type"] == "section"
    served.model.script([TextReply("Fresh start.")])
    chat.send("Hello").wait(60)
    sent = served.model.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"]  # the new section has no history

    # History from the server, e.g. in a new widget after a kernel restart.
    again = studio.chat(bot_id, conversation_id=conversation)
    contents = [m["content"] for m in again.messages]
    assert contents[:2] == ["Capital of France?", "Paris is the capital of France."]
    assert again.messages[1]["usage"] == answer["usage"]  # kept with the message
    assert "Fresh start." in contents
    chat.close()
    again.close()


def test_an_error_is_shown_not_raised(studio: Studio) -> None:
    chat = ChatWidget("123456", studio=studio, bot_name="ghost")
    chat.send("hi").wait(30)
    assert chat.status == "failed" and chat.error
    from_page(chat, {"type": "send", "text": "   "})
    assert chat.error == "say something"
    chat.close()


def test_chat_state_tool_calls_and_failures() -> None:
    state = ChatState()
    state.ask("weather?")
    state.apply("conversation.chat.created", {"id": "c1", "conversation_id": "v1"})
    state.apply(
        "conversation.message.completed",
        {"id": "m1", "role": "assistant", "type": "function_call", "content": '{"name": "w"}'},
    )
    state.apply(
        "conversation.message.completed",
        {"id": "m2", "role": "assistant", "type": "tool_response", "content": "sunny"},
    )
    state.apply("conversation.message.delta", {"id": "m3", "role": "assistant", "content": "Sun"})
    assert state.messages[-1]["streaming"]
    state.apply("conversation.chat.failed", {"id": "c1", "last_error": {"msg": "model down"}})
    assert (state.status, state.error, state.chat_id) == ("failed", "model down", "c1")
    assert [m["type"] for m in state.messages] == [
        "question",
        "function_call",
        "tool_response",
        "answer",
    ]
    assert not any(m["streaming"] for m in state.messages)


def test_a_question_of_a_tool_workflow_is_answered_inline_and_the_chat_goes_on(
    studio: Studio, served: Served
) -> None:
    import time

    import coze_lab as cl
    from coze_lab.testing import ScriptedToolCall, ToolCallsReply

    wf = cl.Workflow("chat_approval")
    wf.inputs(topic=str)
    wf.question("ok", question="Ship {{start.topic}}?", choices=["yes", "no"])
    wf.end(decision="{{ok.answer}}")
    saved = studio.save_workflow(wf)
    bot = studio.create_bot(
        name="asker",
        prompt_info={"prompt": "You ask before shipping."},
        model_info_config={"model_id": "default"},
        workflow_id_list={"ids": [{"id": saved["id"]}]},
    )
    chat = studio.chat(bot["bot_id"])
    served.model.script(
        [
            ToolCallsReply([ScriptedToolCall("chat_approval", {"topic": "the rocket"})]),
            TextReply("I asked the team; please answer."),
            TextReply("Shipping the rocket, as you said."),
        ]
    )
    chat.send("Ship the rocket").wait(60)
    assert chat.status == "completed", chat.error
    deadline = time.monotonic() + 20
    while not chat.questions:
        assert time.monotonic() < deadline, "the tool's question never showed"
        time.sleep(0.05)
    [question] = chat.questions
    assert question["data"] == {"question": "Ship the rocket?", "choices": ["yes", "no"]}
    run_id = question["run_id"]
    tool_result = next(m for m in chat.messages if m["type"] == "tool_response")
    assert tool_result["execute_id"] == run_id and tool_result["run_status"] == "interrupted"

    # A wrong answer goes back to the form; the question stays.
    sent: list[Any] = []
    # what the widget sends the page (ipywidgets drops it when no kernel is attached, as
    # here, so catch it where Widget.send hands it on)
    chat._send = lambda msg, buffers=None: sent.append(msg)  # type: ignore[method-assign]
    from_page(chat, {"type": "answer", "event_id": question["event_id"], "data": "maybe"})
    assert chat.questions == [question]
    assert any("maybe" in str(s) or "one of" in str(s) for s in sent), sent

    from_page(chat, {"type": "answer", "event_id": question["event_id"], "data": "yes"})
    assert chat.questions == []
    deadline = time.monotonic() + 60
    while chat.messages[-1]["content"] != "Shipping the rocket, as you said.":
        assert time.monotonic() < deadline, chat.messages[-3:]
        time.sleep(0.05)
    assert studio.run_info(run_id)["outputs"] == {"decision": "yes"}
    report = [m for m in chat.messages if m["role"] == "user"][-1]["content"]
    assert report == (
        'I answered "Ship the rocket?" with "yes"; the workflow finished: {"decision": "yes"}'
    )
    # the bot heard it: the report is the last user message the model was sent
    assert served.model.requests[-1]["messages"][-1]["content"] == report
    chat.close()


def test_chat_state_keeps_the_run_of_a_workflow_tool() -> None:
    state = ChatState()
    state.ask("go")
    state.apply(
        "conversation.message.completed",
        {
            "id": "m2",
            "role": "assistant",
            "type": "tool_response",
            "content": "{}",
            "meta_data": {"execute_id": "77", "status": "interrupted"},
        },
    )
    assert state.waiting_runs() == ["77"]
    state.ask_about("77", [{"event_id": 5, "node_id": "ok", "data": {"question": "?"}}])
    assert state.questions[0]["event_id"] == "5" and state.questions[0]["run_id"] == "77"
    assert state.answered("5") is not None and state.questions == []


def test_a_widget_on_a_running_conversation_reattaches_and_shows_its_activity(
    studio: Studio, served: Served
) -> None:
    """A new widget (a reloaded page, a restarted kernel) on a conversation whose chat is
    still answering follows it to the end, without repeating what it had already said."""
    bot_id = make_bot(studio, "widget-reattach")
    words = " ".join(f"w{i}" for i in range(12))
    first = studio.chat(bot_id)
    served.model.chunk_delay = 0.5  # still answering when the second widget opens
    try:
        served.model.script([TextReply(words)])
        first.send("Count for me.")
        while not (first.conversation_id and first.chat_id):
            time.sleep(0.05)
        again = studio.chat(bot_id, conversation_id=first.conversation_id)
        assert again.status == "streaming" and again.chat_id == first.chat_id
    finally:
        served.model.chunk_delay = 0.0
    again.wait(60)
    first.wait(60)
    assert again.status == "completed", again.error
    assert [m["content"] for m in again.messages] == ["Count for me.", words]
    activity = again.load_activity()
    assert again.timeline == activity and activity["state"] == "done"
    kinds = [i["kind"] for i in activity["items"]]
    assert sorted(kinds) == ["answer", "chat", "message"]
    (answer,) = [i for i in activity["items"] if i["kind"] == "answer"]
    assert answer["detail"] == words
    from_page(again, {"type": "activity"})  # the page's Activity section asks again
    assert again.timeline["items"] == activity["items"] and not again.error
    first.close()
    again.close()
