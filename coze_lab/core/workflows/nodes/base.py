"""What every node type provides, and what a node gets from the engine while it runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError


class NodeError(Exception):
    """A node's own failure, reported on the node as its message (no exception name)."""


@dataclass(frozen=True)
class InterruptRequest:
    """Pause the run until a person answers (``type``: question, input)."""

    type: str
    data: dict[str, Any]


@dataclass
class NodeResult:
    outputs: dict[str, Any] = field(default_factory=dict)
    port: str | None = None
    interrupt: InterruptRequest | None = None
    usage: dict[str, Any] | None = None
    message: str | None = None
    #: questions of the runs this node started (sub-workflow, loop iterations) it waits on
    waiting: list[Any] | None = None


class NodeContext(Protocol):
    """The engine's services for a running node."""

    run_id: int
    node_key: str
    run_inputs: dict[str, Any]
    resume_data: Any

    async def run_code(
        self,
        code: str,
        params: dict[str, Any],
        *,
        language: str,
        entry: str | None,
        timeout: float | None,
    ) -> dict[str, Any]: ...

    async def complete(
        self, model: str, messages: list[dict[str, Any]], *, stream: bool = False, **params: Any
    ) -> tuple[str, dict[str, Any]]: ...

    def conversation_history(self) -> list[dict[str, Any]]: ...

    async def emit(self, content: str) -> None: ...

    async def run_child(self, spec: Any, inputs: dict[str, Any], key: str) -> ChildOutcome: ...

    async def http(self, method: str, url: str, **request: Any) -> Any: ...

    async def call_plugin(self, plugin_id: int, tool: str, arguments: dict[str, Any]) -> Any: ...

    async def call_mcp(self, server_id: int, tool: str, arguments: dict[str, Any]) -> Any: ...

    @property
    def tables(self) -> Any: ...

    @property
    def knowledge(self) -> Any: ...

    @property
    def scene(self) -> str: ...

    @property
    def owner_id(self) -> int: ...

    async def bot_variables(
        self, read: Sequence[str] = (), write: Mapping[str, str] | None = None
    ) -> dict[str, str]: ...


@dataclass(frozen=True)
class ChildOutcome:
    """How a child run (a sub-workflow, one loop iteration) ended, or that it waits."""

    status: str
    outputs: dict[str, Any] | None = None
    error: str | None = None
    waiting: list[Any] | None = None


class NodeKind:
    """A node type: its outputs, its branch ports, its config check, and how it runs."""

    type = ""
    #: ports a node of this type may branch on (besides "error" for on_error=branch)
    branching = False
    #: config keys holding templates; rendered into the inputs as ``__key__``
    templated: tuple[str, ...] = ()
    #: config keys holding SQL whose references become bound parameters (``bind_sql``)
    bound: tuple[str, ...] = ()

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return dict(node.outputs)

    def ports(self, node: NodeSpec) -> tuple[str, ...]:
        return ()

    def check(self, node: NodeSpec) -> None:
        """Raise WorkflowDefinitionError for a config this type cannot run."""

    #: references to nodes that did not run read as None instead of failing
    lenient_inputs = False

    def check_resume(self, node: NodeSpec, resume_data: Any) -> None:
        """Raise InvalidParameter for an answer this node cannot take (before it is used)."""

    def input_types(self, node: NodeSpec) -> dict[str, str]:
        """Expected types of some inputs, checked against what references produce."""
        return {}

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        raise NotImplementedError


def require(node: NodeSpec, key: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = node.config.get(key)
    if not isinstance(value, kind) or (isinstance(value, str) and not value.strip()):
        raise WorkflowDefinitionError(f"{node.type} node needs {what}", node.id)
    return value
