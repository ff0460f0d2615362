"""The one door for workflow runs: start, retry, resume, cancel, wait, events, get, list,
pending.

Every front door uses it: the Coze workflow API, the studio API, the notebook's in-process
host, a bot's workflow tool and the plugin OAuth callback. It checks ownership and the
workflow a run belongs to, reads each interrupt once, and leaves executing to the engine.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from coze_lab.core.errors import Conflict, InvalidParameter
from coze_lab.core.json_input import parse_json
from coze_lab.core.workflows.engine import Engine, RunWorkspace
from coze_lab.core.workflows.nodes.llm import CONVERSATION_HISTORY
from coze_lab.core.workflows.nodes.plugin import AUTHORIZATION
from coze_lab.core.workflows.run_store import InterruptGone, InterruptInfo, NodeWrite, RunInfo
from coze_lab.core.workflows.service import WorkflowService
from coze_lab.core.workflows.spec import NodeSpec, WorkflowSpec
from coze_lab.store.offload import Offload

log = logging.getLogger("coze_lab.workflows")


@dataclass(frozen=True)
class Resumed:
    """An answered question: the interrupt, its (root) run, and the replay point."""

    interrupt: InterruptInfo
    #: the root run the answer continues (without node records)
    run: RunInfo
    #: the newest event before the answer: a stream that follows the run replays from here
    after: int


class RunService:
    """Workflow runs of one deployment, always scoped to their owner.

    Example:
        >>> run_id = await runs.start(user.id, workflow_id, {"doc": "..."})   # doctest: +SKIP
        >>> (await runs.wait(run_id)).status                                  # doctest: +SKIP
        'interrupted'
        >>> [q] = runs.pending(user.id, run_id)                               # doctest: +SKIP
        >>> resumed = await runs.resume(user.id, q.event_id, "yes")           # doctest: +SKIP
    """

    def __init__(
        self,
        workflows: WorkflowService,
        engine: Engine | Callable[[], Engine],
        *,
        run_workspace: Callable[[int, int | None, Sequence[int]], Callable[[int], RunWorkspace]]
        | None = None,
        offload: Offload | None = None,
    ) -> None:
        self._workflows = workflows
        self._engine = engine
        #: where the reads a start needs run: a thread on a server database (a round trip
        #: on the event loop would hold up every other request), inline on SQLite
        self._offload = offload or Offload()
        #: (owner id, workflow id, file ids for input/) → what makes the workspace of a run
        #: that asks for one from its id
        self._run_workspace = run_workspace

    @property
    def engine(self) -> Engine:
        """The engine of this event loop (created on first use by the runtime)."""
        if not isinstance(self._engine, Engine):
            self._engine = self._engine()
        return self._engine

    # ---- starting and waiting -------------------------------------------------------------
    async def start(
        self,
        owner_id: int,
        workflow_id: int | None,
        inputs: dict[str, Any],
        *,
        draft: bool = False,
        spec: WorkflowSpec | None = None,
        version: int | None = None,
        ignore_undeclared: bool = False,
        at_version: int | None = None,
        workspace: Any = None,
        bot_context: dict[str, str] | None = None,
        history: list[dict[str, Any]] | None = None,
        workspace_files: Sequence[int] = (),
    ) -> int:
        """Start a run and return its id (Coze's execute_id) at once.

        The run uses the workflow's newest published version, the published version
        ``at_version``, its draft (``draft``), or ``spec`` when one is given (a definition
        from a notebook, or one already resolved, of version ``version``).
        ``ignore_undeclared`` drops inputs the start node does not declare (as the Coze API
        does), noting them in the run's trace; otherwise they are refused. ``workspace``
        (a :class:`~coze_lab.core.workflows.engine.RunWorkspace`) is mounted into its code
        nodes; ``True`` gives the run a workspace of its own (``<space>/run-<id>/``) with
        the uploaded files ``workspace_files`` (file ids) in its ``input/``.
        ``bot_context`` ({bot_id, connector_id, connector_uid}, see
        :func:`coze_lab.core.memory.variables.bot_context`) is whose bot variables its
        variable and assign nodes read and write. ``history`` is a chat-flow's conversation
        for llm nodes with ``chat_history``.
        """
        if workspace_files and workspace is not True:
            raise InvalidParameter("workspace_files need workspace: true")
        if workspace is True:
            make = self._run_workspace
            if make is None:
                raise InvalidParameter("run workspaces are not available here")
            workspace = await asyncio.to_thread(make, owner_id, workflow_id, list(workspace_files))
        elif workspace is False:
            workspace = None
        if spec is None:
            if workflow_id is None:
                raise InvalidParameter("give a workflow_id or a definition")
            spec, version = await self._offload(
                self._workflows.runnable, owner_id, workflow_id, draft=draft, version=at_version
            )
        return await self.engine.start(
            owner_id,
            spec,
            inputs,
            workflow_id=workflow_id,
            version=version,
            ignore_undeclared=ignore_undeclared,
            workspace=workspace,
            bot_context=bot_context,
            history=history,
        )

    async def retry(
        self,
        owner_id: int,
        run_id: int,
        *,
        from_node: str | None = None,
        node_changes: dict[str, dict[str, Any]] | None = None,
    ) -> int:
        """Retry a failed or canceled run from a node as a new run; return the new run's id.

        ``from_node`` defaults to the node the run failed on. Every node that finished in the
        old run and does not depend on ``from_node`` keeps its record and outputs (it is
        not executed again: no model, code or plugin call); ``from_node`` and what follows
        it run again. ``node_changes`` ({node id: {key: value}}) may change the retried node
        only: ``inputs`` and ``outputs`` replace the node's bindings and declared outputs,
        any other key (``code``, ``prompt``, ``model``, ``temperature``, ...) replaces
        that key of its configuration. The new run names the old one in ``retry_of``.
        """
        old = self.engine.store.get(run_id, owner_id)
        if old.parent_run_id is not None:
            raise InvalidParameter(
                f"run {run_id} was started by run {old.root}: retry that run instead"
            )
        if old.status not in ("failed", "canceled"):
            raise Conflict(
                f"run {run_id} is {old.status}: only a failed or canceled run can be retried"
            )
        spec = self.engine.spec_of(old)
        known = [n.id for n in spec.nodes]
        if from_node is None:
            from_node = (old.error or {}).get("node_id")
        elif from_node not in known:
            raise InvalidParameter(
                f"node '{from_node}' is not in run {run_id}; its nodes are {known}"
            )
        changes = dict(node_changes or {})
        for node_id, change in changes.items():
            if node_id != from_node:
                raise InvalidParameter(
                    f"only the retried node ({from_node or 'none: give from_node'}) "
                    f"can be changed, not '{node_id}'"
                )
            if not isinstance(change, dict):
                raise InvalidParameter(f"the changes to node '{node_id}' must be an object")
        if from_node is not None and from_node in changes:
            spec = _changed(spec, from_node, changes[from_node])
        rerun = _downstream(spec, from_node) if from_node is not None else set()
        seed = [
            NodeWrite(
                r.node_key,
                r.node_id,
                r.node_type,
                r.status,
                inputs=r.inputs,
                outputs=r.outputs,
                port=r.port,
                usage=r.usage,
                attempts=r.attempts,
                started_at=r.started_at,
                finished_at=r.finished_at,
            )
            for r in old.nodes.values()
            if r.status in ("succeeded", "skipped") and r.node_id not in rerun
        ]
        note = {
            "msg": f"retry of run {run_id}"
            + (f" from node '{from_node}'" if from_node else "")
            + f": {len(seed)} node records reused",
            "retry_of": str(run_id),
            "from_node": from_node,
            "reused": sorted(w.node_key for w in seed),
        }
        declared = {i.name for i in spec.inputs}
        inputs = {k: v for k, v in old.inputs.items() if k in declared}
        history = old.inputs.get(CONVERSATION_HISTORY)
        return await self.engine.start(
            owner_id,
            spec,
            inputs,
            history=history if isinstance(history, list) else None,
            workflow_id=old.workflow_id,
            version=old.version,
            retry_of=old.id,
            seed=seed,
            notes=[note],
            bot_context=old.bot_context,
        )

    async def wait(self, run_id: int) -> RunInfo:
        """The run once its current execution stops (finished, or waiting for a person)."""
        return await self.engine.wait(run_id)

    # ---- people's answers -------------------------------------------------------------------
    async def resume(
        self,
        owner_id: int,
        event_id: int,
        data: Any,
        *,
        workflow_id: int | None = None,
    ) -> Resumed:
        """Answer a pending question once (a second answer is a Conflict) and continue.

        ``workflow_id`` refuses an event of another workflow (the Coze API names both). An
        input form's answer may come as JSON text, as Coze clients send it.
        """
        pending = self.engine.store.interrupt(event_id, owner_id)
        run = self.engine.store.get(pending.root_run_id, owner_id, nodes=False)
        if workflow_id is not None and run.workflow_id != workflow_id:
            raise InvalidParameter("event_id does not belong to this workflow")
        if pending.type == "input" and isinstance(data, str):
            data = parse_json(data, "resume_data for an input form")
        after = self.engine.store.last_seq(run.id)
        info = await self.engine.resume(owner_id, event_id, data, pending=pending, run=run)
        return Resumed(info, run, after)

    async def resume_authorized(self, owner_id: int, plugin_id: int) -> list[int]:
        """Continue every run of ``owner_id`` that waits for the authorization of a plugin
        (the OAuth callback's door); returns the event ids answered."""
        resumed = []
        for pending in self.pending(owner_id):
            if pending.type != AUTHORIZATION or pending.data.get("plugin_id") != str(plugin_id):
                continue
            try:
                await self.engine.resume(
                    owner_id, pending.event_id, {"authorized": True}, pending=pending
                )
            except InterruptGone:
                continue  # answered by someone else meanwhile
            resumed.append(pending.event_id)
            log.info("run %s resumed after plugin %s was authorized", pending.run_id, plugin_id)
        return resumed

    async def cancel(self, owner_id: int, run_id: int) -> bool:
        """Stop a run (and the runs it started) for real."""
        return await self.engine.cancel(owner_id, run_id)

    # ---- reading ----------------------------------------------------------------------------
    def get(
        self,
        owner_id: int,
        run_id: int,
        *,
        workflow_id: int | None = None,
        nodes: bool = True,
    ) -> RunInfo:
        """The owner's run with its node records; ``workflow_id`` must match when given."""
        info = self.engine.store.get(run_id, owner_id, nodes=nodes)
        if workflow_id is not None and info.workflow_id != workflow_id:
            raise InvalidParameter("execute_id does not belong to this workflow")
        return info

    def list(
        self, owner_id: int, *, workflow_id: int | None = None, limit: int = 20
    ) -> list[RunInfo]:
        """The owner's newest runs (of one workflow, when given)."""
        return self.engine.store.list(owner_id, workflow_id=workflow_id, limit=limit)

    def pending(self, owner_id: int, run_id: int | None = None) -> list[InterruptInfo]:
        """Open questions across the owner's runs, or of one run and the runs it started."""
        return self.engine.store.pending(owner_id, run_id)

    def events(
        self, owner_id: int, run_id: int, after: int = 0
    ) -> AsyncIterator[tuple[int, str, dict[str, Any]]]:
        """The owner's run's events after ``after``, then live until it stops or pauses
        (NotFound at once for another user's run, before anything streams)."""
        self.engine.store.get(run_id, owner_id, nodes=False)
        return self.engine.events(run_id, after)

    def follow(self, run_id: int, after: int = 0) -> AsyncIterator[tuple[int, str, dict[str, Any]]]:
        """Events of a run the caller has just started or resumed (its owner is known)."""
        return self.engine.events(run_id, after)


def _changed(spec: WorkflowSpec, node_id: str, change: dict[str, Any]) -> WorkflowSpec:
    """``spec`` with one node's bindings, outputs or configuration keys replaced."""
    nodes: list[NodeSpec] = []
    for node in spec.nodes:
        if node.id == node_id:
            config = {**node.config, **{k: v for k, v in change.items() if k not in _OWN}}
            inputs = change.get("inputs", node.inputs)
            outputs = change.get("outputs", node.outputs)
            if not isinstance(inputs, dict) or not isinstance(outputs, dict):
                raise InvalidParameter(f"node '{node_id}': inputs and outputs must be objects")
            node = replace(node, inputs=dict(inputs), outputs=dict(outputs), config=config)
        nodes.append(node)
    return replace(spec, nodes=tuple(nodes))


#: keys of a node change that are not configuration keys
_OWN = ("inputs", "outputs")


def _downstream(spec: WorkflowSpec, node_id: str) -> set[str]:
    """``node_id`` and every node reachable from it."""
    children: dict[str, list[str]] = {}
    for edge in spec.edges:
        children.setdefault(edge.source, []).append(edge.target)
    seen, queue = {node_id}, [node_id]
    while queue:
        for child in children.get(queue.pop(), []):
            if child not in seen:
                seen.add(child)
                queue.append(child)
    return seen
