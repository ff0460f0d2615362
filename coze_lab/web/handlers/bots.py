"""Bots: the Coze bot API (``/v1/bot/...``, ``/v1/bots``) and the studio's bot endpoints."""

from __future__ import annotations

from typing import Any

from coze_lab.core import connectors
from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.handlers.chat import stream_chat, stream_chat_events
from coze_lab.web.params import int_value, optional_str_list
from coze_lab.web.requests import (
    parse_bot_edit,
    parse_playground_chat,
    parse_tool_outputs,
)


class BotsArea(CozeHandler):
    """The studio's bots, their Playground conversations and chats (one Jupyter
    authorizer resource for the area)."""

    AUTH_RESOURCE = "coze_lab.bots"


def _connector_ids(body: dict[str, Any]) -> list[str]:
    ids = optional_str_list(body, "connector_ids")
    return list(connectors.PUBLISHABLE) if ids is None else ids


class BotCreateHandler(CozeHandler):
    """POST /v1/bot/create: in ``space_id`` (one of the caller's spaces; default personal)."""

    def post(self) -> None:
        user = self.coze_user()
        body = self.json_body()
        space_id = body.get("space_id")
        space = user.workspace_id if space_id in (None, "") else parse_id(space_id, "space_id")
        info = self.runtime.bots.create(
            user.id, space, parse_bot_edit(body, self.runtime.limits, create=True)
        )
        self.reply(serialize.bot(info))


class BotUpdateHandler(CozeHandler):
    def post(self) -> None:
        user = self.coze_user()
        body = self.json_body()
        bot_id = parse_id(body.get("bot_id"), "bot_id")
        self.runtime.bots.update(user.id, bot_id, parse_bot_edit(body, self.runtime.limits))
        self.reply({})


class BotPublishHandler(CozeHandler):
    def post(self) -> None:
        user = self.coze_user()
        body = self.json_body()
        bot_id = parse_id(body.get("bot_id"), "bot_id")
        version = self.runtime.bots.publish(user.id, bot_id, _connector_ids(body))
        self.reply({"bot_id": str(bot_id), "version": str(version)})


class BotUnpublishHandler(CozeHandler):
    def post(self, bot_id: str) -> None:
        user = self.coze_user()
        body = self.json_body()
        self.runtime.bots.unpublish(
            user.id, parse_id(bot_id, "bot_id"), str(body.get("connector_id", ""))
        )
        self.reply({})


class ConnectorBotHandler(CozeHandler):
    """PUT /v1/connectors/{connector_id}/bots/{bot_id}: the connector's review result
    (``audit_status`` 2 approved, 3 rejected with a ``reason``: no longer served there)."""

    def put(self, connector_id: str, bot_id: str) -> None:
        user = self.coze_user()
        body = self.json_body()
        self.runtime.bots.review(
            user.id,
            parse_id(bot_id, "bot_id"),
            connector_id,
            body.get("audit_status"),
            body.get("reason"),
        )
        self.reply({})


class TemplateDuplicateHandler(CozeHandler):
    """POST /v1/templates/{template_id}/duplicate: coze_lab has no template store; a
    template is any bot you can read, copied as a new draft bot into ``workspace_id``."""

    def post(self, template_id: str) -> None:
        user = self.coze_user()
        body = self.json_body()
        info = self.runtime.bots.duplicate(
            user.id,
            parse_id(template_id, "template_id"),
            parse_id(body.get("workspace_id"), "workspace_id"),
            body.get("name"),
        )
        self.reply({"entity_id": str(info.id), "entity_type": "agent"})


class AppsHandler(CozeHandler):
    """GET /v1/apps?workspace_id=: Coze's apps (low-code applications) do not exist in
    coze_lab, so a workspace you belong to lists none."""

    def get(self) -> None:
        user = self.coze_user()
        space = parse_id(self.get_query_argument("workspace_id", None), "workspace_id")
        self.runtime.spaces.get(user.id, space)  # 404 for a space you do not belong to
        self.reply({"items": [], "total": 0})


class BotOnlineInfoHandler(CozeHandler):
    """GET /v1/bot/get_online_info?bot_id=: the newest published configuration."""

    def get(self) -> None:
        user = self.coze_user()
        bot_id = parse_id(self.get_query_argument("bot_id", None), "bot_id")
        self.reply(serialize.bot(self.runtime.bots.get(user.id, bot_id, published=True)))


