"""A pytest plugin for testing your own workflows and bots with plain ``pytest``.

Installed with coze_lab (the ``pytest11`` entry point ``coze_lab``), so its fixtures are
there in every test session; nothing heavy is imported until a test asks for one:

- ``coze_model``: a scripted OpenAI-compatible model on a loopback port, the default
  model of the studio (``coze_model.reply("...")``, ``.tool_call("name", arg=1)``,
  ``.fail(503, "overloaded")``; with nothing scripted it is the deterministic demo model);
- ``coze_studio``: an isolated studio in this process (its own SQLite database in the
  test's temporary directory) that ``wf.run_local()``, ``cl.Bot`` and ``cl.connect()`` use;
  ``coze_studio.run(wf, **inputs)`` runs a workflow and returns a :class:`RunResult` to
  assert on (``run.node("summarize").output``, ``run.questions``, ``run.tools_called``).

Example (see docs/guides/testing.md and examples/test_my_workflow.py)::

    def test_summary(coze_studio, coze_model):
        coze_model.reply("A short summary.")
        run = coze_studio.run(my_workflow, doc="a long text")
        assert run.status == "success"
        assert run.node("summarize").output == "A short summary."
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from coze_lab.core.workflows.run_store import NodeRecord
    from coze_lab.notebook.in_process import InProcessHost, LocalRun
    from coze_lab.notebook.studio import Studio
    from coze_lab.services import Runtime
    from coze_lab.testing import ModelServer


class ScriptedModel:
    """The model the studio calls in a test: script its next replies, read what it was sent.

    Each scripted item answers one model call, in order; when the script is used up, the
    deterministic demo model answers (``[demo model] You said: ...``).
    """

    def __init__(self, server: ModelServer) -> None:
        self.server = server

    @property
    def url(self) -> str:
        """The OpenAI base URL of the model server."""
        return self.server.url

    def reply(self, *texts: str) -> ScriptedModel:
        """The next calls answer with these texts (one call each)."""
        from coze_lab.testing import TextReply

        self.server.script([TextReply(text) for text in texts])
        return self

    def tool_call(self, name: str, /, text: str = "", **arguments: Any) -> ScriptedModel:
        """The next call asks for the tool (plugin, workflow or client function) ``name``."""
        from coze_lab.testing import ScriptedToolCall, ToolCallsReply

        self.server.script([ToolCallsReply([ScriptedToolCall(name, arguments)], text=text)])
        return self

    def fail(self, status: int = 500, message: str = "the model failed") -> ScriptedModel:
        """The next call fails with an HTTP error (not retried by the client)."""
        from coze_lab.testing import ErrorReply

        self.server.script([ErrorReply(status, message)])
        return self

    def script(self, replies: Any) -> ScriptedModel:
        """Queue raw replies (``TextReply``, ``ToolCallsReply``, ``ErrorReply``, str, dict)."""
        self.server.script(replies)
        return self

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        return self.server.pending

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every chat-completion request body the model received, in order."""
        return self.server.requests

    @property
    def calls(self) -> int:
        """How many times the model was called."""
        return len(self.server.requests)

    @property
    def prompts(self) -> list[str]:
        """The last user message of every call (what each call asked)."""
        found = []
        for body in self.server.requests:
            users = [m for m in body.get("messages", []) if m.get("role") == "user"]
            found.append(_text(users[-1].get("content")) if users else "")
        return found

    @property
    def tools_called(self) -> list[str]:
        """The names of the tools the model called whose results came back to it, in order
        (each tool call the agent ran and answered)."""
        answered: dict[str, str] = {}
        for body in self.server.requests:
            messages = body.get("messages", [])
            names = {
                call.get("id"): call.get("function", {}).get("name", "")
                for m in messages
                if m.get("role") == "assistant"
                for call in m.get("tool_calls") or []
            }
            for m in messages:
                if m.get("role") == "tool" and m.get("tool_call_id") in names:
                    answered.setdefault(m["tool_call_id"], names[m["tool_call_id"]])
        return list(answered.values())


