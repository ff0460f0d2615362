"""The canonical workflow definition: what is stored, versioned, published and diffed.

A workflow is nodes (id, type, title, inputs, outputs, config, error policy) and edges
(source → target, with a port for branching nodes). Node inputs are literals or templates
that reference workflow inputs and upstream outputs: ``"{{clean.text}}"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from coze_lab.core.errors import InvalidParameter

SCHEMA_VERSION = 1
TYPES = ("string", "integer", "number", "boolean", "object", "array", "any")
ON_ERROR = ("fail", "default", "branch")
NODE_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
REFERENCE = re.compile(
    r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_]+)*)\s*\}\}"
)
_WHOLE_REFERENCE = re.compile(r"^\s*" + REFERENCE.pattern + r"\s*$")


class WorkflowDefinitionError(InvalidParameter):
    """A definition that cannot run; the message names the node at fault."""

    def __init__(self, msg: str, node_id: str | None = None) -> None:
        super().__init__(f"node '{node_id}': {msg}" if node_id else msg)
        self.node_id = node_id


@dataclass(frozen=True)
class Reference:
    """``{{node.field.path}}``: a value produced upstream (``node`` may be ``start``)."""

    node: str
    field: str
    path: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "{{" + ".".join((self.node, self.field, *self.path)) + "}}"


def references(value: Any) -> list[Reference]:
    """Every reference inside a literal, a template string, or nested lists and dicts.

    Example:
        >>> [str(r) for r in references({"a": "Hi {{start.name}}", "b": ["{{x.y.z}}"]})]
        ['{{start.name}}', '{{x.y.z}}']
    """
    found: list[Reference] = []
    if isinstance(value, str):
        for match in REFERENCE.finditer(value):
            path = tuple(p for p in match.group(3).split(".") if p)
            found.append(Reference(match.group(1), match.group(2), path))
    elif isinstance(value, dict):
        for item in value.values():
            found.extend(references(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(references(item))
    return found


def whole_reference(value: Any) -> Reference | None:
    """The reference when ``value`` is exactly one ``{{...}}`` (its value keeps its type)."""
    if isinstance(value, str) and (match := _WHOLE_REFERENCE.match(value)):
        path = tuple(p for p in match.group(3).split(".") if p)
        return Reference(match.group(1), match.group(2), path)
    return None


@dataclass(frozen=True)
class ErrorPolicy:
    """Per-node failure handling: retries, a timeout, and what a final failure does."""

    retry: int = 0
    timeout: float | None = None
    on_error: str = "fail"
    default_output: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "retry": self.retry,
            "timeout": self.timeout,
            "on_error": self.on_error,
            "default_output": self.default_output,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, node_id: str | None = None) -> ErrorPolicy:
        data = data or {}
        policy = cls(
            retry=data.get("retry", 0),
            timeout=data.get("timeout"),
            on_error=data.get("on_error", "fail"),
            default_output=data.get("default_output"),
        )
        policy.check(node_id)
        return policy

    def check(self, node_id: str | None = None) -> None:
        if (
            isinstance(self.retry, bool)
            or not isinstance(self.retry, int)
            or not 0 <= self.retry <= 10
        ):
            raise WorkflowDefinitionError("retry must be an integer within 0..10", node_id)
        if self.timeout is not None and (
            isinstance(self.timeout, bool)
            or not isinstance(self.timeout, (int, float))
            or self.timeout <= 0
        ):
            raise WorkflowDefinitionError("timeout must be a positive number of seconds", node_id)
        if self.on_error not in ON_ERROR:
            raise WorkflowDefinitionError(f"on_error must be one of {ON_ERROR}", node_id)
        if self.on_error == "default" and not isinstance(self.default_output, dict):
            raise WorkflowDefinitionError("on_error 'default' needs a default_output dict", node_id)


@dataclass(frozen=True)
class InputSpec:
    name: str
    type: str = "string"
    required: bool = True
    default: Any = None
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "required": self.required,
            "default": self.default,
            "description": self.description,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InputSpec:
        return cls(
            name=data["name"],
            type=data.get("type", "string"),
            required=data.get("required", True),
            default=data.get("default"),
            description=data.get("description", ""),
        )


@dataclass(frozen=True)
class NodeSpec:
    """One node. ``outputs`` maps output names to types; ``config`` is type-specific."""

    id: str
    type: str
    title: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    error: ErrorPolicy = field(default_factory=ErrorPolicy)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "title": self.title or self.id,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "config": self.config,
            "error": self.error.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NodeSpec:
        return cls(
            id=data["id"],
            type=data["type"],
            title=data.get("title") or data["id"],
            inputs=dict(data.get("inputs") or {}),
            outputs=dict(data.get("outputs") or {}),
            config=dict(data.get("config") or {}),
            error=ErrorPolicy.from_dict(data.get("error"), data["id"]),
        )


@dataclass(frozen=True)
class Edge:
    """``source`` → ``target``; ``port`` picks a branch of a branching source node."""

    source: str
    target: str
    port: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "port": self.port}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Edge:
        return cls(source=data["source"], target=data["target"], port=data.get("port"))


@dataclass(frozen=True)
class WorkflowSpec:
    """A whole workflow definition; ``to_dict``/``from_dict`` round-trip exactly."""

    name: str
    description: str = ""
    inputs: tuple[InputSpec, ...] = ()
    nodes: tuple[NodeSpec, ...] = ()
    edges: tuple[Edge, ...] = ()

    def node(self, node_id: str) -> NodeSpec:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise WorkflowDefinitionError(f"no node '{node_id}'")

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON (computed once: specs are immutable; do not mutate it)."""
        return self._canonical

    @cached_property
    def _canonical(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "name": self.name,
            "description": self.description,
            "inputs": [i.to_dict() for i in self.inputs],
            "nodes": [n.to_dict() for n in self.nodes],
            "edges": [e.to_dict() for e in self.edges],
        }

    @classmethod
    def from_dict(cls, data: Any) -> WorkflowSpec:
        if not isinstance(data, dict):
            raise WorkflowDefinitionError("a workflow definition is a JSON object")
        if data.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
            raise WorkflowDefinitionError(f"unsupported schema_version {data['schema_version']}")
        try:
            return cls(
                name=data["name"],
                description=data.get("description", ""),
                inputs=tuple(InputSpec.from_dict(i) for i in data.get("inputs", [])),
                nodes=tuple(NodeSpec.from_dict(n) for n in data.get("nodes", [])),
                edges=tuple(Edge.from_dict(e) for e in data.get("edges", [])),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise WorkflowDefinitionError(f"malformed workflow definition: {exc!r}") from exc
