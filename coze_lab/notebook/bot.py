"""``cl.Bot``: define a bot in a notebook and chat with it, streamed.

The bot lives on the server ``cl.connect()`` found (the lab's own, with no configuration),
through the notebook's one transport, the studio API: it shows in the sidebar, its chats run
on the server (a kernel restart loses nothing), and it can be published to the API.
"""

from __future__ import annotations

import json
from collections.abc import ItemsView, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from coze_lab.core import connectors
from coze_lab.core.chat import events as ev
from coze_lab.core.conversations import MessageInfo
from coze_lab.core.workflows.dsl import Workflow
from coze_lab.notebook.http import SseEvent, StudioClient


class Bot:
    """A bot: prompt, model, variables, workflow tools, client functions and tables
    (``tables=[sales]``: the model queries them with SQL; ``table_writes``: and changes them).

    ``variables`` defines the bot's variables: keyword → default value, or keyword →
    ``{"default_value", "description", "user_can_set", "agent_can_set"}``.
    ``bot.variables`` then reads and sets your values of them (:class:`BotVariables`).

    Example:
        >>> import coze_lab as cl
        >>> bot = cl.Bot("helper", prompt="You answer in one sentence, {{name}}.",
        ...              variables={"name": "friend"})            # doctest: +SKIP
        >>> for piece in bot.chat("What is WAL mode?"):          # doctest: +SKIP
        ...     print(piece, end="")
        >>> bot.variables["name"] = "Ada"                        # doctest: +SKIP
        >>> bot.publish()                                        # doctest: +SKIP
        1
    """

    def __init__(
        self,
        name: str,
        *,
        prompt: str = "",
        description: str = "",
        model: str = "default",
        temperature: float | None = None,
        variables: Mapping[str, str | Mapping[str, Any]] | None = None,
        workflows: Sequence[Workflow | str | int] = (),
        functions: Sequence[Mapping[str, Any]] = (),
        tables: Sequence[Any] = (),
        table_writes: bool = False,
        mcp_servers: Sequence[Any] = (),
        history_rounds: int = 10,
        memory: bool = False,
        studio: StudioClient | None = None,
        host: Any = None,
        space: str | int | None = None,
    ) -> None:
        self.name = name
        self.prompt = prompt
        self.description = description
        self.model = model
        self.temperature = temperature
        self.variables = BotVariables(self, variables or {})
        self.workflows = list(workflows)
        self.functions = [dict(f) for f in functions]
        #: ``cl.Table`` objects or table ids the model queries with SQL (one tool each)
        self.tables = list(tables)
        self.table_writes = table_writes
        #: MCP servers whose tools the model may call: a server (``cl.mcp.add(...)``), its
        #: id, or ``(server, ["tool", ...])`` for some of its tools
        self.mcp_servers = list(mcp_servers)
        self.history_rounds = history_rounds
        #: long-term personal memory: your user.md and skills in the prompt, and what you
        #: ask it to remember kept after each chat (see ``cl.memory``)
        self.memory = memory
        #: the transport: ``studio``, an in-process host's (tests), or ``cl.connect()``'s
        self._studio = studio if studio is not None else None if host is None else host.studio
        #: the space the bot lives in (a name or id; None: the transport's own space)
        self.space = space
        self._id: int | None = None
        self.conversation_id: int | None = None

    @property
    def studio(self) -> StudioClient:
        if self._studio is None or self.space is not None:
            from coze_lab.notebook.connect import current

            base = self._studio if self._studio is not None else current()
            self._studio = base if self.space is None else base.space(self.space)
            self.space = None  # resolved: the transport works in it now
        return self._studio

    @property
    def id(self) -> str:
        """The bot id (``bot_id`` in the Coze API); saving the bot first if needed."""
        return str(self.save())

    def save(self) -> int:
        """Store this definition as the bot's draft (created on first save, by name after)."""
        body = self._body()
        if self._id is None:
            existing = self.studio.request("GET", "bots", page_size=100)["bots"]
            match = next((b for b in existing if b["name"] == self.name), None)
            self._id = int(match["bot_id"]) if match else None
        if self._id is None:
            self._id = int(self.studio.create_bot(**body)["bot_id"])
        else:
            self.studio.update_bot(str(self._id), **body)
        self.variables._saved = True
        return self._id

    def publish(self, connector_ids: Sequence[str] = connectors.PUBLISHABLE) -> int:
        """Save, then publish the draft to the API (1024) and Web SDK (999) connectors."""
        bot_id = self.save()
        answer = self.studio.request(
            "POST", f"bots/{bot_id}/publish", {"connector_ids": list(connector_ids)}, envelope=True
        )
        return int(answer["version"])

    def chat(
        self,
        message: str,
        *,
        variables: Mapping[str, str] | None = None,
        new_conversation: bool = False,
    ) -> ChatReply:
        """Send a message to the draft (Playground) and return the streaming reply.

        The bot keeps one conversation across calls (``clear()`` starts a new context);
        iterate the reply for the answer's pieces, or read ``reply.text`` to wait for it.
        """
        bot_id = self.save()
        if new_conversation:
            self.conversation_id = None
        events = self.studio.chat_stream(
            str(bot_id),
            message,
            conversation_id=None if self.conversation_id is None else str(self.conversation_id),
            custom_variables=dict(variables or {}),
        )
        reply = ChatReply(events, self.studio)
        self.conversation_id = reply.chat.conversation_id
        return reply

    def clear(self) -> None:
        """Start a new section: the next chat sees none of the earlier messages."""
        if self.conversation_id is not None:
            self.studio.clear(str(self.conversation_id))

    def history(self) -> list[MessageInfo]:
        """Every message of the current conversation, oldest first."""
        if self.conversation_id is None:
            return []
        path = f"conversations/{self.conversation_id}/messages"
        page = self.studio.request("GET", path, limit=50)
        items = [message_info(m) for m in page["messages"]]
        while page["has_more"]:
            page = self.studio.request("GET", path, limit=50, after_id=page["last_id"])
            items += [message_info(m) for m in page["messages"]]
        return items

    def _body(self) -> dict[str, Any]:
        model: dict[str, Any] = {"model_id": self.model, "context_round": self.history_rounds}
        if self.temperature is not None:
            model["temperature"] = self.temperature
        return {
            "name": self.name,
            "description": self.description,
            "prompt_info": {"prompt": self.prompt},
            "model_info_config": model,
            "variables": self.variables.definitions,
            "workflow_id_list": {"ids": [{"id": self._workflow_id(w)} for w in self.workflows]},
            "functions": self.functions,
            "tables": [
                {"table_id": str(getattr(t, "id", t)), "allow_writes": self.table_writes}
                for t in self.tables
            ],
            "memory": self.memory,
            "mcp_servers": [_mcp_server(m) for m in self.mcp_servers],
        }

    def _workflow_id(self, workflow: Workflow | str | int) -> str:
        if not isinstance(workflow, Workflow):
            return str(workflow)
        return str(self.studio.save_workflow(workflow, publish=True)["id"])

    def __repr__(self) -> str:
        return f"Bot({self.name!r}, id={self._id})"


