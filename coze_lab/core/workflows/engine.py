"""The durable workflow engine.

A run's progress lives in the database, not in memory: every node's record is committed
before its successors are looked at, so a run picks up where it stopped after an
interrupt, a cancel-and-retry, or a killed process (LangGraph's checkpoint-writes idea,
with rows instead of blobs). A worker holds a lease on the runs it executes and renews it;
a run whose lease lapsed is recovered by any worker, re-running only the nodes that had
not committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import QUESTION_EXPIRED, CozeLabError, InvalidParameter, Unavailable
from coze_lab.core.ids import new_id
from coze_lab.core.net import OutboundPolicy, guarded_request
from coze_lab.core.sandbox import Mount, Runner
from coze_lab.core.workflows import events as ev
from coze_lab.core.workflows.nodes import NODE_TYPES, NodeError, NodeKind, NodeResult
from coze_lab.core.workflows.nodes.base import ChildOutcome
from coze_lab.core.workflows.nodes.composite import CONTROL_KEY, LOOP_CONTROL
from coze_lab.core.workflows.nodes.llm import CONVERSATION_HISTORY
from coze_lab.core.workflows.run_store import (
    FINISHED,
    STEP_WAKE_EVERY_S,
    InterruptInfo,
    InterruptWrite,
    NodeRecord,
    NodeWrite,
    RunInfo,
    RunStore,
)
from coze_lab.core.workflows.spec import NodeSpec, WorkflowSpec
from coze_lab.core.workflows.template import MissingValue, bind_sql, render
from coze_lab.core.workflows.validate import validate
from coze_lab.store import Database
from coze_lab.store.group import GroupCommit
from coze_lab.store.signals import Signals

log = logging.getLogger("coze_lab.workflows")

_PY_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "array": list,
}


#: parsed definitions kept for the most recent runs
SPEC_CACHE = 1024
#: a run whose nodes never wait gives the event loop a turn at least this often (seconds)
YIELD_EVERY_S = 0.005

T = TypeVar("T")
#: an event with its number in the run: (seq, event, data)
_Numbered = tuple[int, str, dict[str, Any]]
TERMINAL_EVENTS = ev.TERMINAL  # kept for callers of the old name


class Completer(Protocol):
    async def __call__(
        self, model: str, messages: list[dict[str, Any]], **params: Any
    ) -> tuple[str, dict[str, int]]: ...


class NodeFailed(Exception):
    def __init__(self, node: NodeSpec, message: str) -> None:
        super().__init__(f"node '{node.id}' failed: {message}")
        self.node = node
        self.message = message


@dataclass(frozen=True)
class _Outcome:
    result: NodeResult
    error: str | None
    tries: int
    inputs: dict[str, Any]
    started_at: Any


class _Graph:
    """Edges into and out of every node, for the scheduler."""

    def __init__(self, spec: WorkflowSpec) -> None:
        nodes = {n.id: n for n in spec.nodes}
        self.incoming: dict[str, list[Any]] = {n.id: [] for n in spec.nodes}
        self.children: dict[str, list[NodeSpec]] = {n.id: [] for n in spec.nodes}
        for edge in spec.edges:
            self.incoming[edge.target].append(edge)
            self.children[edge.source].append(nodes[edge.target])


@dataclass(frozen=True)
class EngineSettings:
    lease_s: float = 30.0
    interrupt_ttl: timedelta = timedelta(days=7)
    recover_every_s: float = 10.0


@dataclass(frozen=True)
class RunWorkspace:
    """The session workspace a run's code nodes see: ``root`` holds ``input/`` (mounted
    read-only), ``scratchpad/`` and ``output/`` (writable). ``record(paths, run_id, node_id)``
    hears of the files a node wrote (the file history)."""

    root: Path
    record: Callable[[list[str], int, str], None] | None = None

    def mounts(self) -> dict[str, Mount]:
        return {
            "input": Mount(self.root / "input"),
            "scratchpad": Mount(self.root / "scratchpad", read_only=False),
            "output": Mount(self.root / "output", read_only=False),
        }


#: workspaces kept for this many runs at most (oldest forgotten first)
MAX_RUN_WORKSPACES = 10_000


class _Context:
    """What a node sees of the engine while it runs (``NodeContext``)."""

    def __init__(self, engine: Engine, run: RunInfo, node: NodeSpec, resume_data: Any) -> None:
        self._engine = engine
        self._run = run
        self._node = node
        self.run_id = run.id
        self.node_key = node.id
        self.run_inputs = run.inputs
        self.resume_data = resume_data

    async def run_code(
        self,
        code: str,
        params: dict[str, Any],
        *,
        language: str,
        entry: str | None,
        timeout: float | None,
    ) -> dict[str, Any]:
        runner = self._engine.code_runner()
        workspace = await self._engine.workspace_of(self._run)
        extra: dict[str, Any] = {}
        if workspace is not None and language == "python":
            extra["mounts"] = workspace.mounts()
        # a warm sandbox interpreter never serves two owners (see Engine.sandbox_owner)
        result = await runner.run(
            code,
            params,
            language=language,
            entry=entry,
            timeout=timeout,
            owner=self._engine.sandbox_owner(self._run),
            **extra,
        )
        written = (result.meta or {}).get("files_written") or []
        if workspace is not None and workspace.record is not None and written:
            record = workspace.record
            await asyncio.to_thread(record, list(written), self._run.id, self._node.id)
        if result.error is not None:
            raise NodeError(
                f"{result.error.type}: {result.error.message}{_hint(result.error.type, timeout)}"
            )
        return dict(result.output or {})

    async def complete(
        self, model: str, messages: list[dict[str, Any]], *, stream: bool = False, **params: Any
    ) -> tuple[str, dict[str, int]]:
        """One model call; with ``stream`` its answer goes out as partial ``message`` events
        (``node_is_finish: false``) while it arrives. Pieces that arrive while an event is
        being written go out together in the next one (one write in flight per node)."""
        completer = self._engine.completer
        if completer is None:
            # imported here: the models package loads the openai SDK, which the engine
            # otherwise never needs
            from coze_lab.core.models.errors import NO_MODEL_CONFIGURED

            raise Unavailable(NO_MODEL_CONFIGURED)
        streamer = getattr(completer, "stream", None) if stream else None
        if streamer is None:
            text, usage = await completer(model, messages, **params)
            if stream and text:
                await self.emit(text)
            return text, usage
        pending: list[str] = []
        writer: asyncio.Task[None] | None = None

        async def flush() -> None:
            while pending:
                piece = "".join(pending)
                pending.clear()
                await self.emit(piece)

        def on_delta(piece: str) -> None:
            nonlocal writer
            pending.append(piece)
            if writer is None or writer.done():
                writer = asyncio.get_running_loop().create_task(flush())

        try:
            text, usage = await streamer(model, messages, on_delta, **params)
        finally:
            if writer is not None:
                await writer
        await flush()
        return text, usage

    def conversation_history(self) -> list[dict[str, Any]]:
        """The conversation's earlier messages (``[{role, content}]``, oldest first) when
        the run was started by a chat in a conversation (a chat-flow), else none."""
        run = self._run
        inputs = (
            run.inputs
            if run.root == run.id
            else self._engine.store.get(run.root, nodes=False).inputs
        )
        history = (inputs or {}).get(CONVERSATION_HISTORY)
        return list(history) if isinstance(history, list) else []

    async def run_child(self, spec: WorkflowSpec, inputs: dict[str, Any], key: str) -> ChildOutcome:
        """Run ``spec`` as a child of this run under ``key``, or pick up the one there.

        A finished child is never run again (loop iterations are durable); a child waiting
        for a person reports its questions; a child that was interrupted mid-way (a crash,
        an answer just given) is continued here, inside the root run's task.
        """
        engine, store = self._engine, self._engine.store
        child_key = f"{self._node.id}#{key}"
        child = store.child(self._run.id, child_key)
        if child is None:
            validate(spec)
            values = check_inputs(spec, inputs)
            definition = spec.to_dict()
            child_id = store.create(
                self._run.owner_id,
                definition,
                values,
                lease_owner=engine.worker,
                lease_s=engine.settings.lease_s,
                parent=(self._run.id, child_key, self._run.root),
                bot_context=self._run.bot_context,
            )
            engine._keep_spec(child_id, spec)
            child = store.get(child_id)
        elif child.status == "running":
            store.claim(child.id, engine.worker, engine.settings.lease_s)
        if child.status == "running":
            child = await engine._execute(child.id, child) or store.get(child.id)
        if child.status == "succeeded":
            return ChildOutcome("succeeded", outputs=child.outputs or {})
        if child.status == "interrupted":
            return ChildOutcome("interrupted", waiting=store.pending(child.owner_id, child.id))
        return ChildOutcome(child.status, error=(child.error or {}).get("msg", child.status))

    async def http(self, method: str, url: str, **request: Any) -> Any:
        """An outbound call under the engine's SSRF policy."""
        return await guarded_request(self._engine.http_policy, method, url, **request)

    @property
    def tables(self) -> Any:
        """The user tables (database nodes)."""
        if self._engine.tables is None:
            raise Unavailable("user tables are not configured in this engine")
        return self._engine.tables

    @property
    def knowledge(self) -> Any:
        """The knowledge bases (knowledge nodes)."""
        if self._engine.knowledge is None:
            raise Unavailable("knowledge bases are not configured in this engine")
        return self._engine.knowledge

    @property
    def scene(self) -> str:
        """``online`` for a run of a published version, else ``draft`` (debug runs)."""
        return self._node.config.get("scene") or (
            "online" if self._run.version is not None else "draft"
        )

    @property
    def owner_id(self) -> int:
        return self._run.owner_id

    async def bot_variables(
        self, read: Sequence[str] = (), write: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """Write ``write`` (as the bot: ``agent_can_set``), then read ``read``, of the run's
        bot for its end user; a run without a bot is a node error."""
        variables, context = self._engine.variables, self._run.bot_context
        if variables is None:
            raise Unavailable("bot variables are not configured in this engine")
        if not context:
            raise NodeError(
                "this run has no bot: bot variables are read and written in runs a chat with"
                " the bot starts, or that /v1/workflow/run starts with bot_id"
            )
        owner = self._run.owner_id

        def work() -> dict[str, str]:
            scope, config = variables.scope(
                owner, int(context["bot_id"]), context["connector_id"], context["connector_uid"]
            )
            if write:
                variables.update(scope, config, write, by="agent")
            return {v.keyword: v.value for v in variables.retrieve(scope, config, read)}

        try:
            return await asyncio.to_thread(work)
        except CozeLabError as exc:  # the bot changed or went away since the run started
            raise NodeError(exc.msg) from exc

    async def call_plugin(self, plugin_id: int, tool: str, arguments: dict[str, Any]) -> Any:
        """A plugin tool called as the run's owner: the online version for a published run,
        else the draft (``scene``/``version`` in the node's config decide when set)."""
        if self._engine.plugins is None:
            raise Unavailable("plugins are not configured in this engine")
        config = self._node.config
        scene = config.get("scene") or ("online" if self._run.version is not None else "draft")
        return await self._engine.plugins().call_tool_by_name(
            self._run.owner_id,
            plugin_id,
            tool,
            arguments,
            scene=scene,
            version=config.get("version"),
            trace={"run_id": str(self._run.id), "node_id": self._node.id},
        )

    async def call_mcp(self, server_id: int, tool: str, arguments: dict[str, Any]) -> Any:
        """A tool of an MCP server called as the run's owner (an ``McpResult``)."""
        if self._engine.mcp is None:
            raise Unavailable("MCP is not configured in this engine")
        return await self._engine.mcp().call(self._run.owner_id, server_id, tool, arguments)

    async def emit(self, content: str) -> None:
        await self._engine._event(
            self._run.id,
            ev.MESSAGE,
            {
                "node_id": self._node.id,
                "node_title": self._node.title,
                "content": content,
                "node_is_finish": False,
            },
        )


class Engine:
    """Runs workflow definitions durably; one per process, shared by every front door.

    Example:
        >>> engine = Engine(db, code_runner=lambda: pool)               # doctest: +SKIP
        >>> run_id = await engine.start(owner_id, spec, {"doc": "..."})  # doctest: +SKIP
        >>> (await engine.wait(run_id)).status                          # doctest: +SKIP
        'interrupted'
    """

    def __init__(
        self,
        db: Database,
        *,
        code_runner: Callable[[], Runner],
        completer: Completer | None = None,
        http_policy: OutboundPolicy | None = None,
        plugins: Callable[[], Any] | None = None,
        mcp: Callable[[], Any] | None = None,
        tables: Any = None,
        variables: Any = None,
        knowledge: Any = None,
        clock: Clock = utcnow,
        settings: EngineSettings | None = None,
        signals: Signals | None = None,
        find_workspace: Callable[[int, int], RunWorkspace | None] | None = None,
    ) -> None:
        self.store = RunStore(db, clock=clock)
        #: (owner id, root run id) → the run's own workspace found on disk, for a run that
        #: asked for one and continues in a process that did not start it
        self.find_workspace = find_workspace
        #: wake-ups between replicas (PostgreSQL LISTEN/NOTIFY): run events, cancels
        self.signals = signals or Signals(db)
        self.store.signals = self.signals
        self.signals.on("cancel-run", self._canceled_elsewhere)
        self.signals.on_reconnect(self._cancels_missed)
        self.code_runner = code_runner
        self.completer = completer
        self.http_policy = http_policy or OutboundPolicy()
        self.plugins = plugins
        self.mcp = mcp
        self.tables = tables
        #: the VariableService of bot variables (variable and assign nodes)
        self.variables = variables
        self.knowledge = knowledge
        self.clock = clock
        self.settings = settings or EngineSettings()
        self.worker = f"w-{secrets.token_hex(6)}"
        self._tasks: dict[int, asyncio.Task[RunInfo | None]] = {}
        #: trailing wake-ups of runs whose last step commits woke no other replica
        self._trailing: dict[int, asyncio.Task[None]] = {}
        self._unwoken: dict[int, float] = {}
        self._seq: dict[int, int] = {}
        self._listeners: dict[int, list[asyncio.Queue[tuple[int, str, dict[str, Any]]]]] = {}
        self._recovery: asyncio.Task[None] | None = None
        #: root run id → the session workspace its code nodes see (kept in memory: a run a
        #: chat started and another replica recovers runs without it; a run's own
        #: workspace is found again on disk, see ``find_workspace``)
        self.run_workspaces: OrderedDict[int, RunWorkspace] = OrderedDict()
        #: run id → its parsed definition: a run's spec is parsed once, not per step
        self._specs: dict[int, WorkflowSpec] = {}
        # A server database commits each step with round trips and a WAL flush: done on
        # the event loop, one commit is in flight and every run waits on every other's.
        # Off the loop, one thread commits the steps of all runs waiting together (group
        # commit). SQLite has one writer and no round trip, so its commits stay on the loop.
        self._writer = None if db.dialect == "sqlite" else GroupCommit(db)
        #: root run id → the sandbox owner of its code nodes (``sandbox_owner``)
        self._owners: dict[int, str] = {}
        self._commit_locks: dict[int, asyncio.Lock] = {}
        #: run id → its last step (node records, numbered events), left by ``_drive`` for
        #: the transaction that records the run's end
        self._last_step: dict[int, tuple[list[NodeWrite], list[_Numbered]]] = {}

    def sandbox_owner(self, run: RunInfo) -> str:
        """Whose warm sandbox interpreter a run's code nodes use: the user who runs it, and
        the team space of the workflow (of its root run) when it is a team workflow. Code a
        teammate wrote runs in the runner's interpreter for that space, never in the one of
        the runner's own workflows, so state it leaves behind where the checks do not look
        (a cache inside a module) cannot reach the runner's other runs."""
        key = self._owners.get(run.root)
        if key is None:
            root = run if run.root == run.id else self.store.get(run.root, nodes=False)
            space = self.store.team_space(root.workflow_id) if root.workflow_id else None
            key = f"user:{run.owner_id}" + (f"/space:{space}" if space is not None else "")
            if len(self._owners) >= 10_000:  # runs come and go: forget the old ones
                self._owners.clear()
            self._owners[run.root] = key
        return key

    async def workspace_of(self, run: RunInfo) -> RunWorkspace | None:
        """The workspace a run's code nodes see: the one it started with, else (a run that
        continues here after a restart or on another replica) its own one on disk."""
        workspace = self.run_workspaces.get(run.root)
        if workspace is None and self.find_workspace is not None:
            workspace = await asyncio.to_thread(self.find_workspace, run.owner_id, run.root)
            if workspace is not None:
                self.run_workspaces[run.root] = workspace
        return workspace

    # ---- public operations --------------------------------------------------------------
    async def start(
        self,
        owner_id: int,
        spec: WorkflowSpec,
        inputs: dict[str, Any],
        *,
        workflow_id: int | None = None,
        version: int | None = None,
        ignore_undeclared: bool = False,
        retry_of: int | None = None,
        seed: list[NodeWrite] | None = None,
        notes: list[dict[str, Any]] | None = None,
        workspace: RunWorkspace | Callable[[int], RunWorkspace | None] | None = None,
        bot_context: dict[str, str] | None = None,
        history: list[dict[str, Any]] | None = None,
    ) -> int:
        """Create a run and execute it in the background; return its id (execute_id).

        ``workspace`` is mounted into the run's code nodes; a callable makes it from the new
        run's id (a run's own workspace, ``run-<id>/``).

        Inputs the start node does not declare are refused (a typo is caught), or with
        ``ignore_undeclared`` (the Coze API, as Coze does) dropped with a ``note`` event
        in the run's trace naming them. A retry (``retry_of``) starts with the node records
        ``seed`` already written: those nodes do not run again, their outputs are reused.
        ``bot_context`` ({bot_id, connector_id, connector_uid}) is whose variables its
        variable and assign nodes read and write.
        ``history`` (a chat-flow's conversation, ``[{role, content}]``) is kept with the
        run's inputs as ``CONVERSATION_HISTORY`` for llm nodes with ``chat_history``, also
        when the start node does not declare it.
        """
        validate(spec)
        notes = list(notes or [])
        seed = list(seed or [])
        if ignore_undeclared and isinstance(inputs, dict):
            declared = sorted(i.name for i in spec.inputs)
            ignored = sorted(set(inputs) - set(declared))
            inputs = {k: v for k, v in inputs.items() if k in declared}
            if ignored:
                notes.append(
                    {
                        "msg": f"ignored undeclared parameters {ignored}; "
                        f"the start node declares {declared}",
                        "ignored_parameters": ignored,
                    }
                )
        values = check_inputs(spec, inputs)
        if history is not None and CONVERSATION_HISTORY not in values:
            values[CONVERSATION_HISTORY] = history
        definition = spec.to_dict()
        # the run's first step (the nodes that can start, their started events) is
        # written with the run: one transaction instead of two
        records = {w.node_key: w.record() for w in seed}
        first: list[NodeSpec] | None = None
        writes: list[NodeWrite] = []
        numbered: list[_Numbered] = []
        if _control(spec.nodes, records) is None:
            first, writes, events = self._unlocked(list(spec.nodes), records, _Graph(spec), {})
            numbered = [(len(notes) + n, name, data) for n, (name, data) in enumerate(events, 1)]
        run_id = await self._write(
            self.store.create,
            owner_id,
            definition,
            values,
            workflow_id=workflow_id,
            version=version,
            lease_owner=self.worker,
            lease_s=self.settings.lease_s,
            notes=notes,
            retry_of=retry_of,
            seed=seed,
            bot_context=bot_context,
            first_step=(writes, numbered),
        )
        self._keep_spec(run_id, spec)
        if callable(workspace):
            workspace = await asyncio.to_thread(workspace, run_id)
        if workspace is not None:
            self.run_workspaces[run_id] = workspace
            while len(self.run_workspaces) > MAX_RUN_WORKSPACES:
                self.run_workspaces.popitem(last=False)
        now = self.clock()
        self._launch(
            run_id,
            RunInfo(
                id=run_id,
                owner_id=owner_id,
                workflow_id=workflow_id,
                version=version,
                definition=definition,
                status="running",
                inputs=values,
                outputs=None,
                error=None,
                usage=None,
                created_at=now,
                updated_at=now,
                finished_at=None,
                root_run_id=run_id,
                retry_of=retry_of,
                bot_context=bot_context,
                nodes=records,
            ),
            last_seq=len(notes) + len(numbered),
            first=first,
        )
        return run_id

    async def resume(
        self,
        owner_id: int,
        event_id: int | str,
        resume_data: Any,
        *,
        pending: InterruptInfo | None = None,
        run: RunInfo | None = None,
    ) -> InterruptInfo:
        """Answer a pending interrupt (once; a second answer is a Conflict) and continue.

        ``pending`` (and ``run``, its run) skip reading what the caller has read already.
        """
        if pending is None:
            pending = self.store.interrupt(event_id, owner_id)
        if run is None or run.id != pending.run_id:
            run = (
                None
                if pending.run_id in self._specs
                else self.store.get(pending.run_id, owner_id, nodes=False)
            )
        spec = self._specs[pending.run_id] if run is None else self.spec_of(run)
        node = spec.node(pending.node_id)
        NODE_TYPES[node.type].check_resume(node, resume_data)
        info = self.store.resolve(event_id, owner_id, resume_data)
        # the root run drives the runs it started; a root still executing here picks the
        # answer up itself before it pauses
        root = info.root_run_id
        if self._continue(root):
            await self._event(
                root, ev.RESUMED, {"event_id": str(event_id), "node_id": info.node_id}
            )
        return info

    def _continue(self, root: int) -> bool:
        """Drive the root run here unless it is executing here or elsewhere already."""
        if root in self._tasks or not self.store.claim(root, self.worker, self.settings.lease_s):
            return False
        self._launch(root)
        return True

    async def cancel(self, owner_id: int, run_id: int) -> bool:
        """Stop a run for real: its status becomes canceled and its task is cancelled."""
        canceled = self.store.cancel(run_id, owner_id)
        task = self._tasks.get(run_id)
        if task is not None:
            if not task.done():
                log.info("run %s canceled", run_id)
            task.cancel()
        if canceled:
            await self._event(run_id, ev.CANCELED, {})
        return canceled

    def _canceled_elsewhere(self, run_id: str) -> None:
        """A cancel committed by any replica stops the run here at once."""
        task = self._tasks.get(int(run_id))
        if task is not None and not task.done():
            log.info("run %s canceled (signal)", run_id)
            task.cancel()

    def _cancels_missed(self) -> None:
        """Stop the runs here whose cancel was sent while the listener was down."""
        running = [run_id for run_id, task in self._tasks.items() if not task.done()]
        for run_id in self.store.canceled(running):
            self._canceled_elsewhere(str(run_id))

    async def wait(self, run_id: int) -> RunInfo:
        """Wait for the run's current execution to stop (finished or interrupted)."""
        task = self._tasks.get(run_id)
        if task is not None:
            try:
                final = await asyncio.shield(task)
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise
            else:
                if final is not None:
                    return final
        return self.store.get(run_id)

    async def events(
        self, run_id: int, after: int = 0
    ) -> AsyncIterator[tuple[int, str, dict[str, Any]]]:
        """Every stored event after ``after``, then new ones until the run stops or pauses.

        The database is the source of truth (a reconnecting client replays from its last id);
        the in-process queue only wakes the reader early, and a run executing on another
        replica wakes it with a PostgreSQL NOTIFY (elsewhere it is followed by polling).
        """
        self.signals.bind()
        wake: asyncio.Queue[tuple[int, str, dict[str, Any]]] = asyncio.Queue()
        self._listeners.setdefault(run_id, []).append(wake)
        last = after
        try:
            with self.signals.waiting(f"run:{run_id}") as elsewhere:
                while True:
                    for item in self.store.events(run_id, last):
                        last = item[0]
                        yield item
                        if item[1] in ev.TERMINAL and not self._resumed_since(run_id, item):
                            return
                    if run_id in self._tasks:
                        with contextlib.suppress(asyncio.TimeoutError):
                            await asyncio.wait_for(wake.get(), timeout=1.0)
                        while not wake.empty():
                            wake.get_nowait()
                        continue
                    if self.store.get(run_id, nodes=False).status != "running":
                        for item in self.store.events(run_id, last):
                            yield item
                        return
                    if not self.signals.shared:  # executing in another process: poll
                        await asyncio.sleep(0.1)
                        continue
                    with contextlib.suppress(asyncio.TimeoutError):  # woken by its commits
                        await asyncio.wait_for(elsewhere.wait(), timeout=5.0)
                    elsewhere.clear()
        finally:
            self._listeners[run_id].remove(wake)
            if not self._listeners[run_id]:
                del self._listeners[run_id]

    def _resumed_since(self, run_id: int, item: tuple[int, str, dict[str, Any]]) -> bool:
        """A pause that was answered already: a replay goes on to what followed it."""
        if item[1] != ev.INTERRUPTED:
            return False
        status = self.store.get(run_id, nodes=False).status
        return status == "running" or bool(self.store.events(run_id, item[0]))

    async def recover(self) -> list[int]:
        """Take over runs whose worker died; settle questions that expired unanswered."""
        for expired in self.store.expire_due():
            await self._expired(expired)
        taken = []
        for run_id in self.store.stale_runs():
            if run_id not in self._tasks and self.store.claim(
                run_id, self.worker, self.settings.lease_s
            ):
                log.info("recovering run %s", run_id)
                self._launch(run_id)
                taken.append(run_id)
        return taken

    async def _expired(self, info: InterruptInfo) -> None:
        node = self.spec_of(self.store.get(info.run_id, nodes=False)).node(info.node_id)
        await self._event(
            info.root_run_id,
            ev.INTERRUPT_EXPIRED,
            {"event_id": str(info.event_id), "node_id": info.node_id},
        )
        if node.config.get("on_timeout") == "branch":
            self.store.take_timeout_branch(info.event_id)
            root = info.root_run_id
            self._continue(root)
        elif self.store.fail_expired(info):
            await self._event(
                info.root_run_id,
                ev.FAILED,
                {
                    "error": {
                        "code": QUESTION_EXPIRED,
                        "msg": f"question on node '{info.node_id}' expired unanswered",
                    }
                },
            )

    def start_recovery_loop(self) -> None:
        async def loop() -> None:
            while True:
                try:
                    await self.recover()
                except Exception:  # keep recovering after a transient database error
                    log.exception("workflow recovery failed")
                await asyncio.sleep(self.settings.recover_every_s)

        if self._recovery is None:
            self._recovery = asyncio.get_running_loop().create_task(loop())

    async def close(self) -> None:
        tasks = [
            t
            for t in [self._recovery, *self._tasks.values(), *self._trailing.values()]
            if t is not None
        ]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._writer is not None:
            self._writer.close()

    async def _write(self, write: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a store write: group-committed on a server database, inline on SQLite."""
        if self._writer is None:
            return write(*args, **kwargs)
        return await self._writer(write, *args, **kwargs)

    def spec_of(self, run: RunInfo) -> WorkflowSpec:
        """The run's parsed definition (parsed once per run and process)."""
        spec = self._specs.get(run.id)
        if spec is None:
            spec = WorkflowSpec.from_dict(run.definition)
            self._keep_spec(run.id, spec)
        return spec

    def _keep_spec(self, run_id: int, spec: WorkflowSpec) -> None:
        if len(self._specs) >= SPEC_CACHE:
            self._specs.pop(next(iter(self._specs)))
        self._specs[run_id] = spec

    # ---- execution ----------------------------------------------------------------------
    def _launch(
        self,
        run_id: int,
        run: RunInfo | None = None,
        *,
        last_seq: int | None = None,
        first: list[NodeSpec] | None = None,
    ) -> None:
        """Execute the run in the background; ``last_seq``: the newest event a fresh run
        was created with (so its numbering starts without a read); ``first``: the nodes
        its first step launches (their started events were written with the run)."""
        task = asyncio.get_running_loop().create_task(self._execute(run_id, run, last_seq, first))
        self._tasks[run_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(run_id, None))

    async def _execute(
        self,
        run_id: int,
        run: RunInfo | None = None,
        last_seq: int | None = None,
        first: list[NodeSpec] | None = None,
    ) -> RunInfo | None:
        """Drive the run until it stops; return its final state (None: not ours to finish).
        ``first``: the nodes a fresh run's first step launches, committed with the run."""
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(run_id))
        if last_seq is None:
            self._seq.pop(run_id, None)  # foreign events may have been added since last time
        else:
            self._seq[run_id] = last_seq
        try:
            while True:
                run = run or self.store.get(run_id)
                records = dict(run.nodes)
                status, outputs, error = await self._outcome(run, records, first)
                first = None
                # the run's last step, committed with its end (one transaction, not two)
                writes, numbered = self._last_step.pop(run_id, ([], []))
                usage = _total_usage(records.values())
                event = self._terminal_event(run, status, outputs, error, usage)
                when = await self._write(
                    self.store.finish,
                    run_id,
                    self.worker,
                    status,
                    outputs=outputs,
                    error=error,
                    usage=usage,
                    event=event,
                    step=(writes, numbered),
                )
                self._notify(run_id, numbered)
                if when is not None:
                    self._notify(run_id, [event])
                    return replace(
                        run,
                        status=status,
                        outputs=outputs,
                        error=error,
                        usage=usage,
                        updated_at=when,
                        nodes=records,
                        finished_at=when if status in FINISHED else None,
                    )
                if status != "interrupted":  # canceled or taken over meanwhile
                    return None
                run = None  # an answer arrived meanwhile: reload and drive on
        finally:
            heartbeat.cancel()
            self._seq.pop(run_id, None)
            self._commit_locks.pop(run_id, None)
            self._last_step.pop(run_id, None)

    def _terminal_event(
        self,
        run: RunInfo,
        status: str,
        outputs: dict[str, Any] | None,
        error: dict[str, Any] | None,
        usage: dict[str, Any] | None,
    ) -> tuple[int, str, dict[str, Any]]:
        seq = self._next_seq(run.id)
        if status == "succeeded":
            return seq, ev.DONE, {"outputs": outputs, "usage": usage}
        if status == "failed":
            return seq, ev.FAILED, {"error": error}
        pending = [str(p.event_id) for p in self.store.pending(run.owner_id, run.id)]
        return seq, ev.INTERRUPTED, {"pending": pending}

    async def _outcome(
        self, run: RunInfo, records: dict[str, NodeRecord], first: list[NodeSpec] | None = None
    ) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
        try:
            return await self._drive(run, self.spec_of(run), records, first)
        except NodeFailed as failure:
            return "failed", None, {"code": 5100, "msg": str(failure), "node_id": failure.node.id}
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:  # an engine bug must still end the run visibly
            log.exception("run %s crashed", run.id)
            return "failed", None, {"code": 5000, "msg": f"engine error: {exc}"}

    async def _heartbeat(self, run_id: int) -> None:
        while True:
            await asyncio.sleep(self.settings.lease_s / 3)
            status = self.store.renew(run_id, self.worker, self.settings.lease_s)
            if status != "running":  # canceled elsewhere, or the lease was taken over
                task = self._tasks.get(run_id)
                if task is not None:
                    task.cancel()
                return

    async def _drive(
        self,
        run: RunInfo,
        spec: WorkflowSpec,
        records: dict[str, NodeRecord],
        first: list[NodeSpec] | None = None,
    ) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
        """Execute until nothing can run; ``records`` (node id → record) is kept current.

        ``first``: the nodes to launch, their started events committed already (a fresh
        run's first step, written with the run). The last step, when it leaves nothing
        to run and asks no question, is left in ``_last_step`` for the run's end to commit.
        """
        values: dict[str, dict[str, Any]] = {
            key: rec.outputs or {} for key, rec in records.items() if rec.status == "succeeded"
        }
        graph = _Graph(spec)
        running: dict[asyncio.Task[_Outcome], NodeSpec] = {}
        control = _control(spec.nodes, records)
        if control is not None:  # a loop body that reached break or continue before
            return "succeeded", {CONTROL_KEY: control}, None
        try:
            if first is None:
                # nodes the first step unlocks start after one commit of their started events
                launch, writes, events = self._unlocked(list(spec.nodes), records, graph, running)
                await self._commit(run.id, writes, events)
            else:
                launch = first
            inline = self._start_tasks(run, launch, values, records, running)
            yielded = time.monotonic()
            while running or inline is not None:
                if inline is not None:
                    # the only node that can run: awaited here, no task (a chain's steps)
                    done = [
                        (inline, await self._run_node(run, inline, values, records.get(inline.id)))
                    ]
                    inline = None
                else:
                    # NodeFailed propagates from result(): the run fails
                    done = [(running.pop(t), t.result()) for t in await _first_done(running)]
                writes, events, interrupts = [], [], []
                finished: list[NodeSpec] = []
                for node, outcome in done:
                    finished.append(node)
                    write, node_events, pending = self._finished(
                        run, node, outcome, records.get(node.id)
                    )
                    writes.append(write)
                    events.extend(node_events)
                    interrupts.extend([pending] if pending else [])
                    records[node.id] = write.record()
                    for name, data in node_events:
                        if name == ev.MESSAGE:  # the run's usage so far, as Coze reports it
                            data["usage"] = _total_usage(records.values())
                    if write.status == "succeeded":
                        values[node.id] = write.outputs or {}
                successors = [c for t in finished for c in graph.children[t.id]]
                launch, more_writes, more_events = self._unlocked(
                    successors, records, graph, running
                )
                writes += more_writes
                events += more_events
                control = _control(finished, records)
                if (
                    not launch
                    and not running
                    and not interrupts
                    and not any(w.status == "interrupted" for w in writes)
                ):
                    # nothing runs after it: it commits with the run's end (``_execute``);
                    # a step with a question commits first, the end lists it as pending
                    self._last_step[run.id] = (
                        writes,
                        [(self._next_seq(run.id), name, data) for name, data in events],
                    )
                    if control is not None:
                        return "succeeded", {CONTROL_KEY: control}, None
                    break
                # the finished nodes' records commit before any successor starts
                await self._commit(run.id, writes, events, interrupts)
                if control is not None:  # the body's iteration ends here; the rest is dropped
                    return "succeeded", {CONTROL_KEY: control}, None
                inline = self._start_tasks(run, launch, values, records, running)
                if inline is not None and time.monotonic() - yielded >= YIELD_EVERY_S:
                    # nodes that never wait (text, code on a warm path...) would otherwise
                    # keep the loop to themselves for a whole run
                    await asyncio.sleep(0)
                    yielded = time.monotonic()
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)
        if any(r.status == "interrupted" for r in records.values()):
            return "interrupted", None, None
        end = next(n for n in spec.nodes if n.type == "end")
        if records.get(end.id) is None or records[end.id].status != "succeeded":
            return "failed", None, {"code": 5101, "msg": "the end node was not reached"}
        return "succeeded", values[end.id], None

    def _unlocked(
        self,
        candidates: list[NodeSpec],
        records: dict[str, NodeRecord],
        graph: _Graph,
        running: dict[Any, NodeSpec],
    ) -> tuple[list[NodeSpec], list[NodeWrite], list[tuple[str, dict[str, Any]]]]:
        """Which ``candidates`` can start now; records and events of those that are skipped.

        A skip is decided as soon as every edge into a node is settled and none is live;
        it can settle its successors in turn, so they are examined too.
        """
        active = {n.id for n in running.values()}
        launch: list[NodeSpec] = []
        writes: list[NodeWrite] = []
        events: list[tuple[str, dict[str, Any]]] = []
        queue = list(candidates)
        while queue:
            node = queue.pop(0)
            record = records.get(node.id)
            if node.id in active or (
                record is not None and record.status not in ("pending", "running")
            ):
                continue
            state = _readiness(graph.incoming[node.id], records)
            if state == "wait":
                continue
            if state == "skip":
                write = NodeWrite(node.id, node.id, node.type, "skipped", exists=record is not None)
                writes.append(write)
                records[node.id] = write.record()
                events.append((ev.NODE_SKIPPED, {"node_id": node.id, "node_title": node.title}))
                queue.extend(graph.children[node.id])
                continue
            active.add(node.id)
            launch.append(node)
            events.append(
                (
                    ev.NODE_STARTED,
                    {"node_id": node.id, "node_title": node.title, "node_type": node.type},
                )
            )
        return launch, writes, events

    def _start_tasks(
        self,
        run: RunInfo,
        launch: list[NodeSpec],
        values: dict[str, dict[str, Any]],
        records: dict[str, NodeRecord],
        running: dict[asyncio.Task[_Outcome], NodeSpec],
    ) -> NodeSpec | None:
        """Start the launched nodes as tasks, or return the one to await in place when it
        is the only node that can run."""
        if len(launch) == 1 and not running:
            return launch[0]
        loop = asyncio.get_running_loop()
        for node in launch:
            task = loop.create_task(self._run_node(run, node, values, records.get(node.id)))
            running[task] = node
        return None

    async def _commit(
        self,
        run_id: int,
        writes: list[NodeWrite],
        events: list[tuple[str, dict[str, Any]]],
        interrupts: list[InterruptWrite] | None = None,
    ) -> None:
        if not writes and not events and not interrupts:
            return
        # one commit of a run at a time: events are numbered and committed in order (a
        # streaming node writes its messages beside the run's own steps)
        lock = self._commit_locks.setdefault(run_id, asyncio.Lock())
        async with lock:
            numbered = [(self._next_seq(run_id), event, data) for event, data in events]
            woke = await self._write(
                self.store.commit_step, run_id, writes, numbered, interrupts=interrupts
            )
        self._notify(run_id, numbered)
        if not woke:
            self._wake_later(run_id)

    def _wake_later(self, run_id: int) -> None:
        """Wake the run's followers on other replicas after ``STEP_WAKE_EVERY_S`` unless a
        later step or the run's end does (a step commit that sent no wake-up)."""
        self._unwoken[run_id] = time.monotonic()
        if run_id in self._trailing:
            return

        async def later() -> None:
            try:
                while True:
                    await asyncio.sleep(STEP_WAKE_EVERY_S)
                    skipped, woke = self._unwoken.get(run_id), self.store.woke_at(run_id)
                    if skipped is None or woke is None or woke >= skipped:
                        return
                    await self._write(self.store.wake, run_id)
            except Exception:  # a follower still looks at the database every few seconds
                log.exception("run %s: trailing wake-up failed", run_id)
            finally:
                self._trailing.pop(run_id, None)
                self._unwoken.pop(run_id, None)

        self._trailing[run_id] = asyncio.get_running_loop().create_task(later())

    def _finished(
        self, run: RunInfo, node: NodeSpec, outcome: _Outcome, previous: NodeRecord | None
    ) -> tuple[NodeWrite, list[tuple[str, dict[str, Any]]], InterruptWrite | None]:
        result, error = outcome.result, outcome.error
        interrupted = result.interrupt is not None or bool(result.waiting)
        write = NodeWrite(
            node.id,
            node.id,
            node.type,
            "interrupted" if interrupted else "succeeded",
            inputs=outcome.inputs,
            outputs=result.outputs,
            port=result.port,
            error=None if error is None else {"msg": error},
            usage=result.usage,
            attempts=(previous.attempts if previous else 0) + outcome.tries,
            started_at=outcome.started_at,
            finished_at=self.clock(),
            exists=previous is not None,
        )
        if result.waiting:
            return (
                write,
                [
                    (
                        ev.INTERRUPT,
                        {
                            "event_id": str(p.event_id),
                            "type": p.type,
                            "data": p.data,
                            "node_id": p.node_id,
                            "node_title": f"{node.title}/{p.node_id}",
                            "execute_id": str(p.run_id),
                        },
                    )
                    for p in result.waiting
                ],
                None,
            )
        if result.interrupt is not None:
            pending = InterruptWrite(
                new_id(),
                run.root,
                node.id,
                node.id,
                result.interrupt.type,
                result.interrupt.data,
                self.settings.interrupt_ttl,
                run.owner_id,
            )
            return (
                write,
                [
                    (
                        ev.INTERRUPT,
                        {
                            "event_id": str(pending.event_id),
                            "type": pending.type,
                            "data": pending.data,
                            "node_id": node.id,
                            "node_title": node.title,
                        },
                    )
                ],
                pending,
            )
        events: list[tuple[str, dict[str, Any]]] = []
        if result.message is not None:
            events.append(
                (
                    ev.MESSAGE,
                    {
                        "node_id": node.id,
                        "node_title": node.title,
                        "content": result.message,
                        "node_is_finish": True,
                    },
                )
            )
        events.append(
            (
                ev.NODE_FINISHED,
                {
                    "node_id": node.id,
                    "node_title": node.title,
                    "port": result.port,
                    "error": error,
                    "usage": result.usage,
                },
            )
        )
        return write, events, None

    async def _run_node(
        self,
        run: RunInfo,
        node: NodeSpec,
        values: dict[str, dict[str, Any]],
        previous: NodeRecord | None,
    ) -> _Outcome:
        kind = NODE_TYPES[node.type]
        resume_data = self.store.answered(run.id, node.id) if previous is not None else None
        try:
            inputs = resolve_inputs(kind, node, values)
        except MissingValue as exc:
            raise NodeFailed(node, f"{exc} has no value (its node did not run)") from exc
        started = self.clock()
        result, error, tries = await self._attempts(run, node, kind, inputs, resume_data)
        if result is None:
            assert error is not None
            result = self._on_error(node, error)
        return _Outcome(result, error, tries, _public(inputs), started)

    async def _attempts(
        self, run: RunInfo, node: NodeSpec, kind: NodeKind, inputs: dict[str, Any], resume_data: Any
    ) -> tuple[NodeResult | None, str | None, int]:
        error = None
        for attempt in range(node.error.retry + 1):
            ctx = _Context(self, run, node, resume_data)
            try:
                call: Awaitable[NodeResult] = kind.run(ctx, node, dict(inputs))
                if node.error.timeout is not None:
                    call = asyncio.wait_for(call, timeout=node.error.timeout)
                return await call, None, attempt + 1
            except asyncio.CancelledError:
                raise
            except asyncio.TimeoutError:
                error = (
                    f"timed out after {node.error.timeout:g} s (the node's timeout: raise it with "
                    "timeout=... on the node)"
                )
            except CozeLabError as exc:
                error = exc.msg
            except NodeError as exc:
                error = str(exc)
            except Exception as exc:  # a node's own failure, reported on the node
                error = f"{type(exc).__name__}: {exc}"
            log.info("run %s node %s attempt %d failed: %s", run.id, node.id, attempt + 1, error)
        return None, error, node.error.retry + 1

    def _on_error(self, node: NodeSpec, error: str) -> NodeResult:
        if node.error.on_error == "default":
            return NodeResult(outputs=dict(node.error.default_output or {}))
        if node.error.on_error == "branch":
            return NodeResult(outputs={"error": error}, port="error")
        raise NodeFailed(node, error)

    async def _event(self, run_id: int, event: str, data: dict[str, Any]) -> None:
        """An event written outside a run's execution (resume, cancel, expiry, the end)."""
        if run_id in self._seq:
            await self._commit(run_id, [], [(event, data)])
            return
        seq = self.store.add_event(run_id, event, data)
        self._notify(run_id, [(seq, event, data)])

    def _next_seq(self, run_id: int) -> int:
        # the worker holding the run's lease is its only event writer while it executes
        if run_id not in self._seq:
            self._seq[run_id] = self.store.last_seq(run_id)
        self._seq[run_id] += 1
        return self._seq[run_id]

    def _notify(self, run_id: int, events: list[tuple[int, str, dict[str, Any]]]) -> None:
        for queue in self._listeners.get(run_id, []):
            for item in events:
                queue.put_nowait(item)


