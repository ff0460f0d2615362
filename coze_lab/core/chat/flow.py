"""Chat-flows (Coze's ``/v1/workflows/chat``): a workflow run as a chat in a conversation.

A chat-flow is a published workflow whose start node declares ``USER_INPUT``: each chat
runs it with the user's last message there (and, when the start declares them,
``CONVERSATION_NAME`` and ``CONVERSATION_HISTORY``: the section's earlier questions and
answers as ``[{role, content}]``). The end node's outputs are the answer (``output`` when
it is text, else the only output when it is text, else the outputs as JSON). Every message
is saved in the conversation, and the chat streams Coze's chat events.

A question node asks the user in the conversation: its question is the chat's answer, and
the user's next message in that conversation answers it (the run resumes instead of a new
one starting), as in a workflow run.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from coze_lab.core.chat import events as ev
from coze_lab.core.chat.events import ChatChannel, ChatEvent
from coze_lab.core.chat.service import ChatHandle, ChatService
from coze_lab.core.chat.store import ChatInfo
from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.conversations import ConversationInfo, MessageInfo, NewMessage
from coze_lab.core.conversations.service import ConversationService
from coze_lab.core.errors import CozeLabError, InvalidParameter
from coze_lab.core.ids import new_id
from coze_lab.core.workflows.nodes.llm import CONVERSATION_HISTORY, DEFAULT_HISTORY_ROUNDS
from coze_lab.core.workflows.run_service import RunService
from coze_lab.core.workflows.run_store import RunInfo
from coze_lab.core.workflows.service import WorkflowService

log = logging.getLogger("coze_lab.chat")

USER_INPUT, CONVERSATION_NAME = "USER_INPUT", "CONVERSATION_NAME"
#: how many earlier rounds ``CONVERSATION_HISTORY`` holds
HISTORY_ROUNDS = 10


@dataclass(frozen=True)
class ChatflowRequest:
    """A ``/v1/workflows/chat`` body, validated (``messages`` end with the user's)."""

    workflow_id: int
    messages: list[NewMessage]
    conversation_id: int | None = None
    parameters: dict[str, Any] = field(default_factory=dict)


class ChatflowService:
    """Start chat-flow chats and run them in the background (the stream may be left; the
    run and its messages go on).

    A chat-flow's chat is stored like a bot's (a ``chats`` row with no bot, its events in
    the chat's log): it is retrieved, re-attached to and canceled through ``ChatService``
    from any replica. A cancel cancels its workflow run; a replica that dies mid-flow
    leaves the chat to be failed by the chat recovery (its run is recovered by another
    replica's engine).

    Example:
        >>> handle = await flows.start(user.id, "1024", ChatflowRequest(wf_id, [question]))
        ... # doctest: +SKIP
    """

    def __init__(
        self,
        workflows: WorkflowService,
        runs: Callable[[], RunService],
        conversations: ConversationService,
        chats: Callable[[], ChatService],
        *,
        clock: Clock = utcnow,
    ) -> None:
        self._workflows = workflows
        self._runs = runs
        self.conversations = conversations
        self._chats = chats
        self._clock = clock

    async def start(self, owner_id: int, connector_id: str, request: ChatflowRequest) -> ChatHandle:
        """Write the request's messages, start (or resume) the run and return the chat's
        handle; what is wrong with the request fails here, before anything is written."""
        if not request.messages or request.messages[-1].role != "user":
            raise InvalidParameter("additional_messages must end with the user's message")
        spec, version = self._workflows.runnable(owner_id, request.workflow_id)
        declared = {item.name for item in spec.inputs}
        if USER_INPUT not in declared:
            raise InvalidParameter(
                f"workflow {request.workflow_id} is not a chat-flow: its start node declares "
                f"no {USER_INPUT} input"
            )
        chats, runs = self._chats(), self._runs()
        # a new conversation is written with the chat, once the run has started (a refused
        # run leaves none)
        conversation = self._conversation(owner_id, connector_id, request.conversation_id)
        waiting = (
            None
            if conversation is None
            else self._waiting(owner_id, conversation, request.workflow_id, runs)
        )
        wanted = history_rounds(spec.to_dict())  # llm nodes with chat_history
        history = (
            self.conversations.history(conversation, rounds=max(HISTORY_ROUNDS, wanted))
            if conversation is not None
            and (CONVERSATION_HISTORY in declared or wanted)
            and waiting is None
            else []
        )
        said = [{"role": m.role, "content": m.content} for m in history]
        text = request.messages[-1].content
        if waiting is not None:
            resumed = await runs.resume(owner_id, waiting, text, workflow_id=request.workflow_id)
            run_id = resumed.run.id
        else:
            inputs = {**request.parameters, USER_INPUT: text}
            if CONVERSATION_NAME in declared:
                inputs[CONVERSATION_NAME] = "" if conversation is None else conversation.name
            if CONVERSATION_HISTORY in declared:
                inputs[CONVERSATION_HISTORY] = said
            run_id = await runs.start(
                owner_id,
                request.workflow_id,
                inputs,
                spec=spec,
                version=version,
                ignore_undeclared=True,
                history=said if wanted else None,
            )
        new = conversation is None
        if conversation is None:
            now = self._clock()
            conversation = ConversationInfo(
                id=new_id(),
                owner_id=owner_id,
                bot_id=None,
                connector_id=connector_id,
                name="",
                meta_data={},
                section_id=new_id(),
                created_at=now,
                updated_at=now,
            )
        new_chat = chats.store.prepare(
            conversation,
            bot_id=None,
            bot_version=None,
            messages=request.messages,
            meta_data={"execute_id": str(run_id), "workflow_id": str(request.workflow_id)},
            persist=True,
            new_conversation=new,
        )
        try:
            await asyncio.to_thread(new_chat.write)
        except BaseException:  # no chat to answer in: the run stops too
            await asyncio.shield(runs.cancel(owner_id, run_id))
            raise
        chat = new_chat.chat
        channel = ChatChannel()
        channel.put(ChatEvent(ev.CHAT_CREATED, chat=replace(chat, status="created")))
        channel.put(ChatEvent(ev.CHAT_IN_PROGRESS, chat=chat))
        chats.track(
            chat.id, self._finish(chat, run_id, request.workflow_id, channel, runs), channel
        )
        return ChatHandle(chat, channel, new_chat.messages)

    async def close(self) -> None:
        """Nothing of its own: its chats are ``ChatService`` tasks, closed with it."""

    # ---- internals ----------------------------------------------------------------------------
    def _conversation(
        self, owner_id: int, connector_id: str, conversation_id: int | None
    ) -> ConversationInfo | None:
        if conversation_id is None:
            return None
        conversation = self.conversations.get(owner_id, connector_id, conversation_id)
        if conversation.bot_id is not None:
            raise InvalidParameter(
                f"conversation {conversation.id} belongs to bot {conversation.bot_id}, "
                "not to a chat-flow"
            )
        return conversation

    def _waiting(
        self, owner_id: int, conversation: ConversationInfo, workflow_id: int, runs: RunService
    ) -> int | None:
        """The event id of the question this workflow's last chat in the conversation asked,
        when it still waits for an answer."""
        last = self.conversations.last_answer(conversation)
        if last is None or last.meta_data.get("workflow_id") != str(workflow_id):
            return None
        event_id, execute_id = last.meta_data.get("event_id"), last.meta_data.get("execute_id")
        if not event_id or not execute_id:
            return None
        pending = runs.pending(owner_id, int(execute_id))
        return int(event_id) if any(p.event_id == int(event_id) for p in pending) else None

    async def _wait(self, chat: ChatInfo, run_id: int, runs: RunService) -> RunInfo:
        """The run once it stops, the chat marked alive meanwhile (a replica that dies
        leaves it to the recovery); a chat ended elsewhere (a cancel whose signal was
        lost) stops here."""
        store, beat = self._chats().store, self._chats().heartbeat_s
        waiting = asyncio.ensure_future(runs.wait(run_id))
        try:
            while True:
                done, _ = await asyncio.wait({waiting}, timeout=beat)
                if done:
                    return waiting.result()
                if not await asyncio.to_thread(store.touch, chat.id):
                    raise asyncio.CancelledError
        finally:
            waiting.cancel()

    async def _finish(
        self,
        chat: ChatInfo,
        run_id: int,
        workflow_id: int,
        channel: ChatChannel,
        runs: RunService,
    ) -> None:
        """Wait for the run to stop, write its answer (or question) and end the stream."""
        try:
            info = await self._wait(chat, run_id, runs)
            usage = _usage(info.usage or {})
            meta = {"execute_id": str(run_id), "workflow_id": str(workflow_id)}
            if info.status == "succeeded":
                content = answer_text(info.outputs or {})
            elif info.status == "interrupted":
                pending = runs.pending(chat.owner_id, run_id)
                if not pending:  # answered or expired meanwhile
                    self._failed(channel, chat, 5100, "the workflow paused with no question open")
                    return
                question = pending[0]
                content = question_text(question.data)
                meta.update(event_id=str(question.event_id), interrupt_type=question.type)
            else:
                error = info.error or {}
                self._failed(
                    channel, chat, int(error.get("code", 5100)), error.get("msg", info.status)
                )
                return
            now = self._clock()
            answer = MessageInfo(
                id=new_id(),
                conversation_id=chat.conversation_id,
                section_id=chat.section_id,
                chat_id=chat.id,
                bot_id=None,
                role="assistant",
                type="answer",
                content=content,
                content_type="text",
                meta_data=meta,
                created_at=now,
                updated_at=now,
                usage=_answer_usage(info.usage) if info.usage else None,
            )
            done = await asyncio.to_thread(
                self._chats().store.finish,
                chat.id,
                "completed",
                usage=usage,
                messages=[answer],
                owner_id=chat.owner_id,
            )
            if done is None:  # canceled meanwhile
                return
            channel.put(ChatEvent(ev.MESSAGE_DELTA, message=answer))
            channel.put(ChatEvent(ev.MESSAGE_COMPLETED, message=answer))
            channel.put(ChatEvent(ev.CHAT_COMPLETED, chat=done))
        except asyncio.CancelledError:
            if self._chats().store.status(chat.id) == "canceled":
                await asyncio.shield(runs.cancel(chat.owner_id, run_id))
            else:
                self._failed(channel, chat, 5000, "the server stopped while this chat was running")
            raise
        except CozeLabError as exc:
            self._failed(channel, chat, exc.code, exc.msg)
        except Exception as exc:  # a bug must still end the chat visibly
            log.exception("chat-flow chat %s failed", chat.id)
            self._failed(channel, chat, 5000, f"internal error: {type(exc).__name__}")
        finally:
            channel.put(ChatEvent(ev.DONE))
            channel.close()

    def _failed(self, channel: ChatChannel, chat: ChatInfo, code: int, msg: str) -> None:
        failed = self._chats().store.finish(
            chat.id, "failed", last_error={"code": code, "msg": msg}
        )
        if failed is not None:
            channel.put(ChatEvent(ev.CHAT_FAILED, chat=failed))


def history_rounds(definition: Mapping[str, Any]) -> int:
    """The most conversation rounds an llm node of the definition (or of a workflow one of
    its nodes runs) reads with ``chat_history``; 0 when none does.

    Example:
        >>> history_rounds({"nodes": [{"type": "llm", "config": {"chat_history": True}}]})
        3
    """
    most = 0
    for node in definition.get("nodes", []):
        config = node.get("config") or {}
        if node.get("type") == "llm" and config.get("chat_history"):
            most = max(most, int(config.get("history_rounds", DEFAULT_HISTORY_ROUNDS)))
        inner = config.get("definition")
        if isinstance(inner, Mapping):
            most = max(most, history_rounds(inner))
    return most


def answer_text(outputs: Mapping[str, Any]) -> str:
    """The answer a chat-flow's outputs make.

    Example:
        >>> answer_text({"output": "Hi"}), answer_text({"a": 1, "b": "x"})
        ('Hi', '{"a": 1, "b": "x"}')
    """
    if isinstance(outputs.get("output"), str):
        return str(outputs["output"])
    values = list(outputs.values())
    if len(values) == 1 and isinstance(values[0], str):
        return values[0]
    return json.dumps(dict(outputs), ensure_ascii=False)


def question_text(data: Mapping[str, Any]) -> str:
    """A question node's question with its numbered choices (an input form: its schema)."""
    if "question" in data:
        choices = data.get("choices") or []
        return "\n".join([str(data["question"]), *(f"{i}. {c}" for i, c in enumerate(choices, 1))])
    return json.dumps(dict(data), ensure_ascii=False)


def _usage(usage: Mapping[str, Any]) -> dict[str, int]:
    """Coze's usage block of a chat from a run's token counts."""
    return {
        "token_count": int(usage.get("total_tokens", 0)),
        "output_count": int(usage.get("output_tokens", 0)),
        "input_count": int(usage.get("input_tokens", 0)),
    }


def _answer_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """An answer message's usage: the run's tokens, and its cost when every model it called
    has prices."""
    data: dict[str, Any] = dict(_usage(usage))
    if usage.get("cost") is not None:
        data["cost"] = usage["cost"]
    return data