#: the fields a variable definition may give (beside its keyword)
_DEFINITION = ("default_value", "description", "enable", "user_can_set", "agent_can_set")


class BotVariables(Mapping[str, str]):
    """A bot's variables: their definitions, and one end user's values of them.

    Read it as a dict (a value never set reads as its default); setting a value writes it
    as the end user would (a variable with ``user_can_set=False`` refuses). The end user is
    you on the Playground (the values your chats with the draft use) unless
    :meth:`of` names another one.

    Example:
        >>> bot = cl.Bot("helper", prompt="Hi {{name}}", variables={"name": "friend"})
        ...                                                      # doctest: +SKIP
        >>> bot.variables["name"] = "Ada"                        # doctest: +SKIP
        >>> dict(bot.variables)                                  # doctest: +SKIP
        {'name': 'Ada'}
        >>> bot.variables.define("plan", "free", user_can_set=False)  # doctest: +SKIP
        >>> bot.variables.of("customer-7", connector="1024")["name"]  # doctest: +SKIP
        'friend'
    """

    def __init__(
        self,
        bot: Bot,
        definitions: Mapping[str, str | Mapping[str, Any]],
        *,
        connector: str = connectors.PLAYGROUND,
        user: str | None = None,
    ) -> None:
        self._bot = bot
        self._defs: dict[str, dict[str, Any]] = {}
        self._connector, self._user = connector, user
        self._saved = False
        for keyword, spec in definitions.items():
            if isinstance(spec, Mapping):
                self.define(keyword, **spec)
            else:
                self.define(keyword, spec)

    # ---- definitions ------------------------------------------------------------------
    def define(
        self,
        keyword: str,
        default_value: str = "",
        description: str = "",
        *,
        enable: bool = True,
        user_can_set: bool = True,
        agent_can_set: bool = True,
    ) -> None:
        """Add or change a variable's definition (stored with the bot's next save)."""
        self._defs[keyword] = {
            "keyword": keyword,
            "default_value": default_value,
            "description": description,
            "enable": enable,
            "user_can_set": user_can_set,
            "agent_can_set": agent_can_set,
        }
        self._saved = False

    @property
    def definitions(self) -> list[dict[str, Any]]:
        """The definitions, as the bot stores them."""
        return [dict(d) for d in self._defs.values()]

    # ---- values -----------------------------------------------------------------------
    def of(self, user: str, *, connector: str = connectors.API) -> BotVariables:
        """The values of another end user (Coze's ``connector_uid``) on ``connector``
        (default the API, ``"1024"``)."""
        view = BotVariables(self._bot, {}, connector=connector, user=user)
        view._defs = self._defs
        return view

    def states(self) -> list[dict[str, Any]]:
        """Each enabled variable's definition with this end user's value (``update_time``
        0: never set)."""
        bot_id = self._bot_id()
        data = self._bot.studio.request("GET", f"bots/{bot_id}/variables", **self._target())
        return list(data["variables"])

    def update(self, values: Mapping[str, str] | None = None, /, **more: str) -> None:
        """Set several values at once, all or none: ``update(city="Oslo", units="metric")``."""
        data = [{"keyword": k, "value": v} for k, v in {**(values or {}), **more}.items()]
        body = {"data": data, **self._target()}
        self._bot.studio.request("PUT", f"bots/{self._bot_id()}/variables", body)

    def __setitem__(self, keyword: str, value: str) -> None:
        self.update({keyword: value})

    def __getitem__(self, keyword: str) -> str:
        values = self._values()
        if keyword not in values:
            raise KeyError(f"{keyword} (the bot's enabled variables: {', '.join(values)})")
        return values[keyword]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values())

    def items(self) -> ItemsView[str, str]:
        """Every (keyword, value), read at once."""
        return self._values().items()

    def values(self) -> ValuesView[str]:
        return self._values().values()

    def __len__(self) -> int:
        return len(self._values())

    def __repr__(self) -> str:
        who = "you" if self._user is None else repr(self._user)
        values = self._values() if self._bot._id is not None else {}
        return f"BotVariables({values!r}, user={who}, connector={self._connector!r})"

    def _values(self) -> dict[str, str]:
        return {s["keyword"]: s["value"] for s in self.states()}

    def _target(self) -> dict[str, str]:
        target = {"connector_id": self._connector}
        if self._user is not None:
            target["connector_uid"] = self._user
        return target

    def _bot_id(self) -> int:
        bot = self._bot
        return bot.save() if bot._id is None or not bot.variables._saved else bot._id


