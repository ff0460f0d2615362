"""The Coze conversation and message API (``/v1/conversation...``, ``/v1/conversations``)."""

from __future__ import annotations

from typing import Any

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.params import int_value
from coze_lab.web.requests import (
    parse_conversation_edit,
    parse_feedback,
    parse_initial_messages,
    parse_message,
    parse_message_edit,
)


def _optional_id(value: Any, name: str) -> int | None:
    if isinstance(value, bool):  # False == 0: not read as "absent"
        raise InvalidParameter(f"{name} must be a numeric string")
    return None if value in (None, "", "0", 0) else parse_id(value, name)


class ConversationCreateHandler(CozeHandler):
    def post(self) -> None:
        user = self.coze_user()
        body = self.json_body()
        messages = parse_initial_messages(body.get("messages"))
        connector = self.connector()
        requested = body.get("connector_id")
        if requested not in (None, "", connector):
            raise InvalidParameter(f"this token creates conversations on connector {connector}")
        info = self.runtime.conversations.create(
            user.id,
            connector,
            bot_id=_optional_id(body.get("bot_id"), "bot_id"),
            name=body.get("name") or "",
            meta_data=body.get("meta_data"),
            messages=messages,
        )
        self.reply(serialize.conversation(info))


class ConversationRetrieveHandler(CozeHandler):
    def get(self) -> None:
        user = self.coze_user()
        conversation_id = parse_id(
            self.get_query_argument("conversation_id", None), "conversation_id"
        )
        info = self.runtime.conversations.get(user.id, self.connector(), conversation_id)
        self.reply(serialize.conversation(info))


class ConversationsHandler(CozeHandler):
    """GET /v1/conversations?bot_id=: the caller's conversations with a bot, newest first."""

    def get(self) -> None:
        user = self.coze_user()
        order = self.get_query_argument("sort_order", "DESC").upper()
        if order not in ("ASC", "DESC"):
            raise InvalidParameter("sort_order must be ASC or DESC")
        items, has_more = self.runtime.conversations.list(
            user.id,
            self.connector(),
            bot_id=parse_id(self.get_query_argument("bot_id", None), "bot_id"),
            page_num=int_value(
                self.get_query_argument("page_num", None), "page_num", default=1, low=1, high=10**6
            ),
            page_size=int_value(
                self.get_query_argument("page_size", None), "page_size", default=50, low=1, high=100
            ),
            newest_first=order == "DESC",
        )
        self.reply(
            {"conversations": [serialize.conversation(c) for c in items], "has_more": has_more}
        )


class ConversationHandler(CozeHandler):
    """PUT: rename (``name``) and/or replace ``meta_data``. DELETE: delete the conversation
    with its messages and chats."""

    def put(self, conversation_id: str) -> None:
        user = self.coze_user()
        body = self.json_body()
        info = self.runtime.conversations.update(
            user.id,
            self.connector(),
            parse_id(conversation_id, "conversation_id"),
            parse_conversation_edit(body),
        )
        self.reply(serialize.conversation(info))

    def delete(self, conversation_id: str) -> None:
        user = self.coze_user()
        self.runtime.conversations.delete(
            user.id, self.connector(), parse_id(conversation_id, "conversation_id")
        )
        self.reply({})


class ConversationClearHandler(CozeHandler):
    """POST /v1/conversations/{id}/clear: a new section; later chats see no earlier history."""

    def post(self, conversation_id: str) -> None:
        user = self.coze_user()
        number = parse_id(conversation_id, "conversation_id")
        section_id = self.runtime.conversations.clear(user.id, self.connector(), number)
        self.reply({"id": str(section_id), "conversation_id": str(number)})


class MessageArea(CozeHandler):
    """The message endpoints name the conversation (and the message) in the query."""

    def _conversation_id(self) -> int:
        return parse_id(self.get_query_argument("conversation_id", None), "conversation_id")

    def _message_id(self) -> int:
        return parse_id(self.get_query_argument("message_id", None), "message_id")


class MessageCreateHandler(MessageArea):
    def post(self) -> None:
        user = self.coze_user()
        info = self.runtime.conversations.create_message(
            user.id,
            self.connector(),
            self._conversation_id(),
            parse_message(self.json_body(), "message"),
        )
        self.reply(serialize.message(info))


class MessageListHandler(MessageArea):
    """POST /v1/conversation/message/list: cursor pages both ways (``before_id``/``after_id``)."""

    def post(self) -> None:
        user = self.coze_user()
        body = self.json_body()
        order = body.get("order") or "desc"
        page = self.runtime.conversations.list_messages(
            user.id,
            self.connector(),
            self._conversation_id(),
            order=order,
            chat_id=_optional_id(body.get("chat_id"), "chat_id"),
            before_id=_optional_id(body.get("before_id"), "before_id"),
            after_id=_optional_id(body.get("after_id"), "after_id"),
            limit=int_value(body.get("limit"), "limit", default=50, low=1, high=50),
        )
        self.reply(
            [serialize.message(m) for m in page.items],
            extra={
                "first_id": str(page.first_id or ""),
                "last_id": str(page.last_id or ""),
                "has_more": page.has_more,
            },
        )


class MessageRetrieveHandler(MessageArea):
    def get(self) -> None:
        user = self.coze_user()
        info = self.runtime.conversations.get_message(
            user.id, self.connector(), self._conversation_id(), self._message_id()
        )
        self.reply(serialize.message(info))


class MessageModifyHandler(MessageArea):
    def post(self) -> None:
        user = self.coze_user()
        info = self.runtime.conversations.modify_message(
            user.id,
            self.connector(),
            self._conversation_id(),
            self._message_id(),
            parse_message_edit(self.json_body()),
        )
        # cozepy reads the modified message from a "message" field
        self.reply(serialize.message(info), extra={"message": serialize.message(info)})


class MessageDeleteHandler(MessageArea):
    def post(self) -> None:
        user = self.coze_user()
        info = self.runtime.conversations.delete_message(
            user.id, self.connector(), self._conversation_id(), self._message_id()
        )
        self.reply(serialize.message(info))


class MessageFeedbackHandler(CozeHandler):
    """POST: like or unlike one of the bot's answers (``feedback_type``, ``reason_types``,
    ``comment``). DELETE: take the feedback back."""

    def post(self, conversation_id: str, message_id: str) -> None:
        user = self.coze_user()
        body = self.json_body()
        self.runtime.conversations.set_feedback(
            user.id,
            self.connector(),
            parse_id(conversation_id, "conversation_id"),
            parse_id(message_id, "message_id"),
            parse_feedback(body),
        )
        self.reply({})

    def delete(self, conversation_id: str, message_id: str) -> None:
        user = self.coze_user()
        self.runtime.conversations.set_feedback(
            user.id,
            self.connector(),
            parse_id(conversation_id, "conversation_id"),
            parse_id(message_id, "message_id"),
            None,
        )
        self.reply({})
