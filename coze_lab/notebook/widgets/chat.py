"""The chat widget: streamed markdown answers, collapsible tool calls, cancel, clear
context and the conversation's history; questions that a tool's workflow waits on,
answered inline.

The kernel streams the chat from the studio API on a background thread and pushes the
messages to the page as traits (throttled), so the cell returns at once and it works
wherever the kernel reaches the server. The page sends ``{"type": "send", "text"}``,
``{"type": "cancel"}``, ``{"type": "clear"}``, ``{"type": "history"}`` and
``{"type": "answer", "event_id", "data"}`` and ``{"type": "activity"}``.

A widget opened on a conversation whose chat still runs (a reloaded page, a restarted
kernel) re-attaches to it: the chat's stored events replay, then stream live. Its Activity
section shows the conversation's timeline (``chat.load_activity()``).

When a workflow the bot called as a tool pauses on a question, the widget shows the
question; the answer resumes that run, and once the run is over the widget tells the bot
what was answered and what the workflow returned, so the chat continues from there.

>>> chat = studio.chat(bot_id)      # doctest: +SKIP
>>> chat                            # doctest: +SKIP  (type into it, or:)
>>> chat.send("What can you do?")   # doctest: +SKIP
>>> chat.wait(60).messages[-1]["content"]   # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

import anywidget
import traitlets as t

from coze_lab.core.chat import events as ev
from coze_lab.notebook.http import StudioClient as Studio
from coze_lab.notebook.http import StudioError
from coze_lab.notebook.widgets.chat_state import ChatState
from coze_lab.notebook.widgets.run import STATIC

_PUSH_EVERY_S = 0.05
_RUN_POLL_S = 0.3


class ChatWidget(anywidget.AnyWidget):
    """A conversation with one bot's draft (the Playground connector)."""

    _esm = STATIC / "chat.js"
    _css = STATIC / "widgets.css"

    bot_id = t.Unicode("").tag(sync=True)
    bot_name = t.Unicode("").tag(sync=True)
    conversation_id = t.Unicode("").tag(sync=True)
    chat_id = t.Unicode("").tag(sync=True)
    status = t.Unicode("idle").tag(sync=True)
    messages = t.List().tag(sync=True)
    error = t.Unicode("").tag(sync=True)
    #: questions a tool's workflow run waits on: [{event_id, run_id, node_title, type, data}]
    questions = t.List().tag(sync=True)
    #: the conversation's activity (``studio.activity``): state, usage and timeline items
    timeline = t.Dict().tag(sync=True)

    def __init__(
        self,
        bot_id: str,
        *,
        studio: Studio,
        conversation_id: str | None = None,
        bot_name: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(bot_id=str(bot_id), bot_name=bot_name, **kwargs)
        self.studio = studio
        self._state = ChatState(conversation_id=conversation_id or "")
        self._lock = threading.RLock()
        self._done = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._pushed_at = 0.0
        self.on_msg(self._on_front_end_message)
        if not bot_name:
            with contextlib.suppress(StudioError):
                self.bot_name = str(studio.bot(self.bot_id).get("name", ""))
        if conversation_id:
            self.load_history()
            self._reattach()
        self._push()

    # ---- notebook API -------------------------------------------------------------------
    def send(self, text: str) -> ChatWidget:  # type: ignore[override]
        """Ask the bot; the answer streams into the widget. Returns at once."""
        if not text.strip():
            raise ValueError("say something")
        with self._lock:
            if self._state.status == "streaming":
                raise RuntimeError("the bot is still answering; cancel() first")
            self._state.ask(text)
            self._push(force=True)
            self._thread = threading.Thread(
                target=self._stream, args=(text,), daemon=True, name="coze-lab-chat"
            )
            self._thread.start()
        return self

    def answer(self, event_id: str, data: Any) -> ChatWidget:
        """Answer a question a tool's workflow waits on (also what the inline form does).

        The run resumes on the server; when it is over, the widget sends the bot the answer
        and the workflow's result, and the chat continues. Returns at once.
        """
        event_id = str(event_id)
        self.studio.resume(event_id, data)
        with self._lock:
            question = self._state.answered(event_id)
            self._push(force=True)
        if question is not None:
            threading.Thread(
                target=self._after_answer,
                args=(question, data),
                daemon=True,
                name="coze-lab-chat-answer",
            ).start()
        return self

    def cancel(self) -> None:
        """Stop the running chat on the server."""
        if self._state.chat_id and self._state.status == "streaming":
            self.studio.cancel_chat(self._state.chat_id)

    def clear(self) -> None:
        """Clear the context: the next question starts a new section (history stays)."""
        if self._state.conversation_id:
            self.studio.clear(self._state.conversation_id)
        with self._lock:
            self._state.cleared()
            self._push(force=True)

    def load_history(self) -> None:
        """Show the conversation's messages from the server."""
        if not self._state.conversation_id:
            return
        messages = self.studio.messages(self._state.conversation_id)
        with self._lock:
            self._state.history(sorted(messages, key=lambda m: m.get("created_at", 0)))
            self._push(force=True)

    def load_activity(self) -> dict[str, Any]:
        """Fetch the conversation's timeline (messages, tool calls, workflow nodes, files
        written, durations, tokens) into the widget's Activity section; returns it."""
        if not self._state.conversation_id:
            return {}
        activity = self.studio.activity(conversation_id=self._state.conversation_id)
        self.timeline = activity
        return activity

    def _reattach(self) -> None:
        """Follow the conversation's chat if it is still running (a kernel restarted, a
        page reloaded): its events from the first, then live until it ends."""
        conversation_id = self._state.conversation_id
        try:
            listed = self.studio.conversations(self.bot_id)
            found = [c for c in listed if c["id"] == conversation_id]
        except StudioError:
            return
        if not found or found[0].get("state") != "running" or not found[0].get("chat_id"):
            with contextlib.suppress(StudioError):
                self.load_activity()
            return
        chat_id = str(found[0]["chat_id"])
        with self._lock:
            self._state.reattach(chat_id)
            self._push(force=True)
            self._thread = threading.Thread(
                target=self._stream_events,
                args=(lambda: self.studio.chat_events(chat_id, conversation_id),),
                daemon=True,
                name="coze-lab-chat",
            )
            self._thread.start()

    def wait(self, timeout: float | None = None) -> ChatWidget:
        """Block until the current answer has finished streaming (scripts and tests)."""
        with self._done:
            self._done.wait_for(lambda: self._state.status != "streaming", timeout)
        return self

    def __repr__(self) -> str:
        return (
            f"ChatWidget(bot_id={self.bot_id!r}, conversation_id={self.conversation_id!r}, "
            f"messages={len(self.messages)})"
        )

    # ---- streaming ----------------------------------------------------------------------
    def _stream(self, text: str) -> None:
        conversation_id = self._state.conversation_id or None
        self._stream_events(
            lambda: self.studio.chat_stream(self.bot_id, text, conversation_id=conversation_id)
        )

    def _stream_events(self, events: Any) -> None:
        try:
            for event in events():
                with self._lock:
                    self._state.apply(event.event, event.data)
                    self._push()
        except StudioError as exc:
            with self._lock:
                self._state.apply("error", {"msg": exc.msg})
        finally:
            with self._lock:
                if self._state.status == "streaming":
                    self._state.apply(ev.DONE, None)
                self._push(force=True)
                self._done.notify_all()
            self._show_questions(self._state.waiting_runs())
            threading.Thread(target=self._refresh_activity, daemon=True).start()

    def _refresh_activity(self) -> None:
        with contextlib.suppress(StudioError):
            self.load_activity()

    def _show_questions(self, run_ids: list[str]) -> None:
        """Fetch what the tools' paused runs ask (answered elsewhere: nothing is left)."""
        for run_id in run_ids:
            try:
                pending = self.studio.pending(run_id)
            except StudioError as exc:
                self.error = f"cannot read the questions of run {run_id}: {exc.msg}"
                continue
            with self._lock:
                self._state.ask_about(run_id, pending)
                self._push(force=True)

    def _after_answer(self, question: dict[str, Any], data: Any) -> None:
        """Follow the resumed run; when it is over, tell the bot (the chat continues)."""
        run_id = question["run_id"]
        try:
            while True:
                info = self.studio.run_info(run_id)
                if info["status"] in ("succeeded", "failed", "canceled"):
                    break
                if info["status"] == "interrupted":  # asking something else now?
                    pending = [
                        p
                        for p in self.studio.pending(run_id)
                        if str(p["event_id"]) != question["event_id"]
                    ]
                    if pending:
                        with self._lock:
                            self._state.ask_about(run_id, pending)
                            self._push(force=True)
                        return
                time.sleep(_RUN_POLL_S)
            self.wait()  # the bot may still be answering something else
            self.send(_answer_report(question, data, info))
        except (StudioError, RuntimeError) as exc:
            self.error = getattr(exc, "msg", str(exc))

    def _push(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._pushed_at < _PUSH_EVERY_S:
            return
        self._pushed_at = now
        state = self._state
        with self.hold_sync():
            self.conversation_id = state.conversation_id
            self.chat_id = state.chat_id
            self.status = state.status
            self.error = state.error
            self.messages = [dict(m) for m in state.messages]
            self.questions = [dict(q) for q in state.questions]

    # ---- messages from the page ---------------------------------------------------------
    def _on_front_end_message(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        kind = content.get("type")
        try:
            if kind == "send":
                self.send(str(content.get("text", "")))
            elif kind == "cancel":
                self.cancel()
            elif kind == "clear":
                self.clear()
            elif kind == "history":
                self.load_history()
            elif kind == "activity":
                self.load_activity()
            elif kind == "answer":
                self.answer(str(content.get("event_id")), content.get("data"))
        except (StudioError, ValueError, RuntimeError) as exc:
            self.error = getattr(exc, "msg", str(exc))
            if kind == "answer":  # the form shows it and stays answerable
                self._send_error(content.get("event_id"), self.error)

    def _send_error(self, event_id: Any, msg: str) -> None:
        # anywidget's send; ours (send(text)) asks the bot
        super().send({"type": "error", "event_id": event_id, "msg": msg})


def _answer_report(question: dict[str, Any], data: Any, info: dict[str, Any]) -> str:
    """What the widget tells the bot once an answered workflow run is over."""
    asked = question["data"].get("question") or question["node_title"] or "the question"
    answer = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    if info["status"] == "succeeded":
        result = f"the workflow finished: {json.dumps(info.get('outputs'), ensure_ascii=False)}"
    else:
        error = (info.get("error") or {}).get("msg") or info["status"]
        result = f"the workflow {info['status']}: {error}"
    return f'I answered "{asked}" with "{answer}"; {result}'
