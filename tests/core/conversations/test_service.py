from __future__ import annotations

import pytest

from coze_lab.core.conversations import ConversationService, MessageEdit, NewMessage
from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.services import Runtime
from coze_lab.web.requests import parse_message


@pytest.fixture
def conversations(runtime: Runtime) -> ConversationService:
    return runtime.conversations


def _ids(page) -> list[str]:
    return [m.content for m in page.items]


def test_cursor_pages_both_ways_in_both_orders(runtime: Runtime, conversations) -> None:
    user = runtime.identity.ensure_user("alice")
    conv = conversations.create(user.id, "1024")
    made = [
        conversations.create_message(user.id, "1024", conv.id, NewMessage("user", str(i)))
        for i in range(7)
    ]

    def page(**kwargs):
        return conversations.list_messages(user.id, "1024", conv.id, limit=3, **kwargs)

    first = page(order="asc")
    assert _ids(first) == ["0", "1", "2"] and first.has_more
    second = page(order="asc", after_id=first.last_id)
    assert _ids(second) == ["3", "4", "5"] and second.has_more
    last = page(order="asc", after_id=second.last_id)
    assert _ids(last) == ["6"] and not last.has_more
    back = page(order="asc", before_id=made[6].id)
    assert _ids(back) == ["3", "4", "5"] and back.has_more
    assert _ids(page(order="desc")) == ["6", "5", "4"]
    assert _ids(page(order="desc", after_id=made[4].id)) == ["3", "2", "1"]
    newer = page(order="desc", before_id=made[1].id)
    assert _ids(newer) == ["4", "3", "2"] and newer.has_more
    assert not page(order="desc", before_id=made[4].id).has_more
    with pytest.raises(InvalidParameter):
        page(order="sideways")
    with pytest.raises(InvalidParameter):
        page(before_id=1, after_id=2)


def test_history_is_the_current_section_capped_by_rounds(runtime: Runtime, conversations) -> None:
    user = runtime.identity.ensure_user("alice")
    conv = conversations.create(user.id, "1024")

    def say(role: str, text: str) -> None:
        conversations.create_message(user.id, "1024", conv.id, NewMessage(role, text))

    for i in range(3):
        say("user", f"q{i}")
        say("assistant", f"a{i}")
    got = conversations.history(conversations.get(user.id, "1024", conv.id), rounds=2)
    assert [m.content for m in got] == ["q1", "a1", "q2", "a2"]
    conversations.clear(user.id, "1024", conv.id)
    cleared = conversations.get(user.id, "1024", conv.id)
    assert conversations.history(cleared, rounds=5) == []
    assert len(conversations.list_messages(user.id, "1024", conv.id).items) == 6


def test_connector_and_owner_scope_every_call(runtime: Runtime, conversations) -> None:
    alice = runtime.identity.ensure_user("alice")
    bob = runtime.identity.ensure_user("bob")
    conv = conversations.create(alice.id, "1024", messages=[NewMessage("user", "hi")])
    message = conversations.list_messages(alice.id, "1024", conv.id).items[0]
    calls = (
        lambda o, c: conversations.get(o, c, conv.id),
        lambda o, c: conversations.list_messages(o, c, conv.id),
        lambda o, c: conversations.get_message(o, c, conv.id, message.id),
        lambda o, c: conversations.modify_message(o, c, conv.id, message.id, MessageEdit()),
        lambda o, c: conversations.delete_message(o, c, conv.id, message.id),
        lambda o, c: conversations.clear(o, c, conv.id),
        lambda o, c: conversations.delete(o, c, conv.id),
    )
    for owner, connector in ((bob.id, "1024"), (alice.id, "999")):
        for call in calls:
            with pytest.raises(NotFound):
                call(owner, connector)
    assert conversations.get(alice.id, "1024", conv.id).id == conv.id


def test_object_string_content_is_checked(runtime: Runtime, conversations) -> None:
    """The request parser checks the content's form; the service checks it again on an edit
    (with the stored type) and checks the files a message names itself."""
    user = runtime.identity.ensure_user("alice")
    conv = conversations.create(user.id, "1024")
    good = '[{"type": "text", "text": "see"}, {"type": "image", "file_url": "https://x/y.png"}]'
    made = conversations.create_message(
        user.id,
        "1024",
        conv.id,
        parse_message({"role": "user", "content": good, "content_type": "object_string"}, "m"),
    )
    assert made.content_type == "object_string"
    for bad in ("not json", "[]", '[{"type": "video"}]', '[{"type": "image"}]'):
        with pytest.raises(InvalidParameter):
            parse_message({"role": "user", "content": bad, "content_type": "object_string"}, "m")
        with pytest.raises(InvalidParameter):  # an edit keeps the stored object_string type
            conversations.modify_message(user.id, "1024", conv.id, made.id, MessageEdit(bad))
    other_file = '[{"type": "file", "file_id": "7000000000000000001"}]'
    unreadable = NewMessage("user", other_file, "object_string")
    with pytest.raises(NotFound):
        conversations.create_message(user.id, "1024", conv.id, unreadable)
    with pytest.raises(NotFound):
        conversations.modify_message(user.id, "1024", conv.id, made.id, MessageEdit(other_file))
    with pytest.raises(NotFound):
        conversations.create(user.id, "1024", messages=[unreadable])
    assert conversations.get_message(user.id, "1024", conv.id, made.id).content == good
    assert len(conversations.list_messages(user.id, "1024", conv.id).items) == 1


@pytest.mark.parametrize("content_type", [{}, [], 0, False])
def test_a_content_type_that_is_not_a_name_is_refused_not_read_as_text(
    content_type: object,
) -> None:
    """schemathesis found ``"content_type": {}`` accepted as text (an empty value is falsy)."""
    from coze_lab.core.conversations.content import check_content

    with pytest.raises(InvalidParameter, match="content_type must be one of"):
        check_content("hi", content_type)
