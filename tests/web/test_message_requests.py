"""Message bodies become the conversations service's commands (web/requests.py)."""

from __future__ import annotations

import pytest

from coze_lab.core.conversations import MessageEdit
from coze_lab.core.errors import InvalidParameter
from coze_lab.web.requests import parse_initial_messages, parse_message, parse_message_edit


def test_a_modify_body_changes_only_what_it_names() -> None:
    assert parse_message_edit({}) == MessageEdit()
    assert parse_message_edit({"content": "x"}) == MessageEdit(content="x")
    assert parse_message_edit({"content_type": None}).content_type == "text"
    assert parse_message_edit({"meta_data": {"k": "v"}}).meta_data == {"k": "v"}
    for body in ({"content": 3}, {"content_type": "video"}, {"meta_data": {"k": 1}}):
        with pytest.raises(InvalidParameter):
            parse_message_edit(body)


def test_messages_of_a_new_conversation_are_bounded_and_checked() -> None:
    assert [m.content for m in parse_initial_messages(None)] == []
    parsed = parse_initial_messages([{"role": "assistant", "content": "hi"}])
    assert parsed[0].message_type == "answer"
    with pytest.raises(InvalidParameter, match="list"):
        parse_initial_messages("hi")
    with pytest.raises(InvalidParameter, match="at most 100"):
        parse_initial_messages([{"role": "user", "content": "x"}] * 101)
    with pytest.raises(InvalidParameter, match=r"messages\[0\].role"):
        parse_initial_messages([{"role": "system", "content": "x"}])
    with pytest.raises(InvalidParameter, match="type 'answer' is not allowed"):
        parse_message({"role": "user", "content": "x", "type": "answer"}, "m")
