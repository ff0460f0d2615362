"""One agent run: call the model with the bot's tools, run the tools, loop, persist, stream."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from coze_lab.core.bots import BotConfig
from coze_lab.core.chat import events as ev
from coze_lab.core.chat.events import ChatChannel, ChatEvent
from coze_lab.core.chat.file_tools import CURRENT_CALL, CallContext
from coze_lab.core.chat.knowledge import (
    KNOWLEDGE_RECALL,
    Recall,
    recall_prompt,
    recall_verbose,
)
from coze_lab.core.chat.store import ChatInfo, ChatStore
from coze_lab.core.chat.tools import ToolBox, ToolOutcome, error_outcome
from coze_lab.core.clock import Clock
from coze_lab.core.conversations import MessageInfo
from coze_lab.core.errors import CozeLabError
from coze_lab.core.ids import new_id
from coze_lab.core.knowledge.search import Hit
from coze_lab.core.models import CompletionAccumulator, ModelClient, ModelSpec, ToolCall, Usage
from coze_lab.core.models.client import on_request_sent

log = logging.getLogger("coze_lab.chat")

#: how often a streaming chat looks in the database for a cancel from another replica
CANCEL_POLL_S = 0.5
#: how often a running chat marks itself alive by default (see ChatService.recover)
HEARTBEAT_S = 6.0
#: how often the answer streamed so far is written (a server killed mid-answer loses at most
#: this much of it); the writes run in a thread, off the token path
PARTIAL_SAVE_S = 0.5
#: suggested follow-up questions after an answer (Coze's ``suggest_reply_info``)
MAX_FOLLOW_UPS, MAX_FOLLOW_UP_CHARS = 3, 200
_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s*")
SUGGEST_PROMPT = (
    "Suggest up to 3 short questions the user might ask next in this conversation, in the "
    "user's language, one per line, without numbering or any other text."
)


class _Canceled(Exception):
    pass


@dataclass
class AgentState:
    """What a chat carries between model rounds (and across ``requires_action``)."""

    messages: list[dict[str, Any]]
    config: BotConfig
    round: int = 0
    usage: Usage = field(default_factory=Usage)
    pending: list[dict[str, Any]] = field(default_factory=list)
    #: the end user (``sys_user_id``): whose variables the ``save_variable`` tool writes
    end_user: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "config": self.config.to_dict(),
            "round": self.round,
            "usage": self.usage.to_dict(),
            "pending": self.pending,
            "end_user": self.end_user,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentState:
        return cls(
            messages=list(data["messages"]),
            config=BotConfig.from_dict(data["config"]),
            round=int(data["round"]),
            usage=Usage(**data["usage"]),
            pending=list(data["pending"]),
            end_user=str(data.get("end_user", "")),
        )


def coze_usage(usage: Usage) -> dict[str, int]:
    return {
        "token_count": usage.total_tokens,
        "output_count": usage.output_tokens,
        "input_count": usage.input_tokens,
    }


def answer_usage(usage: Usage, spec: ModelSpec) -> dict[str, Any]:
    """An answer message's usage: Coze's chat usage fields, and ``cost`` when the model has
    prices in the registry.

    Example:
        >>> from coze_lab.core.models.spec import ModelPrices
        >>> spec = ModelSpec(id="m", name="m", base_url="http://x", model="m",
        ...                  prices=ModelPrices(input=1.0, output=2.0))
        >>> answer_usage(Usage(10, 5, 15), spec)
        {'token_count': 15, 'output_count': 5, 'input_count': 10, 'cost': 2e-05}
    """
    data: dict[str, Any] = dict(coze_usage(usage))
    if spec.prices is not None:
        data["cost"] = spec.prices.cost(usage.to_dict())
    return data


class AgentRun:
    """Runs a chat from its current state to completed / failed / requires_action / canceled.

    Every message is written before its ``message.completed`` event goes out; the outcome
    is written with a conditional update, so a cancel that got there first wins.
    """

    def __init__(
        self,
        *,
        chat: ChatInfo,
        state: AgentState,
        tools: ToolBox,
        spec: ModelSpec,
        client: ModelClient,
        store: ChatStore,
        channel: ChatChannel,
        clock: Clock,
        persist: bool = True,
        written: asyncio.Event | None = None,
        heartbeat_s: float = HEARTBEAT_S,
        poll_cancel: bool = True,
        after: Callable[[], Awaitable[None]] | None = None,
        recall: Recall | None = None,
        dataset_names: dict[int, str] | None = None,
    ) -> None:
        self.chat = chat
        #: the bot's knowledge: recalled before the first model round (``auto_call``)
        self._recall = recall
        self._dataset_names = dataset_names or {}
        #: awaited once the outcome is written, before ``done`` (a failure is logged)
        self._after = after
        #: set once the first model request is on its way (or the run ended before sending
        #: one): a starting chat writes its rows then, while the model thinks
        self.requested = asyncio.Event()
        #: look for a cancel in the database while streaming (without LISTEN/NOTIFY, a
        #: cancel sent to another process reaches this chat only so)
        self._poll_cancel = poll_cancel
        self._written = written
        self._heartbeat_s = heartbeat_s
        #: held while the keeper writes, and by every write that replaces a partial answer
        self._save_lock = asyncio.Lock()
        self._saved: tuple[int, int] | None = None  # (answer id, parts) last written
        self._kept: list[int] = []  # answer ids with a partial row in the database
        self.state = state
        self.tools = tools
        self._spec = spec
        self._client = client
        self._store = store
        self._channel = channel
        self._clock = clock
        self._persist = persist
        self._partial: tuple[int, list[str]] | None = None
        self._answer_id = 0
        self._checked_at = time.monotonic()
        self._beat_at = time.monotonic()

    async def run(self) -> None:
        keeper = asyncio.get_running_loop().create_task(self._keep(asyncio.current_task()))
        try:
            with on_request_sent(self.requested.set):
                await self._rounds()
        except (_Canceled, asyncio.CancelledError):
            # a second cancel may land while the keeper is stopped (the keeper's own write
            # found the chat canceled and stops it too): what was said is kept all the same
            with contextlib.suppress(asyncio.CancelledError):
                await self._stop(keeper)
            self._canceled()
        except CozeLabError as exc:
            await self._stop(keeper)
            await self._until_written()
            self._fail(exc.code, exc.msg)
        except Exception as exc:  # a bug must still end the chat visibly
            log.exception("chat %s failed", self.chat.id)
            await self._stop(keeper)
            await self._until_written()
            self._fail(5000, f"internal error: {type(exc).__name__}")
        finally:
            self.requested.set()
            await self._stop(keeper)
            try:
                if self._after is not None:
                    await self._after()
            except Exception:
                log.exception("chat %s: its after-step failed", self.chat.id)
            finally:
                self._channel.put(ChatEvent(ev.DONE))
                self._channel.close()

    async def _until_written(self) -> None:
        """Wait for the chat's row before writing anything that refers to it (the starting
        chat writes it once told the model request is on its way, or that the run ended
        early: a model client that does not go through the traced transport never tells)."""
        self.requested.set()
        if self._written is not None:
            await self._written.wait()

    # ---- kept alive and kept so far -----------------------------------------------------------
    async def _keep(self, chat_task: asyncio.Task[Any] | None) -> None:
        """While the chat runs: write the answer streamed so far every ``PARTIAL_SAVE_S``
        (it doubles as the heartbeat), else beat every ``heartbeat_s`` (during tool calls,
        or before the first token). A server killed mid-answer leaves the chat to be failed
        by ``ChatService.recover`` with its partial answer kept. A write that finds the chat
        ended (a cancel whose signal never arrived) stops ``chat_task``."""
        if self._written is not None:
            await self._written.wait()
        while True:
            await asyncio.sleep(min(PARTIAL_SAVE_S, self._heartbeat_s))
            async with self._save_lock:
                partial = self._partial
                if partial is not None and self._persist and partial[1]:
                    answer_id, parts = partial
                    if self._saved != (answer_id, len(parts)):
                        answer = self._row(
                            "answer", "".join(parts), message_id=answer_id, meta={"partial": "true"}
                        )
                        alive = await asyncio.to_thread(
                            self._store.save_partial, self.chat.id, self.chat.owner_id, answer
                        )
                        if not alive:
                            return _stop_task(chat_task)
                        self._saved = (answer_id, len(parts))
                        if answer_id not in self._kept:
                            self._kept.append(answer_id)
                        self._beat_at = time.monotonic()
                        continue
                if time.monotonic() - self._beat_at >= self._heartbeat_s:
                    if not await asyncio.to_thread(self._store.touch, self.chat.id):
                        return _stop_task(chat_task)
                    self._beat_at = time.monotonic()

    async def _stop(self, keeper: asyncio.Task[None]) -> None:
        """Stop the keeper between two writes (never in the middle of one)."""
        if keeper.done():
            return
        async with self._save_lock:
            keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeper

    def _replacing(self) -> list[int]:
        """The partial answers written so far: the final rows take their place."""
        kept, self._kept = self._kept, []
        return kept

    # ---- the loop ---------------------------------------------------------------------------
    async def _rounds(self) -> None:
        config = self.state.config
        if self.state.round == 0 and self._recall is not None and config.knowledge_auto_call:
            await self._recall_first()
        while True:
            last_round = self.state.round >= config.max_tool_rounds
            offered = self.tools.definitions() if self.tools and not last_round else None
            content, calls = await self._call_model(offered)
            await self._until_written()  # the chat's row exists before anything refers to it
            self.state.round += 1
            if not calls:
                answer: MessageInfo | None = self._row(
                    "answer",
                    content,
                    message_id=self._answer_id or new_id(),
                    usage=answer_usage(self.state.usage, self._spec),
                )
                follow_ups: list[MessageInfo] = []
                if config.suggest_reply_mode != "disable" and content.strip():
                    async with self._save_lock:  # the answer first, then the suggestions
                        self._write([answer], emit=True)  # type: ignore[list-item]
                    follow_ups = await self._follow_ups(content)
                    self._check_canceled(force=True)
                    answer = None
                async with self._save_lock:
                    self._complete(answer, follow_ups)
                return
            assistant: dict[str, Any] = {
                "role": "assistant",
                "content": content or None,
                "tool_calls": [c.to_openai() for c in calls],
            }
            self.state.messages.append(assistant)
            call_rows = [self._function_call(c) for c in calls]
            async with self._save_lock:  # text said before the calls was not an answer
                self._write(call_rows, emit=True)
            row_of = {c.id: row.id for c, row in zip(calls, call_rows, strict=True)}
            server = [c for c in calls if self._invoker(c) is not None]
            client = [c for c in calls if self._invoker(c) is None]
            outcomes = await asyncio.gather(*(self._invoke(c, row_of[c.id]) for c in server))
            responses = []
            for outcome in outcomes:  # a knowledge recall's citations come before its answer
                recalled = outcome.meta.pop(KNOWLEDGE_RECALL, None)
                if recalled is not None:
                    responses.append(self._row("verbose", recalled))
            for call, outcome in zip(server, outcomes, strict=True):
                self.state.messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": outcome.output}
                )
                responses.append(self._tool_response(call, outcome))
            self._write(responses, emit=True)
            self._check_canceled(force=True)
            if client:
                self._requires_action(client)
                return

    async def _recall_first(self) -> None:
        """Recall for the user's question, give the model the excerpts (a system message
        before the question) and write them as Coze's ``knowledge_recall`` verbose message."""
        assert self._recall is not None
        question = next((m for m in reversed(self.state.messages) if m["role"] == "user"), None)
        text = question.get("content") if question else None
        if isinstance(text, list):  # multimodal parts: their text
            text = " ".join(p.get("text", "") for p in text if isinstance(p, dict))
        if not isinstance(text, str) or not text.strip():
            return
        hits = await self._recall(text)
        position = len(self.state.messages) - 1 - self.state.messages[::-1].index(question)
        self.state.messages.insert(position, {"role": "system", "content": recall_prompt(hits)})
        await self._until_written()
        self.cite(text, hits)

    def cite(self, query: str, hits: list[Hit]) -> None:
        """Write what was recalled as a ``verbose`` ``knowledge_recall`` message."""
        content = recall_verbose(query, hits, self._dataset_names)
        self._write([self._row("verbose", content)], emit=True)

    async def _call_model(self, tools: list[dict[str, Any]] | None) -> tuple[str, list[ToolCall]]:
        spec = self._spec
        config = self.state.config
        answer_id = new_id()
        acc = CompletionAccumulator()
        parts: list[str] = []
        self._partial = (answer_id, parts)
        # a json bot's prompt asks for JSON too (ChatService), for models without a JSON mode
        fmt = {"type": "json_object"} if config.response_format == "json" else None
        stream = self._client.stream(
            spec, self.state.messages, tools=tools, response_format=fmt, **config.model_params
        )
        async with contextlib.aclosing(stream) as chunks:
            async for chunk in chunks:
                acc.add(chunk)
                if chunk.content_delta:
                    parts.append(chunk.content_delta)
                    self._emit_delta(answer_id, chunk.content_delta)
                self._check_canceled()
        done = acc.completion()
        self.state.usage = self.state.usage + done.usage
        self._partial = None
        self._answer_id = answer_id
        return done.content, done.tool_calls

    async def _follow_ups(self, answer: str) -> list[MessageInfo]:
        """Up to three questions the user might ask next (``follow_up`` messages), from one
        more model call on the recent questions and answers; none when that call fails."""
        config = self.state.config
        instruction = (
            config.suggest_reply_prompt
            if config.suggest_reply_mode == "customized"
            else SUGGEST_PROMPT
        )
        said = [
            m
            for m in self.state.messages
            if m["role"] == "user" or (m["role"] == "assistant" and not m.get("tool_calls"))
        ][-4:]
        messages = [
            *said,
            {"role": "assistant", "content": answer},
            {"role": "user", "content": instruction},
        ]
        try:
            done = await self._client.complete(self._spec, messages)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # suggestions are a nicety: the answer stands without them
            log.warning("chat %s: no follow-up questions: %r", self.chat.id, exc)
            return []
        self.state.usage = self.state.usage + done.usage
        questions = []
        for line in (done.content or "").splitlines():
            question = _BULLET.sub("", line).strip()
            if question and question not in questions:
                questions.append(question[:MAX_FOLLOW_UP_CHARS])
        return [self._row("follow_up", q) for q in questions[:MAX_FOLLOW_UPS]]

    def _invoker(self, call: ToolCall) -> Any:
        tool = self.tools.get(call.name)
        if tool is None:
            return self._unknown_tool
        return tool.invoke

    async def _unknown_tool(self, _: dict[str, Any]) -> ToolOutcome:
        return ToolOutcome("error: there is no tool with this name", ok=False)

    async def _invoke(self, call: ToolCall, message_id: int | None = None) -> ToolOutcome:
        invoke = self._invoker(call)
        # gather runs each call in its own task: the context is this call's alone
        CURRENT_CALL.set(CallContext(self.chat.id, message_id))
        try:
            arguments = call.arguments()
            return await invoke(arguments)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a tool failure is the model's to handle, not a crash
            if not isinstance(exc, CozeLabError):
                log.warning("tool %s failed in chat %s: %r", call.name, self.chat.id, exc)
            return error_outcome(exc)

    # ---- outcomes ----------------------------------------------------------------------------
    def _complete(self, answer: MessageInfo | None, follow_ups: list[MessageInfo]) -> None:
        """Finish the chat with its answer (None: already written) and the suggested
        follow-up questions, in one write."""
        rows = [answer, *follow_ups] if answer is not None else follow_ups
        final = self._store.finish(
            self.chat.id,
            "completed",
            usage=coze_usage(self.state.usage),
            messages=rows if self._persist else [],
            owner_id=self.chat.owner_id,
            replacing=self._replacing(),
        )
        if final is None:
            return
        for row in rows:
            self._channel.put(ChatEvent(ev.MESSAGE_COMPLETED, message=row))
        self._channel.put(ChatEvent(ev.CHAT_COMPLETED, chat=final))

    def _requires_action(self, calls: list[ToolCall]) -> None:
        pending = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json},
            }
            for c in calls
        ]
        self.state.pending = pending
        final = self._store.finish(
            self.chat.id,
            "requires_action",
            usage=coze_usage(self.state.usage),
            required_action={
                "type": "submit_tool_outputs",
                "submit_tool_outputs": {"tool_calls": pending},
            },
            state=self.state.to_dict(),
        )
        if final is not None:
            self._channel.put(ChatEvent(ev.CHAT_REQUIRES_ACTION, chat=final))

    def _fail(self, code: int, msg: str) -> None:
        """Record the failure, keeping what was streamed of the answer (marked partial)."""
        rows = []
        if self._partial is not None and self._partial[1] and self._persist:
            answer_id, parts = self._partial
            rows.append(
                self._row("answer", "".join(parts), message_id=answer_id, meta={"partial": "true"})
            )
            self._partial = None
        final = self._store.finish(
            self.chat.id,
            "failed",
            usage=coze_usage(self.state.usage),
            last_error={"code": code, "msg": msg},
            messages=rows,
            owner_id=self.chat.owner_id,
            replacing=self._replacing() if rows else (),
        )
        if final is not None:
            self._channel.put(ChatEvent(ev.CHAT_FAILED, chat=final))

    def _canceled(self) -> None:
        """Keep what was said before the cancel; the status is the canceller's to write
        (a shutdown that is not a cancel fails the chat instead)."""
        if self._partial is not None and self._partial[1] and self._persist:
            answer_id, parts = self._partial
            text = "".join(parts)
            self._store.add_messages(
                self.chat.owner_id,
                [self._row("answer", text, message_id=answer_id, meta={"canceled": "true"})],
                replacing=self._replacing(),
            )
            self._partial = None
        if self._store.status(self.chat.id) != "canceled":
            self._fail(5000, "the server stopped while this chat was running")

    # ---- messages and events -------------------------------------------------------------
    def _emit_delta(self, message_id: int, text: str) -> None:
        now = self._clock()
        self._channel.put(
            ChatEvent(
                ev.MESSAGE_DELTA,
                message=MessageInfo(
                    id=message_id,
                    conversation_id=self.chat.conversation_id,
                    section_id=self.chat.section_id,
                    chat_id=self.chat.id,
                    bot_id=self.chat.bot_id,
                    role="assistant",
                    type="answer",
                    content=text,
                    content_type="text",
                    meta_data={},
                    created_at=now,
                    updated_at=now,
                ),
            )
        )

    def _function_call(self, call: ToolCall) -> MessageInfo:
        tool = self.tools.get(call.name)
        payload: dict[str, Any] = {"name": call.name, "arguments": call.arguments_json}
        with contextlib.suppress(CozeLabError):
            payload["arguments"] = call.arguments()
        if tool is not None:
            payload.update(tool.ref)
        meta = {"tool_call_id": call.id, "tool_kind": tool.kind if tool else "unknown"}
        return self._row("function_call", json.dumps(payload, ensure_ascii=False), meta=meta)

    def _tool_response(self, call: ToolCall, outcome: ToolOutcome) -> MessageInfo:
        meta = {"tool_call_id": call.id, "name": call.name, "ok": str(outcome.ok).lower()}
        meta.update(outcome.meta)
        return self._row("tool_response", outcome.output, meta=meta)

    def _row(
        self,
        kind: str,
        content: str,
        *,
        message_id: int | None = None,
        meta: dict[str, str] | None = None,
        usage: dict[str, Any] | None = None,
    ) -> MessageInfo:
        now = self._clock()
        return MessageInfo(
            id=message_id or new_id(),
            conversation_id=self.chat.conversation_id,
            section_id=self.chat.section_id,
            chat_id=self.chat.id,
            bot_id=self.chat.bot_id,
            role="assistant",
            type=kind,
            content=content,
            content_type="text",
            meta_data=meta or {},
            created_at=now,
            updated_at=now,
            usage=usage,
        )

    def _write(self, infos: list[MessageInfo], *, emit: bool) -> None:
        if not infos:
            return
        if self._persist:
            self._store.add_messages(self.chat.owner_id, infos, replacing=self._replacing())
        if emit:
            for info in infos:
                self._channel.put(ChatEvent(ev.MESSAGE_COMPLETED, message=info))

    def _check_canceled(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and (not self._poll_cancel or now - self._checked_at < CANCEL_POLL_S):
            return
        self._checked_at = now
        if self._store.status(self.chat.id) == "canceled":
            raise _Canceled


def _stop_task(task: asyncio.Task[Any] | None) -> None:
    """Cancel the chat's task: it ends as canceled, keeping what was said."""
    if task is not None and not task.done():
        log.info("a chat found canceled by its own write; stopping it")
        task.cancel()