async def _first_done(
    running: dict[asyncio.Task[_Outcome], NodeSpec],
) -> set[asyncio.Task[_Outcome]]:
    """The finished tasks; a lone task (a chain) is awaited directly, which is cheaper."""
    if len(running) == 1:
        only = next(iter(running))
        with contextlib.suppress(Exception):  # its failure is raised by task.result()
            await only
        return {only}
    done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
    return done


def resolve_inputs(
    kind: NodeKind, node: NodeSpec, values: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    strict = not kind.lenient_inputs
    inputs = render(node.inputs, values, strict=strict)
    for key in kind.templated:
        if key in node.config:
            inputs[f"__{key}__"] = render(node.config[key], values, strict=strict)
    for key in kind.bound:
        if key in node.config:
            inputs[f"__{key}__"] = bind_sql(node.config[key], values, strict=strict)
    return inputs


def check_inputs(spec: WorkflowSpec, given: dict[str, Any]) -> dict[str, Any]:
    """The run's inputs with defaults applied; InvalidParameter names what is wrong."""
    if not isinstance(given, dict):
        raise InvalidParameter("parameters must be an object")
    known = {i.name: i for i in spec.inputs}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise InvalidParameter(f"unknown parameters {unknown}; expected {sorted(known)}")
    values: dict[str, Any] = {}
    for name, item in known.items():
        if name not in given or given[name] is None:
            if item.required:
                raise InvalidParameter(f"parameter '{name}' is required")
            values[name] = item.default
            continue
        value = given[name]
        expected = _PY_TYPES.get(item.type)
        if expected is not None and (
            not isinstance(value, expected) or (isinstance(value, bool) and item.type != "boolean")
        ):
            raise InvalidParameter(f"parameter '{name}' must be {item.type}")
        values[name] = value
    return values


def _control(nodes: Any, records: dict[str, NodeRecord]) -> str | None:
    """``break`` or ``continue`` when such a node of a loop body has run."""
    for node in nodes:
        record = records.get(node.id)
        if node.type in LOOP_CONTROL and record is not None and record.status == "succeeded":
            return str(node.type)
    return None


def _readiness(edges: list[Any], records: dict[str, NodeRecord]) -> str:
    """``run`` when every predecessor finished and one edge is live, ``skip`` when none is."""
    if not edges:
        return "run"
    live = False
    for edge in edges:
        source = records.get(edge.source)
        if source is None or source.status not in ("succeeded", "skipped"):
            return "wait"
        if source.status == "succeeded" and source.port == edge.port:
            live = True
    return "run" if live else "skip"


def _public(inputs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in inputs.items() if not k.startswith("__")} | {
        k.strip("_"): v for k, v in inputs.items() if k.startswith("__")
    }


def _total_usage(records: Any) -> dict[str, Any] | None:
    """The tokens of every node that called a model, and their cost when every one of them
    has a price."""
    total: dict[str, Any] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    seen = False
    costs: list[float | None] = []
    for record in records:
        if record.usage:
            seen = True
            for key in ("input_tokens", "output_tokens", "total_tokens"):
                total[key] += int(record.usage.get(key, 0))
            costs.append(record.usage.get("cost"))
    if costs and all(c is not None for c in costs):
        total["cost"] = round(sum(c for c in costs if c is not None), 10)
    return total if seen else None


def _hint(error_type: str, node_timeout: float | None) -> str:
    """What to change when a code node hits a limit (the message names the setting)."""
    if error_type != "timeout":
        return ""
    if node_timeout is not None:
        return " (the node's timeout: raise it with timeout=... on the node)"
    return (
        " (the sandbox's limit for nodes without their own: set timeout=... on the node, "
        "or the server's sandbox_timeout setting)"
    )