class BotItemHandler(CozeHandler):
    """GET /v1/bots/{id}?is_published=: the published (default) or the draft configuration."""

    def get(self, bot_id: str) -> None:
        user = self.coze_user()
        published = self.get_query_argument("is_published", "true").lower() != "false"
        info = self.runtime.bots.get(user.id, parse_id(bot_id, "bot_id"), published=published)
        self.reply(serialize.bot(info))


class BotsHandler(CozeHandler):
    """GET /v1/bots?workspace_id=: a page of a space's bots (default: your personal space)."""

    def get(self) -> None:
        user = self.coze_user()
        items, total = self.runtime.bots.list(
            user.id,
            self.space_query("workspace_id"),
            publish_status=self.get_query_argument("publish_status", "all"),
            connector_id=self.get_query_argument("connector_id", None) or None,
            page_num=_page_num(self),
            page_size=_page_size(self, "page_size"),
        )
        self.reply({"items": [serialize.simple_bot(b) for b in items], "total": total})


class PublishedBotsListHandler(CozeHandler):
    """GET /v1/space/published_bots_list: the older listing cozepy uses by default."""

    def get(self) -> None:
        user = self.coze_user()
        space = parse_id(self.get_query_argument("space_id", None), "space_id")
        items, total = self.runtime.bots.list(
            user.id,
            space,
            publish_status="published_online",
            connector_id=connectors.API,
            page_num=int_value(
                self.get_query_argument("page_index", None),
                "page_index",
                default=1,
                low=1,
                high=10**6,
            ),
            page_size=_page_size(self, "page_size"),
        )
        self.reply({"space_bots": [serialize.space_bot(b) for b in items], "total": total})


def _page_num(handler: CozeHandler) -> int:
    raw = handler.get_query_argument("page_num", None)
    return int_value(raw, "page_num", default=1, low=1, high=10**6)


def _page_size(handler: CozeHandler, name: str) -> int:
    return int_value(handler.get_query_argument(name, None), name, default=20, low=1, high=100)


# ---- studio (the lab's own front end) ---------------------------------------------------------
class StudioBotsHandler(BotsArea):
    """GET: a space's bots (drafts; ``?space_id=``, default personal). POST: create a bot
    from a Coze create body, in ``?space_id=``."""

    def get(self) -> None:
        user = self.studio_user()
        items, total = self.runtime.bots.list(
            user.id,
            self.space_query(),
            page_num=_page_num(self),
            page_size=_page_size(self, "page_size"),
        )
        self.reply({"bots": [serialize.bot(b) for b in items], "total": total})

    def post(self) -> None:
        user = self.studio_user()
        space = self.space_query() or user.workspace_id
        edit = parse_bot_edit(self.json_body(), self.runtime.limits, create=True)
        info = self.runtime.bots.create(user.id, space, edit)
        self.reply(serialize.bot(info), status=201)


class StudioBotHandler(BotsArea):
    def get(self, bot_id: str) -> None:
        user = self.studio_user()
        self.reply(serialize.bot(self.runtime.bots.get(user.id, parse_id(bot_id, "bot_id"))))

    def put(self, bot_id: str) -> None:
        user = self.studio_user()
        edit = parse_bot_edit(self.json_body(), self.runtime.limits)
        info = self.runtime.bots.update(user.id, parse_id(bot_id, "bot_id"), edit)
        self.reply(serialize.bot(info))

    def delete(self, bot_id: str) -> None:
        user = self.studio_user()
        self.runtime.bots.delete(user.id, parse_id(bot_id, "bot_id"))
        self.reply(None)


class StudioBotPublishHandler(BotsArea):
    def post(self, bot_id: str) -> None:
        user = self.studio_user()
        number = parse_id(bot_id, "bot_id")
        version = self.runtime.bots.publish(user.id, number, _connector_ids(self.json_body()))
        # the version just published (its ``version`` field is its number), not the draft
        published = self.runtime.bots.get(user.id, number, published=True)
        self.reply(serialize.bot(published), extra={"version": version})