class RunResult:
    """A finished (or paused) workflow run, to assert on.

    ``status``, ``outputs``, ``error``, ``node(id)`` (a node's record with ``.output``),
    ``questions`` (what it asks a person), ``answer(text)`` to resume it and ``retry()``.
    """

    def __init__(self, local: LocalRun) -> None:
        self.local = local

    @property
    def id(self) -> int:
        return self.local.id

    @property
    def status(self) -> str:
        return self.local.status

    @property
    def outputs(self) -> dict[str, Any] | None:
        return self.local.outputs

    @property
    def error(self) -> dict[str, Any] | None:
        return self.local.error

    @property
    def nodes(self) -> dict[str, NodeView]:
        """Every node that ran, by node id."""
        return {record.node_id: NodeView(record) for record in self.local.nodes.values()}

    def node(self, node_id: str) -> NodeView:
        """The record of the node ``node_id`` (``KeyError`` naming the nodes that ran)."""
        nodes = self.nodes
        if node_id not in nodes:
            raise KeyError(f"node {node_id!r} did not run; these did: {sorted(nodes)}")
        return nodes[node_id]

    @property
    def trace(self) -> Any:
        """Tokens, cost, latency and attempts per node (``run.trace.to_pandas()``)."""
        return self.local.trace

    @property
    def questions(self) -> list[str]:
        """The questions the run waits on a person for (their text)."""
        return [str(q.data.get("question", q.data)) for q in self.local.pending]

    def answer(self, data: Any, question: int = 0) -> RunResult:
        """Answer a pending question (the first by default) and wait for the run again."""
        if not self.local.pending:
            raise AssertionError(f"run {self.id} asks nothing (status {self.status!r})")
        self.local.resume(self.local.pending[question].event_id, data)
        return self

    def retry(self, from_node: str | None = None, **changes: Any) -> RunResult:
        """Retry a failed run from a node (default: the failed one), see ``LocalRun.retry``."""
        return RunResult(self.local.retry(from_node, **changes))

    def __repr__(self) -> str:
        return f"RunResult(id={self.id}, status={self.status!r}, error={self.error!r})"


class NodeView:
    """One node's record: ``output`` (its one output, or the dict), ``outputs``, ``inputs``,
    ``status``, ``error``, ``attempts``, ``usage``."""

    def __init__(self, record: NodeRecord) -> None:
        self.record = record

    @property
    def output(self) -> Any:
        """The node's ``output`` field when it has one, else all its outputs."""
        outputs = self.record.outputs
        if isinstance(outputs, Mapping) and "output" in outputs:
            return outputs["output"]
        return outputs

    def __getattr__(self, name: str) -> Any:
        return getattr(self.record, name)

    def __repr__(self) -> str:
        return f"NodeView({self.record.node_id!r}, status={self.record.status!r})"


class StudioUnderTest:
    """An isolated studio in this process: its own database and data directory, the
    scripted model as its default model, and the notebook API (``cl.Bot``, ``cl.connect()``,
    ``wf.run_local()``) pointed at it for the test."""

    def __init__(self, host: InProcessHost, model: ScriptedModel) -> None:
        self.host = host
        self.model = model

    @property
    def runtime(self) -> Runtime:
        return self.host.runtime

    @property
    def studio(self) -> Studio:
        """The studio API client (what ``cl.connect()`` returns during the test)."""
        return self.host.studio

    def set_prices(self, input: float, output: float, model: str = "default") -> None:
        """Give the scripted model ``model`` (a registry id, ``default`` unless said) prices
        per one million input and output tokens, so runs report their cost."""
        import json

        from coze_lab.core.models import ModelRegistry

        spec = self.model.server.spec(model).to_dict()
        spec["prices"] = {"input": input, "output": output}
        path = Path(self.runtime.config.data_path) / "models.json"
        path.write_text(json.dumps({"default": model, "models": [spec]}))
        self.runtime._models = ModelRegistry.load(str(path))
        self.runtime.completer.registry = self.runtime._models  # what llm nodes call

    def run(self, workflow: Any, /, **inputs: Any) -> RunResult:
        """Run a ``cl.Workflow`` in-process until it finishes or asks a person."""
        return RunResult(self.host.run(workflow.validate(), inputs))


@pytest.fixture
def coze_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModel]:
    """A scripted local model server, the environment's default model (``OPENAI_*``)."""
    from coze_lab.testing import DEMO_MODEL, ModelServer

    with ModelServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "coze-lab-test")
        monkeypatch.setenv("COZE_LAB_DEFAULT_MODEL", DEMO_MODEL)
        yield ScriptedModel(server)


@pytest.fixture
def coze_studio(
    coze_model: ScriptedModel, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StudioUnderTest]:
    """An isolated in-process studio (SQLite in a temporary directory) using ``coze_model``."""
    from coze_lab.config import CozeLab
    from coze_lab.notebook import connect, in_process
    from coze_lab.services import Runtime
    from coze_lab.store import sqlite_url

    data = Path(tmp_path_factory.mktemp("coze_studio"))
    runtime = Runtime(
        CozeLab(data_dir=str(data / "data"), database_url=sqlite_url(data / "coze_lab.db"))
    )
    runtime.start()
    previous = (in_process._default, connect._current)
    host = in_process.use_runtime(runtime, "tester")
    try:
        yield StudioUnderTest(host, coze_model)
    finally:
        host.close()
        runtime.db.dispose()
        in_process._default, connect._current = previous


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)
