"""What a workflow-run widget shows, rebuilt from the run's trace and event stream.

Pure Python (no widgets, no HTTP) so it is tested on its own: ``load`` takes the studio
API's run trace, ``apply`` one event of ``/coze_lab/api/runs/{id}/events``.

>>> state = RunState("7")
>>> state.apply(1, "node_started", {"node_id": "ask", "node_title": "ask", "node_type": "question"})
>>> state.nodes["ask"]["status"]
'running'
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from coze_lab.core.workflows import events as ev
from coze_lab.notebook.questions import Question

FINISHED = ("succeeded", "failed", "canceled")


@dataclass
class RunState:
    run_id: str
    name: str = ""
    status: str = "running"
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    outputs: Any = None
    error: dict[str, Any] | None = None
    last_event: int = 0
    #: the node whose streamed message is still growing (its last piece not yet received)
    streaming: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def load(self, trace: dict[str, Any], pending: list[dict[str, Any]] | None = None) -> None:
        """The server's trace: status, outputs, error and every node's record and timing."""
        self.status = trace.get("status") or self.status
        self.name = trace.get("name") or self.name
        self.outputs = trace.get("outputs")
        self.error = trace.get("error")
        for record in trace.get("nodes") or []:
            node = self._node(record["node_id"])
            node.update(
                status=record.get("status") or node["status"],
                latency_ms=record.get("latency_ms"),
                error=_error_text(record.get("error")),
                type=record.get("node_type") or node["type"],
            )
        if pending is not None:
            self.pending = {str(p["event_id"]): _question(p) for p in pending}
        self._settle()

    def graph(self, definition: dict[str, Any]) -> None:
        """Nodes and edges of the workflow definition, in declaration order, all pending."""
        for spec in definition.get("nodes") or []:
            node = self._node(spec["id"])
            node["type"] = spec.get("type", node["type"])
            node["title"] = spec.get("title") or spec["id"]
        self.edges = [
            {"source": e.get("source"), "target": e.get("target"), "port": e.get("port")}
            for e in definition.get("edges") or []
        ]
        self.name = definition.get("name") or self.name

    def apply(self, seq: int, event: str, data: dict[str, Any]) -> None:
        """One event of the run's stream."""
        self.last_event = max(self.last_event, seq)
        data = data or {}
        node_id = data.get("node_id")
        if event == ev.NODE_STARTED and node_id:
            node = self._node(node_id, data.get("node_title"))
            node.update(status="running", started=time.time(), error=None)
            node["type"] = data.get("node_type") or node["type"]
            self.status = "running"
        elif event == ev.NODE_FINISHED and node_id:
            node = self._node(node_id, data.get("node_title"))
            node["status"] = "succeeded"
            if node.get("started"):
                node["latency_ms"] = int((time.time() - node["started"]) * 1000)
            if data.get("error"):
                node["error"] = _error_text(data["error"])
        elif event == ev.NODE_SKIPPED and node_id:
            self._node(node_id, data.get("node_title"))["status"] = "skipped"
        elif event == ev.MESSAGE:
            node = self.nodes.get(node_id or "")
            if node and node["type"] == "end" and _is_json_object(data.get("content")):
                return  # the end node streams the outputs as JSON: they are shown as outputs
            content = data.get("content", "")
            if self.streaming is not None and self.streaming == node_id and self.messages:
                last = self.messages[-1]  # a streaming llm node's next piece (a new dict:
                self.messages[-1] = {**last, "content": last["content"] + content}  # traits)
            elif content or not data.get("node_is_finish", True):
                self.messages.append(
                    {
                        "node_id": node_id,
                        "node_title": data.get("node_title") or node_id,
                        "content": content,
                    }
                )
            self.streaming = None if data.get("node_is_finish", True) else node_id
        elif event == ev.INTERRUPT:
            event_id = str(data.get("event_id"))
            self.pending[event_id] = _question(data)
            if node_id and "/" not in str(data.get("node_title", "")):
                self._node(node_id)["status"] = "interrupted"
        elif event == ev.RESUMED:
            self.pending.pop(str(data.get("event_id")), None)
            if node_id in self.nodes and self.nodes[node_id]["status"] == "interrupted":
                self.nodes[node_id]["status"] = "running"
            self.status = "running"
        elif event == ev.INTERRUPT_EXPIRED:
            self.pending.pop(str(data.get("event_id")), None)
        elif event == ev.INTERRUPTED:
            self.status = "interrupted"
        elif event == ev.DONE:
            self.status = "succeeded"
            self.outputs = data.get("outputs")
        elif event == ev.FAILED:
            self.status = "failed"
            self.error = data.get("error")
            failing = (self.error or {}).get("node_id")
            if failing:
                node = self._node(failing)
                node["status"] = "failed"
                node["error"] = node.get("error") or (self.error or {}).get("msg")
        elif event == ev.CANCELED:
            self.status = "canceled"
            self.pending.clear()
        if self.finished:
            self._settle()

    def _settle(self) -> None:
        """A finished run has no node still "running" or "waiting": the ones it stopped are
        canceled, the ones it never reached are not run."""
        if not self.finished:
            return
        for node in self.nodes.values():
            if node["status"] in ("running", "interrupted"):
                node["status"] = "canceled"
            elif node["status"] == "pending":
                node["status"] = "not_run"

    def snapshot(self) -> dict[str, Any]:
        """The widget's synced traits."""
        return {
            "name": self.name,
            "status": self.status,
            "nodes": [{k: v for k, v in n.items() if k != "started"} for n in self.nodes.values()],
            "edges": list(self.edges),
            "messages": list(self.messages),
            "pending": list(self.pending.values()),
            "outputs": self.outputs,
            "error": self.error,
            "last_event": self.last_event,
        }

    def _node(self, node_id: str, title: str | None = None) -> dict[str, Any]:
        node = self.nodes.get(node_id)
        if node is None:
            node = self.nodes[node_id] = {
                "id": node_id,
                "title": title or node_id,
                "type": "",
                "status": "pending",
                "latency_ms": None,
                "error": None,
            }
        return node


def _question(data: dict[str, Any]) -> Question:
    return Question(
        {
            **data,
            "event_id": str(data.get("event_id")),
            "node_id": data.get("node_id"),
            "node_title": data.get("node_title") or data.get("node_id"),
            "type": data.get("type", "question"),
            "data": data.get("data") or {},
        }
    )


def _is_json_object(text: Any) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (TypeError, ValueError):
        return False


def _error_text(error: Any) -> str | None:
    if not error:
        return None
    if isinstance(error, dict):
        return str(error.get("msg") or error.get("message") or error)
    return str(error)