class StudioBotChatHandler(BotsArea):
    """POST: chat with the bot's draft on the Playground connector (Coze's SSE events).

    Body: ``{"message": "...", "conversation_id"?, "custom_variables"?, "stream"?}`` or
    ``additional_messages`` as in ``/v3/chat``.
    """

    async def post(self, bot_id: str) -> None:
        user = self.studio_user()
        request = parse_playground_chat(self.json_body(), bot_id)
        handle = await self.runtime.chats.start(user.id, connectors.PLAYGROUND, request)
        if request.stream:
            await stream_chat(self, handle)
        else:
            self.reply(serialize.chat(handle.chat))


class StudioBotConversationsHandler(BotsArea):
    def get(self, bot_id: str) -> None:
        user = self.studio_user()
        items, has_more = self.runtime.conversations.list(
            user.id,
            self.get_query_argument("connector_id", connectors.PLAYGROUND),
            bot_id=parse_id(bot_id, "bot_id"),
            page_num=_page_num(self),
            page_size=_page_size(self, "page_size"),
        )
        states = self.runtime.activity.states(user.id, [c.id for c in items])
        self.reply(
            {
                "conversations": [
                    {**serialize.conversation(c), **serialize.session_state(states[c.id])}
                    for c in items
                ],
                "has_more": has_more,
            }
        )


class StudioConversationMessagesHandler(BotsArea):
    """GET: a Playground conversation's messages, oldest first (``after_id`` pages on)."""

    def get(self, conversation_id: str) -> None:
        user = self.studio_user()
        after = self.get_query_argument("after_id", None)
        page = self.runtime.conversations.list_messages(
            user.id,
            connectors.PLAYGROUND,
            parse_id(conversation_id, "conversation_id"),
            order="asc",
            after_id=None if after in (None, "") else parse_id(after, "after_id"),
            limit=int_value(
                self.get_query_argument("limit", None), "limit", default=50, low=1, high=50
            ),
        )
        self.reply(
            {
                "messages": [serialize.message(m) for m in page.items],
                "last_id": str(page.last_id or ""),
                "has_more": page.has_more,
            }
        )


class StudioConversationClearHandler(BotsArea):
    def post(self, conversation_id: str) -> None:
        user = self.studio_user()
        number = parse_id(conversation_id, "conversation_id")
        section = self.runtime.conversations.clear(user.id, connectors.PLAYGROUND, number)
        self.reply({"id": str(section), "conversation_id": str(number)})


class StudioChatToolOutputsHandler(BotsArea):
    """POST: the outputs of a Playground chat's client functions; the chat goes on (streamed
    unless the body says ``"stream": false``). Body: ``{conversation_id, tool_outputs}``."""

    async def post(self, chat_id: str) -> None:
        user = self.studio_user()
        body = self.json_body()
        handle = await self.runtime.chats.submit_tool_outputs(
            user.id,
            connectors.PLAYGROUND,
            parse_id(body.get("conversation_id"), "conversation_id"),
            parse_id(chat_id, "chat_id"),
            parse_tool_outputs(body),
        )
        if body.get("stream", True) is True:
            await stream_chat(self, handle)
        else:
            self.reply(serialize.chat(handle.chat))


class StudioChatEventsHandler(BotsArea):
    """GET: re-attach to a Playground chat's events (``Last-Event-ID`` or ``?after=``;
    ``?conversation_id=`` optional), whichever replica runs it."""

    async def get(self, chat_id: str) -> None:
        user = self.studio_user()
        raw = self.get_query_argument("conversation_id", None)
        await stream_chat_events(
            self,
            user.id,
            connectors.PLAYGROUND,
            None if raw in (None, "") else parse_id(raw, "conversation_id"),
            parse_id(chat_id, "chat_id"),
        )


class StudioChatCancelHandler(BotsArea):
    async def post(self, chat_id: str) -> None:
        user = self.studio_user()
        body = self.json_body()
        info = await self.runtime.chats.cancel(
            user.id,
            connectors.PLAYGROUND,
            None
            if body.get("conversation_id") in (None, "")
            else parse_id(body["conversation_id"], "conversation_id"),
            parse_id(chat_id, "chat_id"),
        )
        self.reply(serialize.chat(info))
