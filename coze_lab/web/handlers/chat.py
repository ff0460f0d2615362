"""The Coze chat API (``/v3/chat``...): start, stream, retrieve, cancel, submit tool outputs."""

from __future__ import annotations

from typing import Any

from tornado.iostream import StreamClosedError

from coze_lab.core.chat import ChatEvent, ChatHandle
from coze_lab.core.chat import events as ev
from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.params import int_value
from coze_lab.web.requests import parse_chat_request, parse_chatflow_request, parse_tool_outputs
from coze_lab.web.sse import last_event_id, send_event, start_stream


async def stream_chat(handler: CozeHandler, handle: ChatHandle) -> None:
    """Send a chat's events as Coze SSE until ``done`` or until the client goes away (the
    chat goes on either way).

    A quiet stream repeats ``conversation.chat.in_progress`` every ``chat_keepalive_s``: a
    keep-alive that Coze clients understand (cozepy refuses SSE comment lines).
    """
    start_stream(handler)
    sent = 0
    idle_s = handler.runtime.config.chat_keepalive_s
    async for event in handle.channel.follow(idle_s=idle_s):
        if event is None:
            event = ChatEvent(ev.CHAT_IN_PROGRESS, chat=handle.chat)
        else:
            sent += 1
        # events already waiting go out in one write; so do the last one and the end of the
        # response (``finish`` flushes)
        backlog = sent < len(handle.channel.events)
        last = event.event == ev.DONE and handle.channel.closed
        if not await send_event(
            handler, None, event.event, serialize.chat_event(event), flush=not (backlog or last)
        ):
            return
    handler.finish()


async def stream_chat_events(
    handler: CozeHandler,
    user_id: int,
    connector_id: str,
    conversation_id: int | None,
    chat_id: int,
) -> None:
    """Re-attach to a chat (running on any replica, or finished): its events numbered after
    ``Last-Event-ID`` (or ``?after=``), each with its ``id``, until ``done``."""
    after = last_event_id(handler) or int_value(
        handler.get_query_argument("after", None), "after", default=0, low=0, high=2**31
    )
    idle_s = handler.runtime.config.chat_keepalive_s
    events = handler.runtime.chats.events(
        user_id, connector_id, conversation_id, chat_id, after, idle_s=idle_s
    )
    start_stream(handler)
    async for item in events:
        if item is None:  # a keep-alive: an SSE comment (this stream is not cozepy's)
            try:
                handler.write(": ping\n\n")
                await handler.flush()
            except StreamClosedError:
                return
            continue
        seq, event = item
        if not await send_event(handler, seq, event.event, serialize.chat_event(event)):
            return
    handler.finish()


class ChatEventsHandler(CozeHandler):
    """GET /v3/chat/events: re-attach to a chat's stream from any replica."""

    async def get(self) -> None:
        await stream_chat_events(
            self,
            self.coze_user().id,
            self.connector(),
            parse_id(self.get_query_argument("conversation_id", None), "conversation_id"),
            parse_id(self.get_query_argument("chat_id", None), "chat_id"),
        )


class ChatHandler(CozeHandler):
    """POST /v3/chat: a chat with a published bot; streamed, or returned at once and polled."""

    async def post(self) -> None:
        user = self.coze_user()
        body = self.json_body()
        request = parse_chat_request(body, self.get_query_argument("conversation_id", None))
        handle = await self.runtime.chats.start(user.id, self.connector(), request)
        if request.stream:
            await stream_chat(self, handle)
        else:
            self.reply(serialize.chat(handle.chat))


class WorkflowChatHandler(CozeHandler):
    """POST /v1/workflows/chat: a chat-flow chat, streamed with Coze's chat events."""

    async def post(self) -> None:
        user = self.coze_user()
        request = parse_chatflow_request(self.json_body())
        handle = await self.runtime.chatflows.start(user.id, self.connector(), request)
        await stream_chat(self, handle)


class ChatRetrieveHandler(CozeHandler):
    def get(self) -> None:
        self.reply(serialize.chat(self._chat()))

    def post(self) -> None:  # cozepy sends POST
        self.reply(serialize.chat(self._chat()))

    def _chat(self) -> Any:
        user = self.coze_user()
        return self.runtime.chats.get(
            user.id,
            self.connector(),
            parse_id(self.get_query_argument("conversation_id", None), "conversation_id"),
            parse_id(self.get_query_argument("chat_id", None), "chat_id"),
        )


class ChatMessagesHandler(CozeHandler):
    """GET /v3/chat/message/list: what a chat wrote (answers, tool calls, tool results)."""

    def get(self) -> None:
        user = self.coze_user()
        messages = self.runtime.chats.messages(
            user.id,
            self.connector(),
            parse_id(self.get_query_argument("conversation_id", None), "conversation_id"),
            parse_id(self.get_query_argument("chat_id", None), "chat_id"),
        )
        self.reply([serialize.message(m) for m in messages])


class ChatCancelHandler(CozeHandler):
    async def post(self) -> None:
        user = self.coze_user()
        body = self.json_body()
        info = await self.runtime.chats.cancel(
            user.id,
            self.connector(),
            parse_id(body.get("conversation_id"), "conversation_id"),
            parse_id(body.get("chat_id"), "chat_id"),
        )
        self.reply(serialize.chat(info))


class ChatSubmitToolOutputsHandler(CozeHandler):
    async def post(self) -> None:
        user = self.coze_user()
        body = self.json_body()
        stream = body.get("stream", False)
        outputs = parse_tool_outputs(body)
        handle = await self.runtime.chats.submit_tool_outputs(
            user.id,
            self.connector(),
            parse_id(self.get_query_argument("conversation_id", None), "conversation_id"),
            parse_id(self.get_query_argument("chat_id", None), "chat_id"),
            outputs,
        )
        if stream is True:
            await stream_chat(self, handle)
        else:
            self.reply(serialize.chat(handle.chat))