@dataclass(frozen=True)
class ChatState:
    """A chat as its stream describes it (Coze's chat object)."""

    id: int
    conversation_id: int
    status: str
    usage: dict[str, int] | None = None
    required_action: dict[str, Any] | None = None
    last_error: dict[str, Any] | None = None


@dataclass(frozen=True)
class ChatEvent:
    """One event of a chat stream (Coze's names), with its chat or its message."""

    event: str
    chat: ChatState | None = None
    message: MessageInfo | None = None


class ChatReply:
    """A chat in progress: iterate it for the answer's text as it streams.

    ``text`` waits for the end; ``status``, ``usage``, ``messages`` and ``required_action``
    describe the finished chat; ``events()`` yields every Coze event.
    """

    def __init__(self, stream: Iterator[SseEvent], studio: StudioClient | None = None) -> None:
        self._studio = studio
        self._stream = stream
        self._events: list[ChatEvent] = []
        self._done = False
        chat = None
        while chat is None and self._next():  # the chat exists (or the request failed)
            chat = self._events[-1].chat
        if chat is None:
            raise RuntimeError("the chat stream ended before the chat was created")
        self.chat: ChatState = chat

    def _next(self) -> bool:
        """Read one more event from the stream; False at its end."""
        try:
            raw = next(self._stream)
        except StopIteration:
            self._done = True
            return False
        event = _chat_event(raw)
        self._events.append(event)
        if event.chat is not None:
            self.chat = event.chat
        return True

    def events(self) -> Iterator[ChatEvent]:
        """Every event (Coze's names), replayed from the start, then live until the end."""
        seen = 0
        while seen < len(self._events) or self._next():
            seen += 1
            yield self._events[seen - 1]

    def __iter__(self) -> Iterator[str]:
        for event in self.events():
            if event.event == ev.MESSAGE_DELTA and event.message is not None:
                yield event.message.content

    def wait(self) -> ChatReply:
        for _ in self.events():
            pass
        return self

    @property
    def text(self) -> str:
        """The answer (waits for the chat to finish)."""
        self.wait()
        answers = [m.content for m in self.messages if m.type == "answer"]
        return "\n".join(answers)

    @property
    def messages(self) -> list[MessageInfo]:
        self.wait()
        return [
            e.message
            for e in self._events
            if e.event == ev.MESSAGE_COMPLETED and e.message is not None
        ]

    @property
    def status(self) -> str:
        self.wait()
        return self.chat.status

    @property
    def usage(self) -> dict[str, int] | None:
        self.wait()
        return self.chat.usage

    @property
    def required_action(self) -> dict[str, Any] | None:
        self.wait()
        return self.chat.required_action

    def submit_tool_outputs(self, outputs: Mapping[str, Any]) -> ChatReply:
        """Answer the client functions the chat asked for (``status == "requires_action"``)
        and return the chat as it goes on:
        ``reply.submit_tool_outputs({call_id: "42 °C"})``. Outputs that are not strings are
        sent as JSON."""
        action = self.required_action
        if self.status != "requires_action" or not action or self._studio is None:
            raise RuntimeError(f"chat {self.chat.id} is {self.status}: it waits for no tool output")
        asked = [call["id"] for call in action["submit_tool_outputs"]["tool_calls"]]
        unknown = sorted(set(outputs) - set(asked))
        if unknown:
            raise ValueError(f"the chat asked for no tool call {unknown}; it asked for {asked}")
        sent = [
            {"tool_call_id": call_id, "output": _text(outputs[call_id])}
            for call_id in asked
            if call_id in outputs
        ]
        stream = self._studio.submit_tool_outputs(
            str(self.chat.conversation_id), str(self.chat.id), sent
        )
        return ChatReply(stream, self._studio)

    def _repr_markdown_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        state = self.chat.status if self._done else "streaming"
        return f"ChatReply(chat_id={self.chat.id}, status={state!r})"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _chat_event(raw: SseEvent) -> ChatEvent:
    data = raw.data if isinstance(raw.data, dict) else {}
    if raw.event.startswith("conversation.chat."):
        chat = ChatState(
            id=int(data["id"]),
            conversation_id=int(data["conversation_id"]),
            status=data.get("status", ""),
            usage=data.get("usage"),
            required_action=data.get("required_action"),
            last_error=data.get("last_error"),
        )
        return ChatEvent(raw.event, chat=chat)
    if raw.event.startswith("conversation.message."):
        return ChatEvent(raw.event, message=message_info(data))
    return ChatEvent(raw.event)


