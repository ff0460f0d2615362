"""The in-process host: the server's services in this process, for ``wf.run_local()`` and
tests.

The engine runs on a background event loop thread, so the same calls work in a script, in
pytest and in a notebook cell (whose own loop is already running). ``host.studio`` serves
the studio API of the same runtime on a loopback port of that thread, so tests drive
``cl.Bot`` and ``cl.Plugin`` through the notebook's one transport, as a notebook does.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from coze_lab.config import CozeLab
from coze_lab.core.identity import UserInfo
from coze_lab.core.workflows.run_store import NodeRecord, RunInfo
from coze_lab.core.workflows.spec import WorkflowSpec
from coze_lab.notebook.questions import Question
from coze_lab.notebook.trace import RunTrace
from coze_lab.services import Runtime
from coze_lab.web import serialize

T = TypeVar("T")


class InProcessHost:
    """A runtime plus an event loop thread that owns its engine and sandbox pool."""

    def __init__(self, runtime: Runtime, user: str | None = None) -> None:
        self.runtime = runtime
        self.user: UserInfo = runtime.identity.ensure_user(user or runtime.config.local_user)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, daemon=True, name="coze-lab-local"
        )
        self._thread.start()
        self._studio: Any = None
        self._server: Any = None

    @property
    def studio(self) -> Any:
        """A studio client of this runtime, served over loopback HTTP (started on first use)."""
        if self._studio is None:
            from coze_lab.notebook.studio import Studio

            async def serve() -> str:
                from tornado.httpserver import HTTPServer
                from tornado.netutil import bind_sockets

                from coze_lab.server import make_app

                sockets = bind_sockets(0, "127.0.0.1")
                self._server = HTTPServer(make_app(self.runtime))
                self._server.add_sockets(sockets)
                self.runtime.ingest.start()  # knowledge documents are ingested here
                return f"http://127.0.0.1:{sockets[0].getsockname()[1]}/"

            url = self.call(serve())
            if not self.runtime.public_url:
                self.runtime.public_url = url
            _, token = self.runtime.tokens.create(self.user.id, "in-process studio")
            self._studio = Studio(url, token)
        return self._studio

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def run(
        self,
        spec: WorkflowSpec,
        inputs: dict[str, Any],
        *,
        workspace: bool = False,
        files: Sequence[str | Path] = (),
    ) -> LocalRun:
        """Run ``spec`` and wait until it stops; ``workspace``: in a workspace of its own,
        with ``files`` (local paths) copied to its ``input/``."""
        if files and not workspace:
            raise ValueError("files are copied to the run's workspace: add workspace=True")
        file_ids = [
            self.runtime.files.save(self.user.id, Path(f).name, Path(f).read_bytes()).id
            for f in files
        ]

        async def start_and_wait() -> RunInfo:
            runs = self.runtime.runs
            run_id = await runs.start(
                self.user.id,
                None,
                inputs,
                spec=spec,
                workspace=workspace,
                workspace_files=file_ids,
            )
            return await runs.wait(run_id)

        return LocalRun(self, self.call(start_and_wait()))

    def close(self) -> None:
        if self._studio is not None:
            from coze_lab.notebook import connect

            if connect._current is self._studio:
                connect._current = None
            self._studio.close()
            self._server.stop()
            self.call(self._server.close_all_connections())
        self.call(self.runtime.close())
        self.call(self._loop.shutdown_asyncgens())  # finish streams left half-read
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


_default: InProcessHost | None = None
_lock = threading.Lock()


def default_host() -> InProcessHost:
    """The process-wide host: the configured database (as the lab server uses it)."""
    global _default
    with _lock:
        if _default is None:
            runtime = Runtime(CozeLab())
            runtime.start()
            _default = InProcessHost(runtime)
        return _default


def use_runtime(runtime: Runtime, user: str | None = None) -> InProcessHost:
    """Serve ``runtime`` in this process and make it the notebook's server: ``run_local``
    uses it, and ``cl.connect()``'s current studio is its (tests, or a notebook with a
    database of its own)."""
    global _default
    from coze_lab.notebook import connect

    with _lock:
        _default = InProcessHost(runtime, user)
    connect._current = _default.studio
    return _default


@dataclass
class LocalRun:
    """A run started by ``run_local``: its status, outputs, pending questions and nodes."""

    host: InProcessHost
    info: RunInfo
    #: the questions it waits on, the same type as ``cl.runs.pending()`` gives
    pending: list[Question] = field(default_factory=list)

    def __post_init__(self) -> None:
        found = self.host.runtime.runs.pending(self.info.owner_id, self.info.id)
        self.pending = [Question(serialize.interrupt(info)) for info in found]

    @property
    def id(self) -> int:
        return self.info.id

    @property
    def status(self) -> str:
        return self.info.status

    @property
    def outputs(self) -> dict[str, Any] | None:
        return self.info.outputs

    @property
    def error(self) -> dict[str, Any] | None:
        return self.info.error

    @property
    def nodes(self) -> dict[str, NodeRecord]:
        return self.info.nodes

    def resume(self, event_id: int | str, data: Any) -> LocalRun:
        """Answer a pending question and wait until the run stops again."""

        async def answer() -> RunInfo:
            runs = self.host.runtime.runs
            resumed = await runs.resume(self.info.owner_id, int(event_id), data)
            return await runs.wait(resumed.run.id)

        self.info = self.host.call(answer())
        self.__post_init__()
        return self

    def retry(self, from_node: str | None = None, **changes: Any) -> LocalRun:
        """Retry this failed or canceled run from ``from_node`` (default: the node it failed
        on) as a new run that reuses the outputs of the nodes before it, and wait for it;
        keywords change that node (``code=fixed_function``, ``prompt=...``)."""
        from coze_lab.core.workflows.dsl import retry_changes

        if from_node is None and changes:
            from_node = (self.info.error or {}).get("node_id")
        node_changes = retry_changes(from_node, changes)

        async def again() -> RunInfo:
            runs = self.host.runtime.runs
            new_id = await runs.retry(
                self.info.owner_id, self.info.id, from_node=from_node, node_changes=node_changes
            )
            return await runs.wait(new_id)

        return LocalRun(self.host, self.host.call(again()))

    @property
    def trace(self) -> RunTrace:
        """The run's nodes as data: tokens, cost, latency and attempts per node
        (``run.trace.to_pandas()``)."""
        return RunTrace(self.id, [serialize.node_record(r) for r in self.info.nodes.values()])

    @property
    def workspace(self) -> Path | None:
        """The folder of the run's own workspace (``run_local(workspace=True)``), else None."""
        root = self.host.runtime.config.workspace_path / str(self.host.user.workspace_id)
        path = root / f"run-{self.info.root}"
        return path if path.is_dir() else None

    def activity(self) -> dict[str, Any]:
        """The run's timeline: nodes with inputs, outputs, durations and usage, questions,
        files written (``state``, ``items``, ``usage``)."""
        return serialize.timeline(self.host.runtime.activity.run(self.info.owner_id, self.id))

    @property
    def retry_of(self) -> int | None:
        """The run this one retries (None for a fresh run)."""
        return self.info.retry_of

    def __repr__(self) -> str:
        return f"LocalRun(id={self.id}, status={self.status!r}, pending={len(self.pending)})"
