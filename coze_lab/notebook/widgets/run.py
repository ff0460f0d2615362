"""The workflow-run widget: live graph, messages, inline forms for pending questions.

The run lives on the server. The widget follows it from the kernel on a background
thread (trace + event stream, polling while the run waits for a person) and pushes what
it sees over the comm as traits, so it works wherever the kernel reaches the server, and
the cell that displayed it returns at once. Answers typed into the widget come back as
custom messages (``{"type": "resume", "event_id", "data"}``) and are posted to the server
by the kernel; when the page is served by the same Jupyter server, the browser posts them
itself first (so a busy kernel does not delay them). Re-displaying ``studio.run(id)``
after a kernel restart or on another page reconnects and replays the whole run.

>>> run = wf.run(doc="hello")        # doctest: +SKIP  (returns at once, shows the widget)
>>> run.resume("yes")                # doctest: +SKIP  (the only pending question)
>>> run.wait(60).outputs             # doctest: +SKIP
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import anywidget
import traitlets as t

from coze_lab.notebook.http import StudioClient as Studio
from coze_lab.notebook.http import StudioError
from coze_lab.notebook.trace import RunTrace
from coze_lab.notebook.widgets.run_state import FINISHED, RunState

log = logging.getLogger(__name__)
#: the widgets' ESM and CSS, package files beside the Python package
STATIC = Path(__file__).resolve().parents[2] / "widgets" / "static"
_POLL_MIN_S = 0.5
_POLL_MAX_S = 5.0


class RunWidget(anywidget.AnyWidget):
    """A live view of one workflow run on the server (see the module docstring)."""

    _esm = STATIC / "run.js"
    _css = STATIC / "widgets.css"

    run_id = t.Unicode("").tag(sync=True)
    name = t.Unicode("").tag(sync=True)
    status = t.Unicode("connecting").tag(sync=True)
    nodes = t.List().tag(sync=True)
    edges = t.List().tag(sync=True)
    messages = t.List().tag(sync=True)
    pending = t.List().tag(sync=True)
    outputs = t.Any(None).tag(sync=True)
    error = t.Any(None).tag(sync=True)
    last_event = t.Int(0).tag(sync=True)
    #: the run this widget's run retries ("" for a fresh run)
    retry_of = t.Unicode("").tag(sync=True)
    #: a connection problem, shown above the graph ("" when all is well)
    notice = t.Unicode("").tag(sync=True)
    #: the Jupyter base path the page may call directly ("" when it cannot)
    page_base = t.Unicode("").tag(sync=True)

    def __init__(
        self,
        run_id: str,
        *,
        studio: Studio,
        definition: dict[str, Any] | None = None,
        follow: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(run_id=str(run_id), page_base=studio.page_base or "", **kwargs)
        self.studio = studio
        self._state = RunState(str(run_id))
        if definition:
            self._state.graph(definition)
            self._push()
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._settled = threading.Condition(self._lock)
        self.on_msg(self._on_front_end_message)
        self._thread: threading.Thread | None = None
        if follow:
            self.follow()

    # ---- notebook API -------------------------------------------------------------------
    @property
    def id(self) -> str:
        return self.run_id

    def follow(self) -> None:
        """Start following the run on a background thread (idempotent)."""
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._follow, daemon=True, name=f"coze-lab-run-{self.run_id}"
            )
            self._thread.start()

    def resume(self, *args: Any, event_id: str | None = None) -> RunWidget:
        """Answer a pending question: ``run.resume("yes")`` (the only one) or
        ``run.resume(event_id, data)``. Returns at once; the widget shows the rest."""
        if len(args) == 2:
            event_id, data = str(args[0]), args[1]
        elif len(args) == 1:
            data = args[0]
        else:
            raise TypeError("resume(data) or resume(event_id, data)")
        if event_id is None:
            ids = [p["event_id"] for p in self.pending] or [
                p["event_id"] for p in self.studio.pending(self.run_id)
            ]
            if not ids:
                raise ValueError(
                    f"run {self.run_id} is {self.status}: no question is waiting for an answer"
                )
            if len(ids) > 1:
                raise ValueError(
                    f"{len(ids)} questions are waiting: run.resume(event_id, answer) with one of "
                    + ", ".join(ids)
                )
            event_id = ids[0]
        self.studio.resume(event_id, data)
        self._answered(str(event_id))
        return self

    def cancel(self) -> bool:
        """Stop the run on the server."""
        canceled = self.studio.cancel(self.run_id)
        if canceled:
            with self._lock:
                self._idle = False  # until the follower has seen the cancel
        self._wake.set()
        return canceled

    def retry(self, from_node: str | None = None, **changes: Any) -> RunWidget:
        """Retry this failed or canceled run from ``from_node`` (default: the node it failed
        on) as a new run, reusing the outputs of the nodes before it; keywords change that
        node: ``run.retry(from_node="parse", code=fixed_parse)`` (a function or source),
        ``prompt=...``, ``model=...``, ``inputs={...}``. Returns the new run's widget."""
        from coze_lab.core.workflows.dsl import retry_changes

        if from_node is None and changes:
            from_node = (self.studio.run_info(self.run_id).get("error") or {}).get("node_id")
        new_id = self.studio.retry(self.run_id, from_node, retry_changes(from_node, changes))
        return RunWidget(new_id, studio=self.studio)

    @property
    def trace(self) -> RunTrace:
        """The run's nodes as data, read from the server now: tokens, cost, latency and
        attempts per node (``run.trace.to_pandas()``)."""
        return RunTrace(self.run_id, self.studio.run_info(self.run_id)["nodes"])

    def wait(self, timeout: float | None = None) -> RunWidget:
        """Block until the run finishes or waits for a person (scripts and tests).

        Never wait in a cell for an answer typed into the widget: the answer reaches the
        kernel only after the cell ends. Answer with ``run.resume(...)`` instead.
        """
        with self._settled:
            self._settled.wait_for(
                lambda: self.status in (*FINISHED, "interrupted") and self._idle, timeout
            )
        return self

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        super().close()

    def __repr__(self) -> str:
        return (
            f"RunWidget(id={self.run_id!r}, status={self.status!r}, "
            f"pending={len(self.pending)})  # re-display with cl.connect().run({self.run_id!r})"
        )

    # ---- following the server -----------------------------------------------------------
    _idle = False

    def _follow(self) -> None:
        delay = _POLL_MIN_S
        while not self._stop.is_set():
            try:
                self._catch_up()
                if self._state.finished:
                    return
                if self._state.status == "interrupted":
                    self._wait_for_answer()
                delay = _POLL_MIN_S
            except StudioError as exc:
                if self._stop.is_set():
                    return
                self.notice = f"cannot follow the run: {exc.msg} (retrying)"
                self._stop.wait(delay)
                delay = min(delay * 2, 10.0)
            except Exception as exc:  # never a traceback on a background thread
                if self._stop.is_set():
                    return
                log.exception("following run %s failed", self.run_id)
                self.notice = f"stopped following the run: {exc}"
                return

    def _catch_up(self) -> None:
        """Replay the events from the last one seen, then reload the exact trace."""
        with self._lock:
            self._idle = False
        for event in self.studio.events(self.run_id, after=self._state.last_event):
            if self._stop.is_set():
                return
            with self._lock:
                self._state.apply(event.id, event.event, event.data or {})
                self._push()
        trace = self.studio.run_info(self.run_id)
        pending = self.studio.pending(self.run_id) if trace["status"] == "interrupted" else []
        with self._lock:
            if trace.get("definition") and not self._state.edges:
                self._state.graph(trace["definition"])
            self._state.load(trace, pending)
            self._idle = True
            self.notice = ""
            self._push()
            self._settled.notify_all()

    def _wait_for_answer(self) -> None:
        """Poll while the run waits for a person (answered here, in the sidebar or by API)."""
        delay = _POLL_MIN_S
        while not self._stop.is_set():
            woken = self._wake.wait(delay)
            self._wake.clear()
            if woken or self._stop.is_set():
                return  # answered here: catch up at once
            # A run answered elsewhere may pause again at once: compare the questions.
            waiting = {str(p["event_id"]) for p in self.studio.pending(self.run_id)}
            if waiting != set(self._state.pending):
                return
            delay = min(delay * 1.5, _POLL_MAX_S)

    def _push(self) -> None:
        with self.hold_sync():
            for key, value in self._state.snapshot().items():
                setattr(self, key, value)

    def _answered(self, event_id: str) -> None:
        with self._lock:
            self._state.pending.pop(event_id, None)
            self._state.status = "running"  # until the follower has seen what follows
            self._idle = False
            self._push()
        self._wake.set()

    def _retry_here(self, from_node: str | None) -> None:
        """The page's "Retry" button: retry the run from ``from_node`` (default: the node it
        failed on) and follow the new run in this widget (the old one stays on the server:
        ``studio.run(old_id)``)."""
        try:
            new_id = self.studio.retry(self.run_id, from_node)
        except StudioError as exc:
            self.notice = f"cannot retry: {exc.msg}"
            return
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(10)
        with self._lock:
            old = self.run_id
            self._state = RunState(new_id)
            self.run_id = new_id
            self.retry_of = old
            self._idle = False
            self._push()
        self._wake.clear()
        self.follow()

    # ---- messages from the page ---------------------------------------------------------
    def _on_front_end_message(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        kind = content.get("type")
        try:
            if kind == "resume":
                self.studio.resume(str(content["event_id"]), content.get("data"))
                self._answered(str(content["event_id"]))
            elif kind == "cancel":
                self.cancel()
            elif kind == "retry":
                self._retry_here(content.get("from_node") or None)
            elif kind == "poke":
                self._wake.set()
                self.follow()
        except StudioError as exc:
            self.send({"type": "error", "event_id": content.get("event_id"), "msg": exc.msg})
