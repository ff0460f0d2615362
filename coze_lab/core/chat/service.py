"""The chat service: start, follow, cancel and continue agent runs (Coze's ``/v3/chat``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from coze_lab.core import connectors
from coze_lab.core.bots import BotConfig, BotService, McpServerRef, ResolvedBot
from coze_lab.core.chat import events as ev
from coze_lab.core.chat.agent import PARTIAL_SAVE_S, AgentRun, AgentState
from coze_lab.core.chat.attachments import Attachments
from coze_lab.core.chat.events import ChatChannel, ChatEvent
from coze_lab.core.chat.file_tools import CURRENT_CALL, FileWrite, file_tools
from coze_lab.core.chat.knowledge import TOP_K, Recall, recall_tool
from coze_lab.core.chat.log import pack
from coze_lab.core.chat.prompt import render
from coze_lab.core.chat.store import ChatInfo, ChatStore
from coze_lab.core.chat.table_tools import table_tools
from coze_lab.core.chat.tools import (
    Tool,
    ToolBox,
    ToolOutcome,
    function_tools,
    mcp_tool,
    tool_text,
    variable_tools,
    workflow_tool,
)
from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.conversations import (
    ConversationInfo,
    ConversationService,
    MessageInfo,
    NewMessage,
    Turn,
    new_message,
)
from coze_lab.core.conversations.content import file_ids, model_content
from coze_lab.core.errors import Conflict, CozeLabError, InvalidParameter
from coze_lab.core.ids import new_id
from coze_lab.core.knowledge.search import Hit
from coze_lab.core.memory.personal import PersonalMemory, QueuedMessage
from coze_lab.core.memory.tables import TableService
from coze_lab.core.memory.variables import Scope, VariableService, bot_context
from coze_lab.core.models import ModelClient, ModelRegistry, ModelSpec
from coze_lab.core.workflows.engine import RunWorkspace
from coze_lab.core.workflows.spec import WorkflowSpec
from coze_lab.core.workspace import WorkspaceRoot

log = logging.getLogger("coze_lab.chat")

#: a chat whose server died is failed within this many seconds by default (chat_lost_after_s)
LOST_AFTER_S = 30.0
#: how often a follower of a chat running elsewhere looks at the database without a wake-up
#: (PostgreSQL wakes it with NOTIFY; this is the safety net, and the only way on SQLite and
#: MariaDB when another process runs the chat)
FOLLOW_POLL_S = 1.0
#: how long a follower waits for the last events of a chat that has ended before it says
#: the end itself (its server died between the outcome and the events)
END_GRACE_S = 2.0


@dataclass(frozen=True)
class ChatRequest:
    """A validated ``/v3/chat`` request."""

    bot_id: int
    conversation_id: int | None
    messages: list[NewMessage]
    custom_variables: dict[str, str]
    meta_data: dict[str, str]
    user_id: str
    stream: bool
    auto_save_history: bool = True


@dataclass(frozen=True)
class ChatHandle:
    """A started chat: its record (status ``in_progress``) and the channel of its events."""

    chat: ChatInfo
    channel: ChatChannel
    messages: list[MessageInfo]


WorkflowStarter = Callable[[], Any]


class ChatService:
    """Agent runs for one event loop: start, stream, cancel, submit tool outputs.

    A run belongs to the service, not to the HTTP request that started it: a client that
    disconnects loses nothing, and the answer is in the conversation when it is done.

    Example:
        >>> handle = await chats.start(user.id, "1024", request)      # doctest: +SKIP
        >>> async for event in handle.channel.follow():               # doctest: +SKIP
        ...     print(event.event)
        conversation.chat.created
        ...
    """

    def __init__(
        self,
        *,
        bots: BotService,
        conversations: ConversationService,
        store: ChatStore,
        registry: ModelRegistry | Callable[[], ModelRegistry],
        client: ModelClient | None = None,
        workflows: Any = None,
        runs: Callable[[], Any] | None = None,
        plugins: Callable[[], Any] | None = None,
        mcp: Callable[[], Any] | None = None,
        clock: Clock = utcnow,
        lost_after_s: float = LOST_AFTER_S,
        attachments: Attachments | None = None,
        workspaces: WorkspaceRoot | None = None,
        variables: VariableService | None = None,
        file_history: Any = None,
        tables: TableService | None = None,
        memory: PersonalMemory | None = None,
        on_memory_queued: Callable[[], None] | None = None,
        knowledge: Any = None,
    ) -> None:
        self.bots = bots
        #: user tables a bot's model queries with SQL (None: bots with tables fail to chat)
        self.tables = tables
        #: long-term personal memory: read into the prompt of bots with ``memory`` on, and
        #: the user's messages queued once the answer is complete (None: no memory)
        self.memory = memory
        self._on_memory_queued = on_memory_queued
        #: end users' stored variable values (None: the bot's defaults only)
        self.variables = variables
        #: reads the files messages name into the model's context (None: placeholders only)
        self.attachments = attachments
        #: files uploaded to a chat are copied to input/ of the conversation's workspace
        self.workspaces = workspaces
        #: who wrote which workspace file (FileHistory; None: not recorded)
        self.file_history = file_history
        #: the knowledge bases bots recall from (None: bots with knowledge recall nothing)
        self.knowledge = knowledge
        # a running chat beats every stale/3 s; one silent for stale s is lost; the recovery
        # loop looks every lost/5 s: a dead server's chat fails within 0.8 * lost_after_s
        self.lost_after_s = lost_after_s
        self._stale_s = 0.6 * lost_after_s
        self._heartbeat_s = self._stale_s / 3
        self.conversations = conversations
        self.store = store
        self._registry = registry
        self._client = client
        self._workflows = workflows
        self._runs = runs
        self._plugins = plugins
        self._mcp = mcp
        self._clock = clock
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._channels: dict[int, ChatChannel] = {}
        self._recovery: asyncio.Task[None] | None = None
        self._loggers: set[asyncio.Task[None]] = set()
        self.signals = store.signals
        # a cancel sent to another replica stops the chat here (LISTEN/NOTIFY)
        self.signals.on("cancel-chat", self._canceled_elsewhere)
        self.signals.on_reconnect(self._cancels_missed)

    @property
    def registry(self) -> ModelRegistry:
        """The model registry, read on first use (a broken file fails chats, not start-up)."""
        if not isinstance(self._registry, ModelRegistry):
            self._registry = self._registry()
        return self._registry

    @property
    def client(self) -> ModelClient:
        if self._client is None:
            self._client = ModelClient()
        return self._client

    # ---- starting ---------------------------------------------------------------------------
    async def start(self, owner_id: int, connector_id: str, request: ChatRequest) -> ChatHandle:
        """Create the chat (and a conversation when none is named) and run it in the
        background."""
        self.conversations.check_files(owner_id, request.messages)
        resolved = self.bots.resolve(owner_id, request.bot_id, connector_id)
        spec = self._model(resolved.config)
        conversation, history = self._conversation(
            owner_id, connector_id, request, resolved.config.history_rounds
        )
        new = request.conversation_id is None
        end_user = request.user_id or str(owner_id)
        session = (resolved.bot.workspace_id, conversation.id)
        tools = await self._toolbox(
            owner_id,
            connector_id,
            resolved.config,
            Scope(resolved.bot.id, owner_id, conversation.connector_id, end_user),
            session,
        )
        new_chat = self.store.prepare(
            conversation,
            bot_id=resolved.bot.id,
            bot_version=resolved.version,
            messages=request.messages,
            meta_data=request.meta_data,
            persist=request.auto_save_history,
            new_conversation=new,
        )
        chat = new_chat.chat
        system = render(
            resolved.config.prompt,
            self._variables(resolved, conversation, chat, request),
        )
        remembers = self._remembers(resolved.config, connector_id, owner_id, end_user)
        if remembers:
            assert self.memory is not None
            recalled = await asyncio.to_thread(
                self.memory.prompt, owner_id, resolved.bot.workspace_id
            )
            if recalled:
                system = f"{system}\n\n{recalled}" if system else recalled
        if resolved.config.response_format == "json":
            system = f"{system}\n\n{JSON_INSTRUCTION}" if system else JSON_INSTRUCTION
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        # an unreadable file of the new messages fails the chat here, before anything is
        # written; one of the history becomes a notice
        messages += [self._model_message(owner_id, m, strict=False) for m in history]
        messages += [self._model_message(owner_id, m, strict=True) for m in new_chat.messages]
        await self._copy_inputs(owner_id, resolved.bot.workspace_id, chat, new_chat.messages)
        state = AgentState(messages=messages, config=resolved.config, end_user=end_user)
        channel = ChatChannel()
        channel.put(ChatEvent("conversation.chat.created", chat=replace(chat, status="created")))
        channel.put(ChatEvent("conversation.chat.in_progress", chat=chat))
        written = asyncio.Event()
        after = None
        if remembers:
            queued = [
                QueuedMessage(m.id, m.content)
                for m in new_chat.messages
                if m.role == "user" and m.content_type == "text"
            ]
            after = self._memory_step(
                chat, queued, owner_id, resolved.bot.workspace_id, resolved.config.model_id
            )
        recall, names = self._recall(resolved.bot.workspace_id, resolved.config)
        run = self._launch(
            chat,
            state,
            tools,
            spec,
            channel,
            request.auto_save_history,
            written,
            after,
            recall=recall if resolved.config.knowledge_auto_call else None,
            names=names,
        )
        task = self._tasks[chat.id]
        # the model request goes out first; the chat's rows are written while the model
        # thinks (the agent writes nothing before ``written`` is set)
        await run.requested.wait()
        # its first events go with them: one write less per chat, none in a thread while
        # the first token is on its way (a run already over, canceled before it sent its
        # request, logs nothing, as before)
        first = [] if channel.closed else channel.events[:]
        try:
            new_chat.write(pack([e.to_dict() for e in first]))
        except BaseException:
            task.cancel()
            raise
        channel.logged = len(first)
        written.set()
        return ChatHandle(chat, channel, new_chat.messages)

    def _remembers(
        self, config: BotConfig, connector_id: str, owner_id: int, end_user: str
    ) -> bool:
        """Whether a chat reads and feeds its user's personal memory: the bot has
        ``memory`` on and the person chatting is the token's owner (the Playground, or an
        API call whose ``user_id`` is the owner's id), never an end user of a published bot,
        whose words must not reach the owner's memory nor other end users' prompts."""
        if not config.memory or self.memory is None:
            return False
        return connector_id == connectors.PLAYGROUND or end_user == str(owner_id)

    def _memory_step(
        self,
        chat: ChatInfo,
        messages: list[QueuedMessage],
        owner_id: int,
        space_id: int,
        model_id: str,
    ) -> Callable[[], Awaitable[None]] | None:
        """What the chat does once its answer is complete, before its ``done``: queue its
        user messages for memory (a chat that failed or was canceled queues nothing). One
        insert per message; the detection and merging happen in the background worker."""
        memory = self.memory
        if memory is None or not messages:
            return None

        async def queue() -> None:
            status = await asyncio.to_thread(self.store.status, chat.id)
            if status not in ("completed", "requires_action"):
                return
            count = await asyncio.to_thread(
                memory.enqueue,
                owner_id,
                space_id,
                messages,
                model_id=model_id,
                bot_id=chat.bot_id,
                chat_id=chat.id,
            )
            if count and self._on_memory_queued is not None:
                self._on_memory_queued()

        return queue

    async def _copy_inputs(
        self, owner_id: int, space_id: int, chat: ChatInfo, messages: list[MessageInfo]
    ) -> None:
        """The files the chat's new messages name, copied to ``input/`` of the session (and
        recorded in the file history)."""
        if self.workspaces is None or self.attachments is None:
            return
        named: dict[str, int] = {}
        for message in messages:
            for file_id in file_ids(message.content, message.content_type):
                named.setdefault(file_id, message.id)
        uploads = [
            (self.attachments.read(owner_id, file_id), message_id)
            for file_id, message_id in named.items()
        ]
        if not uploads:
            return
        workspaces, history = self.workspaces, self.file_history

        def copy() -> None:
            workspace = workspaces.session(space_id, chat.conversation_id)
            for (info, path), message_id in uploads:
                target = workspace.add_input(info.file_name, path)
                if history is not None:
                    history.record(
                        space_id=space_id,
                        session_id=chat.conversation_id,
                        path=f"input/{info.file_name}",
                        action="upload",
                        size=target.stat().st_size,
                        actor_id=owner_id,
                        chat_id=chat.id,
                        message_id=message_id,
                    )

        try:
            await asyncio.to_thread(copy)
        except OSError as exc:  # the chat goes on: the model has the files' content anyway
            log.warning("chat files not copied to workspace %s: %s", chat.conversation_id, exc)

    def _model_message(
        self, owner_id: int, message: MessageInfo | Turn, *, strict: bool
    ) -> dict[str, Any]:
        if self.attachments is None:
            content = model_content(message.content, message.content_type)
        else:
            content = self.attachments.content(
                owner_id, message.content, message.content_type, strict=strict
            )
        return {"role": message.role, "content": content}

    async def submit_tool_outputs(
        self,
        owner_id: int,
        connector_id: str,
        conversation_id: int,
        chat_id: int,
        outputs: Mapping[str, str],
    ) -> ChatHandle:
        """Continue a ``requires_action`` chat with the caller's tool results (once)."""
        chat = self.store.get(owner_id, connector_id, conversation_id, chat_id)
        if chat.status != "requires_action" or chat.required_action is None:
            raise Conflict(f"chat {chat_id} is {chat.status}, not waiting for tool outputs")
        expected = [c["id"] for c in chat.required_action["submit_tool_outputs"]["tool_calls"]]
        if sorted(outputs) != sorted(expected):
            raise InvalidParameter(f"tool_outputs must answer exactly the tool calls {expected}")
        saved = self.store.resume(chat_id)
        if saved is None:
            raise Conflict(f"chat {chat_id} is no longer waiting for tool outputs")
        state = AgentState.from_dict(saved)
        conversation = self.conversations.get(owner_id, connector_id, conversation_id)
        rows = []
        for call in state.pending:
            output = tool_text(outputs[call["id"]])
            state.messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
            rows.append(
                new_message(
                    conversation,
                    NewMessage("user", output, "text", "tool_output", {"tool_call_id": call["id"]}),
                    now=self._clock(),
                    chat_id=chat_id,
                    bot_id=chat.bot_id,
                )
            )
        state.pending = []
        self.store.add_messages(owner_id, rows)
        chat = replace(chat, status="in_progress", required_action=None)
        scope = None
        if chat.bot_id is not None and state.end_user:
            scope = Scope(chat.bot_id, owner_id, connector_id, state.end_user)
        session = None
        if (state.config.file_tools or state.config.workflow_ids) and chat.bot_id is not None:
            space_id = self.bots.resolve(owner_id, chat.bot_id, connector_id).bot.workspace_id
            session = (space_id, conversation.id)
        tools = await self._toolbox(owner_id, connector_id, state.config, scope, session)
        channel = ChatChannel(base=self.store.last_seq(chat_id))
        channel.put(ChatEvent("conversation.chat.in_progress", chat=chat))
        spec = self._model(state.config)
        self._launch(chat, state, tools, spec, channel, True)
        return ChatHandle(chat, channel, [])

    async def cancel(
        self, owner_id: int, connector_id: str, conversation_id: int | None, chat_id: int
    ) -> ChatInfo:
        """Stop the chat for real: the model stream is closed and the tool loop ends (a
        chat-flow's chat: its workflow run is canceled, whichever replica runs it)."""
        self.store.get(owner_id, connector_id, conversation_id, chat_id)
        info = self.store.cancel(chat_id)
        task = self._tasks.get(chat_id)
        if task is not None:
            task.cancel()
        run_id = info.meta_data.get("execute_id") if not info.bot_id else None
        if run_id and self._runs is not None:
            await self._runs().cancel(owner_id, int(run_id))
        return info

    def get(
        self, owner_id: int, connector_id: str, conversation_id: int | None, chat_id: int
    ) -> ChatInfo:
        """The owner's chat on this connector (in this conversation, when one is named)."""
        return self.store.get(owner_id, connector_id, conversation_id, chat_id)

    def messages(
        self, owner_id: int, connector_id: str, conversation_id: int, chat_id: int
    ) -> list[MessageInfo]:
        """What the owner's chat wrote: answers, tool calls and results (Coze's
        ``/v3/chat/message/list``)."""
        chat = self.store.get(owner_id, connector_id, conversation_id, chat_id)
        return self.store.messages(chat.id)

    def _canceled_elsewhere(self, chat_id: str) -> None:
        task = self._tasks.get(int(chat_id))
        if task is not None:
            log.info("chat %s canceled on another replica", chat_id)
            task.cancel()

    def _cancels_missed(self) -> None:
        """Stop the chats here whose cancel was sent while the listener was down."""
        running = [chat_id for chat_id, task in self._tasks.items() if not task.done()]
        for chat_id in self.store.canceled(running):
            self._canceled_elsewhere(str(chat_id))

    def events(
        self,
        owner_id: int,
        connector_id: str,
        conversation_id: int | None,
        chat_id: int,
        after: int = 0,
        idle_s: float | None = None,
    ) -> AsyncIterator[tuple[int, ChatEvent] | None]:
        """The owner's chat's events numbered after ``after`` (1 is the first event the
        chat streamed), then live until ``done``, whichever replica runs it; ``None`` after
        each ``idle_s`` without one (for keep-alives). NotFound at once for a chat that is
        not the caller's, before anything streams."""
        self.store.get(owner_id, connector_id, conversation_id, chat_id)
        return self._follow(chat_id, after, idle_s)

    async def _follow(
        self, chat_id: int, after: int, idle_s: float | None
    ) -> AsyncIterator[tuple[int, ChatEvent] | None]:
        self.signals.bind()
        last = after
        ended_at: float | None = None
        quiet_since = time.monotonic()
        with self.signals.waiting(f"chat:{chat_id}") as wake:
            while True:
                channel = self._channels.get(chat_id)
                if channel is not None and last >= channel.base:  # running here: memory
                    index, seen = 0, last - channel.base
                    async for item in channel.follow(idle_s=idle_s):
                        if item is None:
                            yield None
                            continue
                        index += 1
                        if index <= seen:
                            continue
                        last = channel.base + index
                        yield last, item
                    return
                wake.clear()
                stored = self.store.events(chat_id, last)
                for seq, data in stored:
                    last = seq
                    event = ChatEvent.from_dict(data)
                    yield seq, event
                    if event.event == ev.DONE and not self._continued(chat_id):
                        return
                if stored:
                    ended_at, quiet_since = None, time.monotonic()
                    continue
                if chat_id in self._channels:
                    continue  # it started here meanwhile (a continued chat)
                status = self.store.status(chat_id)
                if status is None:
                    return
                if status not in ("in_progress", "created"):
                    # ended (or waits for tool outputs): its last events are on their way,
                    # unless its server died in between; then the end is said from the row
                    ended_at = ended_at or time.monotonic()
                    if time.monotonic() - ended_at > END_GRACE_S:
                        for item in self._ending(chat_id, last):
                            yield item
                        return
                timeout = FOLLOW_POLL_S if not self.signals.shared else 5 * FOLLOW_POLL_S
                if idle_s is not None:
                    timeout = min(timeout, max(idle_s - (time.monotonic() - quiet_since), 0.01))
                if ended_at is not None:
                    timeout = min(timeout, END_GRACE_S / 4)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout)
                if (
                    idle_s is not None
                    and not wake.is_set()
                    and time.monotonic() - quiet_since >= idle_s
                ):
                    quiet_since = time.monotonic()
                    yield None

    def _continued(self, chat_id: int) -> bool:
        """After a ``done``: the chat runs again (its tool outputs came), more follows."""
        return chat_id in self._channels or self.store.status(chat_id) == "in_progress"

    def _ending(self, chat_id: int, last: int) -> Iterator[tuple[int, ChatEvent]]:
        info = self.store.info(chat_id)
        name = {
            "completed": ev.CHAT_COMPLETED,
            "failed": ev.CHAT_FAILED,
            "requires_action": ev.CHAT_REQUIRES_ACTION,
        }.get(info.status if info is not None else "")
        if name is not None:  # a canceled chat's stream just ends (Coze has no event)
            last += 1
            yield last, ChatEvent(name, chat=info)
        yield last + 1, ChatEvent(ev.DONE)

    def channel(self, chat_id: int) -> ChatChannel | None:
        """The events of a chat running in this process (None when it is not)."""
        return self._channels.get(chat_id)

    async def wait(self, chat_id: int) -> None:
        task = self._tasks.get(chat_id)
        if task is not None:
            await asyncio.shield(task)

    def recover(self) -> int:
        """Fail chats left ``in_progress`` by a server that died (their heartbeat stopped);
        a client polling them sees ``failed`` with the reason instead of waiting forever,
        and the answer streamed before the end (kept as it streamed) as a partial answer."""
        return len(self.store.fail_stale(self._clock() - timedelta(seconds=self._stale_s)))

    def start_recovery_loop(self, every_s: float | None = None) -> None:
        every_s = self.lost_after_s / 5 if every_s is None else every_s

        async def loop() -> None:
            while True:
                try:
                    if count := self.recover():
                        log.warning("failed %d chats whose server stopped", count)
                except Exception:  # the next round tries again
                    log.exception("chat recovery failed")
                await asyncio.sleep(every_s)

        if self._recovery is None:
            self._recovery = asyncio.get_running_loop().create_task(loop())

    async def close(self) -> None:
        if self._recovery is not None:
            self._recovery.cancel()
        for task in list(self._tasks.values()):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        # the chats' last events (their failure, done) reach the log for other replicas
        loggers = list(self._loggers)
        if loggers:
            await asyncio.wait(loggers, timeout=2.0)
        for task in loggers:
            task.cancel()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # ---- internals ----------------------------------------------------------------------------
    def _launch(
        self,
        chat: ChatInfo,
        state: AgentState,
        tools: ToolBox,
        spec: ModelSpec,
        channel: ChatChannel,
        persist: bool,
        written: asyncio.Event | None = None,
        after: Callable[[], Awaitable[None]] | None = None,
        *,
        recall: Recall | None = None,
        names: dict[int, str] | None = None,
    ) -> AgentRun:
        run = AgentRun(
            chat=chat,
            state=state,
            tools=tools,
            spec=spec,
            client=self.client,
            store=self.store,
            channel=channel,
            clock=self._clock,
            persist=persist,
            written=written,
            heartbeat_s=self._heartbeat_s,
            poll_cancel=not self.signals.shared,
            after=after,
            recall=recall,
            dataset_names=names,
        )
        task = self.track(chat.id, run.run(), channel, written)
        # a task canceled before it ran never sent a request
        task.add_done_callback(lambda _: run.requested.set())
        return run

    def track(
        self,
        chat_id: int,
        work: Coroutine[Any, Any, None],
        channel: ChatChannel,
        written: asyncio.Event | None = None,
    ) -> asyncio.Task[None]:
        """Run ``work`` (which puts the chat's events on ``channel``) as the chat's task: a
        cancel from any replica cancels it, its events go to the chat's log (once
        ``written`` is set, when given: the chat's row exists) and followers here read them
        from memory. Chat-flow chats run this way too.

        Example:
            >>> task = chats.track(chat.id, work(channel), channel)  # doctest: +SKIP
        """
        loop = asyncio.get_running_loop()
        self.signals.bind()
        task = loop.create_task(work, name=f"chat-{chat_id}")
        self._tasks[chat_id] = task
        self._channels[chat_id] = channel
        logger = loop.create_task(self._log_events(chat_id, channel, written))
        self._loggers.add(logger)
        logger.add_done_callback(self._loggers.discard)

        def forget(_: asyncio.Task[None]) -> None:
            self._tasks.pop(chat_id, None)
            if logger.done():
                self._channels.pop(chat_id, None)
            else:  # followers here read memory until the log has everything
                logger.add_done_callback(lambda _: self._channels.pop(chat_id, None))

        task.add_done_callback(forget)
        return task

    @property
    def heartbeat_s(self) -> float:
        """How often a running chat marks itself alive (see ``lost_after_s``)."""
        return self._heartbeat_s

    async def _log_events(
        self, chat_id: int, channel: ChatChannel, written: asyncio.Event | None
    ) -> None:
        """Write the chat's events to its log (after the ``logged`` first ones, written with
        the chat's rows): every event that is not a delta at once, deltas together at most
        every ``PARTIAL_SAVE_S`` (the write rate does not grow with the token rate).
        Followers on other replicas read the log."""
        while written is not None and not written.is_set():
            if channel.closed:
                return  # the chat's rows were never written: it did not start
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(written.wait(), 0.1)
        saved = channel.logged
        while True:
            if not channel.closed:
                channel.urgent.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(channel.urgent.wait(), PARTIAL_SAVE_S)
                # deltas that arrive together go out together
                await asyncio.sleep(0)
            closed = channel.closed
            batch = channel.events[saved:]
            if batch:
                rows = pack([e.to_dict() for e in batch])
                ok = await asyncio.to_thread(
                    self.store.append_events, chat_id, channel.base + saved + 1, rows
                )
                if not ok:
                    log.warning("chat %s: its event log was ended elsewhere", chat_id)
                    return
                saved += len(batch)
            if closed and saved == len(channel.events):
                return

    def _model(self, config: BotConfig) -> ModelSpec:
        return self.registry.resolve(config.model_id)

    def _conversation(
        self, owner_id: int, connector_id: str, request: ChatRequest, rounds: int
    ) -> tuple[ConversationInfo, list[Turn]]:
        """The chat's conversation (a new one is written with the chat, in its transaction)
        and the last ``rounds`` rounds of its history."""
        if request.conversation_id is None:
            now = self._clock()
            return ConversationInfo(
                id=new_id(),
                owner_id=owner_id,
                bot_id=request.bot_id,
                connector_id=connector_id,
                name="",
                meta_data={},
                section_id=new_id(),
                created_at=now,
                updated_at=now,
            ), []
        conversation, history = self.conversations.chat_context(
            owner_id, connector_id, request.conversation_id, rounds=rounds
        )
        if conversation.bot_id not in (None, request.bot_id):
            raise InvalidParameter(
                f"conversation {conversation.id} belongs to bot {conversation.bot_id}"
            )
        return conversation, history

    def _variables(
        self,
        resolved: ResolvedBot,
        conversation: ConversationInfo,
        chat: ChatInfo,
        request: ChatRequest,
    ) -> dict[str, str]:
        end_user = request.user_id or str(conversation.owner_id)
        if self.variables is None:
            values = resolved.config.variable_defaults()
        else:  # the end user's stored values override the defaults
            scope = Scope(
                resolved.bot.id, conversation.owner_id, conversation.connector_id, end_user
            )
            values = self.variables.values(scope, resolved.config)
        values.update(request.custom_variables)
        values.update(
            sys_user_id=end_user,
            sys_bot_id=str(resolved.bot.id),
            sys_conversation_id=str(conversation.id),
            sys_chat_id=str(chat.id),
            sys_connector_id=conversation.connector_id,
            sys_time=_iso(self._clock()),
        )
        return values

    async def _toolbox(
        self,
        owner_id: int,
        connector_id: str,
        config: BotConfig,
        scope: Scope | None = None,
        session: tuple[int, int] | None = None,
    ) -> ToolBox:
        """The chat's tools; ``scope`` (bot, owner, connector, end user) is whose variables
        the save_variable tool writes; ``session`` (space id, conversation id) names the
        workspace the file tools work in."""
        draft = connector_id == connectors.PLAYGROUND
        tools: list[Tool] = []
        if config.file_tools:
            tools += self._file_tools(owner_id, session)
        for workflow_id in config.workflow_ids:
            # a published bot runs the versions it was published with (none pinned: the
            # bot was published before versions were pinned; it runs the newest)
            pinned = None if draft else config.workflow_versions.get(workflow_id)
            spec, version = self._workflows.runnable(
                owner_id, workflow_id, draft=draft, version=pinned
            )
            runner = self._workflow_runner(owner_id, session, scope)
            tools.append(workflow_tool(workflow_id, spec, version, runner))
        if config.plugin_tools:
            tools += self._plugin_tools(owner_id, config, draft)
        if config.tables:
            if self.tables is None:
                raise InvalidParameter("this bot uses tables, but tables are not available")
            scene = "draft" if draft else "online"
            tools += table_tools(owner_id, config, scene, self.tables)
        for ref in config.mcp_servers:
            tools += await self._mcp_tools(owner_id, ref)
        tools += function_tools(config)
        if config.save_variables and scope is not None and self.variables is not None:
            tools += variable_tools(config, scope, self.variables)
        if config.dataset_ids and not config.knowledge_auto_call and session is not None:
            recall, names = self._recall(session[0], config)
            if recall is not None:
                tools.append(recall_tool(recall, names))
        return ToolBox(tools)

    def _recall(self, space_id: int, config: BotConfig) -> tuple[Recall | None, dict[int, str]]:
        """How a bot recalls: from those of its knowledge bases that belong to its own
        space (another space's are never read), and their names for the citations."""
        if not config.dataset_ids or self.knowledge is None:
            return None, {}
        knowledge = self.knowledge
        names = knowledge.dataset_names(space_id, config.dataset_ids)
        ids = list(names)

        async def recall(query: str) -> list[Hit]:
            return await knowledge.search_space(space_id, ids, query, top_k=TOP_K)

        return recall, names

    def _file_tools(self, owner_id: int, session: tuple[int, int] | None) -> list[Tool]:
        if self.workspaces is None or session is None:
            raise InvalidParameter("this bot uses file tools, but workspaces are not available")
        workspaces, (space_id, conversation_id) = self.workspaces, session
        history = self.file_history

        def record(entry: FileWrite) -> None:
            if history is not None:
                history.record(
                    space_id=space_id,
                    session_id=conversation_id,
                    path=entry.path,
                    action="write",
                    size=entry.size,
                    actor_id=owner_id,
                    chat_id=entry.chat_id,
                    message_id=entry.message_id,
                )

        return file_tools(lambda: workspaces.session(space_id, conversation_id), record)

    async def _run_workspace(
        self, owner_id: int, session: tuple[int, int] | None
    ) -> RunWorkspace | None:
        """The conversation's workspace for the code nodes of a run the chat starts."""
        if self.workspaces is None or session is None:
            return None
        workspaces, history = self.workspaces, self.file_history
        space_id, conversation_id = session
        try:
            workspace = await asyncio.to_thread(workspaces.session, space_id, conversation_id)
        except OSError as exc:  # the run goes on without the files
            log.warning("no workspace for the runs of conversation %s: %s", conversation_id, exc)
            return None
        call = CURRENT_CALL.get()

        def record(paths: list[str], run_id: int, node_id: str) -> None:
            if history is None:
                return
            for path in paths:
                try:
                    size = workspace.resolve(path, must_exist=True).stat().st_size
                except CozeLabError:
                    continue
                history.record(
                    space_id=space_id,
                    session_id=conversation_id,
                    path=path,
                    action="write",
                    size=size,
                    actor_id=owner_id,
                    chat_id=call.chat_id if call else None,
                    message_id=call.message_id if call else None,
                    run_id=run_id,
                    node_id=node_id,
                )

        return RunWorkspace(workspace.root, record)

    def _workflow_runner(
        self, owner_id: int, session: tuple[int, int] | None = None, scope: Scope | None = None
    ) -> Any:
        """Runs a workflow tool; ``scope`` (the chat's bot and end user) is whose variables
        the run's variable and assign nodes use."""
        context = None if scope is None else bot_context(scope)

        async def run(
            workflow_id: int, spec: WorkflowSpec, version: int | None, args: dict[str, Any]
        ) -> ToolOutcome:
            if self._runs is None:
                return ToolOutcome("error: workflows are not available here", ok=False)
            runs = self._runs()
            workspace = await self._run_workspace(owner_id, session)
            run_id = await runs.start(
                owner_id,
                workflow_id,
                args,
                spec=spec,
                version=version,
                workspace=workspace,
                bot_context=context,
            )
            try:
                info = await runs.wait(run_id)
            except asyncio.CancelledError:  # the chat was canceled: so is its workflow run
                await asyncio.shield(runs.cancel(owner_id, run_id))
                raise
            meta = {"execute_id": str(run_id), "status": info.status}
            if info.status == "succeeded":
                return ToolOutcome(tool_text(info.outputs or {}), meta=meta)
            if info.status == "interrupted":
                questions = [p.data for p in runs.pending(owner_id, run_id)]
                return ToolOutcome(
                    tool_text(
                        {
                            "status": "waiting for a person",
                            "execute_id": str(run_id),
                            "questions": questions,
                        }
                    ),
                    meta=meta,
                )
            error = (info.error or {}).get("msg", info.status)
            return ToolOutcome(f"error: the workflow {info.status}: {error}", ok=False, meta=meta)

        return run

    def _plugin_tools(self, owner_id: int, config: BotConfig, draft: bool) -> list[Tool]:
        plugins = self._plugins() if self._plugins is not None else None
        if plugins is None:
            raise InvalidParameter("this bot uses plugin tools, but plugins are not available")
        scene = "draft" if draft else "online"
        ids = [t.tool_id for t in config.plugin_tools]
        definitions = plugins.tool_definitions(
            owner_id, ids, scene=scene, versions=None if draft else config.plugin_versions
        )
        tools = []
        for definition in definitions:
            version = None if draft else config.plugin_versions.get(definition.plugin_id)

            async def invoke(
                args: dict[str, Any], tool_id: int = definition.tool_id, version: Any = version
            ) -> ToolOutcome:
                result = await plugins.call_tool(
                    owner_id, tool_id, args, scene=scene, version=version
                )
                meta = {
                    "status_code": str(result.status_code or ""),
                    "latency_ms": str(round(result.latency_ms, 1)),
                }
                if result.authorization_url:
                    meta["authorization_url"] = result.authorization_url
                return ToolOutcome(result.output, ok=result.ok, meta=meta)

            tools.append(
                Tool(
                    definition.name,
                    definition.description,
                    definition.parameters,
                    "plugin",
                    invoke,
                    ref={"plugin_id": str(definition.plugin_id), "api_id": str(definition.tool_id)},
                )
            )
        return tools

    async def _mcp_tools(self, owner_id: int, ref: McpServerRef) -> list[Tool]:
        """The tools of one MCP server the bot names; a server that cannot be reached (or
        was deleted) leaves its tools out of this chat, with a warning in the log."""
        if self._mcp is None:
            raise InvalidParameter("this bot uses MCP servers, but MCP is not available here")
        service = self._mcp()
        try:
            found = await service.tools(owner_id, ref.server_id)
        except CozeLabError as exc:
            log.warning("MCP server %s left out of a chat: %s", ref.server_id, exc.msg)
            return []
        return [
            mcp_tool(service, owner_id, ref.server_id, info)
            for info in found
            if not ref.tools or info.name in ref.tools
        ]


#: what a bot with ``response_format: json`` adds to its prompt
JSON_INSTRUCTION = "Answer with one JSON object and nothing else."


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")
