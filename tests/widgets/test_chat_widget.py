"""The chat widget against a real server and the scripted model: streaming, tools, clear."""

from __future__ import annotations

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