def message_info(data: Mapping[str, Any]) -> MessageInfo:
    """A message of the studio API (Coze's message object) as the core's MessageInfo."""
    return MessageInfo(
        id=int(data["id"]),
        conversation_id=int(data["conversation_id"]),
        section_id=int(data["section_id"]),
        chat_id=int(data["chat_id"]) if data.get("chat_id") else None,
        bot_id=int(data["bot_id"]) if data.get("bot_id") else None,
        role=data["role"],
        type=data["type"],
        content=data.get("content") or "",
        content_type=data.get("content_type") or "text",
        meta_data=dict(data.get("meta_data") or {}),
        created_at=_time(data.get("created_at")),
        updated_at=_time(data.get("updated_at")),
        reasoning_content=data.get("reasoning_content") or None,
        usage=data.get("usage"),
    )


def _time(unix: Any) -> datetime:
    return datetime.fromtimestamp(int(unix or 0), timezone.utc)


def _mcp_server(entry: Any) -> dict[str, Any]:
    """A bot's ``mcp_servers`` item from a server, its id, or ``(server, tools)``."""
    server, tools = entry if isinstance(entry, tuple) else (entry, None)
    item: dict[str, Any] = {"server_id": str(getattr(server, "id", server))}
    if tools is not None:
        item["tools"] = list(tools)
    return item
