"""What a chat widget shows, rebuilt from Coze ``/v3/chat`` stream events.

Pure Python so it is tested on its own.

>>> state = ChatState()
>>> state.ask("hi")
>>> state.apply("conversation.message.delta", {"id": "m1", "role": "assistant",
...             "type": "answer", "content": "Hel"})
>>> state.apply("conversation.message.delta", {"id": "m1", "role": "assistant",
...             "type": "answer", "content": "lo"})
>>> state.messages[-1]["content"]
'Hello'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coze_lab.core.chat import events as ev

#: message types shown as collapsible tool calls
TOOL_TYPES = ("function_call", "tool_output", "tool_response")


@dataclass
class ChatState:
    conversation_id: str = ""
    chat_id: str = ""
    status: str = "idle"  # idle | streaming | completed | failed | canceled | requires_action
    messages: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    usage: dict[str, Any] | None = None
    #: questions that workflow runs started by this chat's tools wait on, answerable inline
    questions: list[dict[str, Any]] = field(default_factory=list)
    #: while a re-attached chat's events replay: the messages already started over
    replayed: set[str] | None = None

    def reattach(self, chat_id: str) -> None:
        """A running chat is followed again from its first event (after a reload): the
        messages it streams replace what the history showed of them.

        Example:
            >>> state = ChatState(messages=[{"id": "m1", "role": "assistant",
            ...     "type": "answer", "content": "Hel", "streaming": False}])
            >>> state.reattach("c1")
            >>> state.apply("conversation.message.delta", {"id": "m1", "role": "assistant",
            ...             "type": "answer", "content": "Hel"})
            >>> state.messages[-1]["content"], state.status
            ('Hel', 'streaming')
        """
        self.chat_id = chat_id
        self.status = "streaming"
        self.error = ""
        self.replayed = set()

    def waiting_runs(self) -> list[str]:
        """Runs of workflow tools that paused on a question, oldest first, each once."""
        runs: list[str] = []
        for message in self.messages:
            run_id = message.get("execute_id")
            if message.get("run_status") == "interrupted" and run_id and run_id not in runs:
                runs.append(run_id)
        return runs

    def ask_about(self, run_id: str, pending: list[dict[str, Any]]) -> None:
        """Show the pending questions of a tool's run (replacing what it showed before)."""
        self.questions = [q for q in self.questions if q["run_id"] != run_id]
        for item in pending:
            self.questions.append(
                {
                    "event_id": str(item["event_id"]),
                    "run_id": run_id,
                    "node_title": item.get("node_title") or item.get("node_id") or "",
                    "type": item.get("type", "question"),
                    "data": item.get("data") or {},
                }
            )

    def answered(self, event_id: str) -> dict[str, Any] | None:
        """Forget an answered question; returns it."""
        for question in self.questions:
            if question["event_id"] == event_id:
                self.questions.remove(question)
                return question
        return None

    def ask(self, text: str) -> None:
        """The person's message, shown at once; a chat is about to stream."""
        self.messages.append(
            {
                "id": f"local-{len(self.messages)}",
                "role": "user",
                "type": "question",
                "content": text,
                "streaming": False,
            }
        )
        self.status = "streaming"
        self.error = ""

    def apply(self, event: str, data: Any) -> None:
        """One event of the chat stream."""
        if event.startswith("conversation.chat."):
            chat = data if isinstance(data, dict) else {}
            self.chat_id = str(chat.get("id") or self.chat_id)
            self.conversation_id = str(chat.get("conversation_id") or self.conversation_id)
            if event.endswith(".completed"):
                self.status = "completed"
                self.usage = chat.get("usage")
            elif event.endswith(".failed"):
                self.status = "failed"
                last = chat.get("last_error") or {}
                self.error = str(last.get("msg") or "the chat failed")
            elif event.endswith(".requires_action"):
                self.status = "requires_action"
            elif event.endswith(".canceled"):
                self.status = "canceled"
        elif event in (ev.MESSAGE_DELTA, ev.MESSAGE_COMPLETED):
            self._message(data, complete=event == ev.MESSAGE_COMPLETED)
        elif event == "error":
            self.status = "failed"
            self.error = str((data or {}).get("msg") if isinstance(data, dict) else data)
        elif event == ev.DONE and self.status == "streaming":
            self.status = "completed"
        if self.status != "streaming":
            self.replayed = None
            for message in self.messages:
                message["streaming"] = False

    def history(self, messages: list[dict[str, Any]]) -> None:
        """Messages of the conversation from the server (oldest first), replacing ours."""
        self.messages = [_shown(m, streaming=False) for m in messages]

    def cleared(self) -> None:
        """A new context window starts: earlier messages stay, below a divider."""
        self.messages.append(
            {
                "id": f"section-{len(self.messages)}",
                "role": "system",
                "type": "section",
                "content": "context cleared",
                "streaming": False,
            }
        )

    def _message(self, data: Any, *, complete: bool) -> None:
        if not isinstance(data, dict):
            return
        if data.get("role") == "user":
            return  # our own question, echoed
        if data.get("type") == "verbose":
            return
        self.chat_id = str(data.get("chat_id") or self.chat_id)
        self.conversation_id = str(data.get("conversation_id") or self.conversation_id)
        key = str(data.get("id") or "")
        for message in reversed(self.messages):
            if key and message["id"] == key:
                if self.replayed is not None and key not in self.replayed:
                    self.replayed.add(key)
                    message["content"] = ""  # the replay starts it over
                    message["streaming"] = True
                if complete:
                    message.update(_shown(data, streaming=False))
                else:
                    message["content"] += str(data.get("content") or "")
                return
        if self.replayed is not None and key:
            self.replayed.add(key)
        self.messages.append(_shown(data, streaming=not complete))


def _shown(data: dict[str, Any], *, streaming: bool) -> dict[str, Any]:
    shown = {
        "id": str(data.get("id") or ""),
        "role": data.get("role", "assistant"),
        "type": data.get("type", "answer"),
        "content": str(data.get("content") or ""),
        "streaming": streaming,
    }
    usage = data.get("usage")
    if isinstance(usage, dict):  # an answer's tokens (and cost)
        shown["usage"] = usage
    meta = data.get("meta_data") or {}
    if isinstance(meta, dict) and meta.get("execute_id"):  # a workflow tool's run
        shown["execute_id"] = str(meta["execute_id"])
        shown["run_status"] = str(meta.get("status") or "")
    return shown
