"""``cl.Bot``: define a bot in a notebook and chat with it, streamed, in-process.

The bot is stored in the same database the lab server uses (so it shows in the sidebar and
can be published to the API); chats run on the lab's agent runtime in a background loop,
so a cell can iterate the answer as it streams.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from coze_lab.core import connectors
from coze_lab.core.chat import ChatEvent, ChatInfo, parse_chat_request
from coze_lab.core.chat import events as ev
from coze_lab.core.conversations import MessageInfo
from coze_lab.core.workflows.dsl import Workflow
from coze_lab.notebook.in_process import InProcessHost, default_host


class Bot:
    """A bot: prompt, model, variables, workflow tools and client functions.

    Example:
        >>> import coze_lab as cl
        >>> bot = cl.Bot("helper", prompt="You answer in one sentence, {{name}}.",
        ...              variables={"name": "friend"})            # doctest: +SKIP
        >>> for piece in bot.chat("What is WAL mode?"):          # doctest: +SKIP
        ...     print(piece, end="")
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
        variables: Mapping[str, str] | None = None,
        workflows: Sequence[Workflow | str | int] = (),
        functions: Sequence[Mapping[str, Any]] = (),
        history_rounds: int = 10,
        host: InProcessHost | None = None,
    ) -> None:
        self.name = name
        self.prompt = prompt
        self.description = description
        self.model = model
        self.temperature = temperature
        self.variables = dict(variables or {})
        self.workflows = list(workflows)
        self.functions = [dict(f) for f in functions]
        self.history_rounds = history_rounds
        self._host = host
        self._id: int | None = None
        self.conversation_id: int | None = None

    @property
    def host(self) -> InProcessHost:
        if self._host is None:
            self._host = default_host()
        return self._host

    @property
    def id(self) -> str:
        """The bot id (``bot_id`` in the Coze API); saving the bot first if needed."""
        return str(self.save())

    def save(self) -> int:
        """Store this definition as the bot's draft (created on first save, by name after)."""
        runtime, user = self.host.runtime, self.host.user
        body = self._body()
        if self._id is None:
            existing, _ = runtime.bots.list(user.id, page_size=100)
            match = next((b for b in existing if b.name == self.name), None)
            self._id = match.id if match else None
        if self._id is None:
            self._id = runtime.bots.create(user.id, user.workspace_id, body).id
        else:
            runtime.bots.update(user.id, self._id, body)
        return self._id

    def publish(self, connector_ids: Sequence[str] = connectors.PUBLISHABLE) -> int:
        """Save, then publish the draft to the API (1024) and Web SDK (999) connectors."""
        bot_id = self.save()
        return self.host.runtime.bots.publish(self.host.user.id, bot_id, list(connector_ids))

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
        body: dict[str, Any] = {
            "bot_id": str(bot_id),
            "stream": True,
            "additional_messages": [{"role": "user", "content": message, "content_type": "text"}],
            "custom_variables": dict(variables or {}),
        }
        request = parse_chat_request(body, self.conversation_id)
        reply = ChatReply(self.host, request)
        self.conversation_id = reply.chat.conversation_id
        return reply

    def clear(self) -> None:
        """Start a new section: the next chat sees none of the earlier messages."""
        if self.conversation_id is not None:
            self.host.runtime.conversations.clear(
                self.host.user.id, connectors.PLAYGROUND, self.conversation_id
            )

    def history(self) -> list[MessageInfo]:
        """Every message of the current conversation, oldest first."""
        if self.conversation_id is None:
            return []
        page = self.host.runtime.conversations.list_messages(
            self.host.user.id, connectors.PLAYGROUND, self.conversation_id, order="asc", limit=50
        )
        items = list(page.items)
        while page.has_more:
            page = self.host.runtime.conversations.list_messages(
                self.host.user.id,
                connectors.PLAYGROUND,
                self.conversation_id,
                order="asc",
                after_id=page.last_id,
                limit=50,
            )
            items += page.items
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
            "variables": [{"keyword": k, "default_value": v} for k, v in self.variables.items()],
            "workflow_id_list": {"ids": [{"id": self._workflow_id(w)} for w in self.workflows]},
            "functions": self.functions,
        }

    def _workflow_id(self, workflow: Workflow | str | int) -> str:
        if not isinstance(workflow, Workflow):
            return str(workflow)
        runtime, user = self.host.runtime, self.host.user
        info = runtime.workflows.save(user.id, workflow.to_json())
        runtime.workflows.publish(user.id, info.id)
        return str(info.id)

    def __repr__(self) -> str:
        return f"Bot({self.name!r}, id={self._id})"


class ChatReply:
    """A chat in progress: iterate it for the answer's text as it streams.

    ``text`` waits for the end; ``status``, ``usage``, ``messages`` and ``required_action``
    describe the finished chat; ``events()`` yields every Coze event.
    """

    def __init__(self, host: InProcessHost, request: Any) -> None:
        self._host = host
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._events: list[ChatEvent] = []
        self._done = False
        asyncio.run_coroutine_threadsafe(self._run(request), host._loop)
        kind, value = self._queue.get()
        if kind == "error":
            raise value
        self.chat: ChatInfo = value

    async def _run(self, request: Any) -> None:
        try:
            handle = await self._host.runtime.chats.start(
                self._host.user.id, connectors.PLAYGROUND, request
            )
        except Exception as exc:  # reported to the calling thread
            self._queue.put(("error", exc))
            return
        self._queue.put(("chat", handle.chat))
        async for event in handle.channel.follow():
            self._queue.put(("event", event))
        self._queue.put(("end", None))

    def events(self) -> Iterator[ChatEvent]:
        """Every event (Coze's names), replayed from the start, then live until the end."""
        yield from list(self._events)
        while not self._done:
            kind, value = self._queue.get()
            if kind == "end":
                self._done = True
                return
            self._events.append(value)
            if value.chat is not None:
                self.chat = value.chat
            yield value

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

    def _repr_markdown_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        state = self.chat.status if self._done else "streaming"
        return f"ChatReply(chat_id={self.chat.id}, status={state!r})"
