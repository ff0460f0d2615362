"""Definition-time checks: every error names the node at fault."""

from __future__ import annotations

import weakref
from collections import defaultdict, deque

from coze_lab.core.workflows.nodes import NODE_TYPES
from coze_lab.core.workflows.nodes.code import compatible
from coze_lab.core.workflows.nodes.composite import COMPOSITE_TYPES, inner_spec
from coze_lab.core.workflows.spec import (
    NODE_ID,
    NodeSpec,
    WorkflowDefinitionError,
    WorkflowSpec,
    references,
    whole_reference,
)

_VALID: dict[int, weakref.ref[WorkflowSpec]] = {}  # id → the spec object that passed


def validate(spec: WorkflowSpec, *, complete: bool = True) -> None:
    """Raise WorkflowDefinitionError unless ``spec`` can run.

    ``complete=False`` skips the checks that only a finished definition can pass (an end
    node, everything reachable), so the DSL can check each node as it is added. A spec
    object that passed once is not checked again (specs are immutable).
    """
    known = _VALID.get(id(spec))
    if complete and known is not None and known() is spec:
        return
    if not isinstance(spec.name, str) or not spec.name.strip():
        raise WorkflowDefinitionError("a workflow needs a name")
    nodes = {}
    for node in spec.nodes:
        if not isinstance(node.id, str) or not NODE_ID.fullmatch(node.id):
            raise WorkflowDefinitionError("ids are letters, digits and _, at most 64", node.id)
        if node.id in nodes:
            raise WorkflowDefinitionError("duplicate node id", node.id)
        kind = NODE_TYPES.get(node.type)
        if kind is None:
            raise WorkflowDefinitionError(f"unknown node type '{node.type}'", node.id)
        node.error.check(node.id)
        if node.type in COMPOSITE_TYPES:
            _check_inner(node)
        kind.check(node)
        nodes[node.id] = node
    starts = [n.id for n in spec.nodes if n.type == "start"]
    if len(starts) > 1:
        raise WorkflowDefinitionError("a workflow has one start node", starts[1])
    parents = _check_edges(spec, nodes)
    order = _topological_order(spec, nodes)
    ancestors = _ancestors(order, parents)
    for node in spec.nodes:
        _check_references(node, nodes, ancestors[node.id])
    if complete:
        _check_complete(spec, nodes, starts, ancestors)
        key = id(spec)
        _VALID[key] = weakref.ref(spec, lambda _ref: _VALID.pop(key, None))


def _check_inner(node: NodeSpec) -> None:
    """The workflow a sub-workflow, loop or batch node runs must be valid on its own."""
    spec = inner_spec(node)
    try:
        validate(spec)
    except WorkflowDefinitionError as exc:
        raise WorkflowDefinitionError(f"its workflow is invalid: {exc.msg}", node.id) from exc


def _check_edges(spec: WorkflowSpec, nodes: dict[str, NodeSpec]) -> dict[str, set[str]]:
    parents: dict[str, set[str]] = defaultdict(set)
    for edge in spec.edges:
        for end in (edge.source, edge.target):
            if end not in nodes:
                raise WorkflowDefinitionError(f"an edge names unknown node '{end}'")
        source = nodes[edge.source]
        allowed = set(NODE_TYPES[source.type].ports(source))
        if source.error.on_error == "branch":
            allowed.add("error")
        if edge.port is None and NODE_TYPES[source.type].branching:
            raise WorkflowDefinitionError(
                f"edges from a branching node need a port: one of {sorted(allowed)}", source.id
            )
        if edge.port is not None and edge.port not in allowed:
            raise WorkflowDefinitionError(
                f"no port '{edge.port}' (ports: {sorted(allowed) or 'none'})", source.id
            )
        if nodes[edge.target].type == "start":
            raise WorkflowDefinitionError("nothing may lead into the start node", edge.target)
        parents[edge.target].add(edge.source)
    return parents


def _topological_order(spec: WorkflowSpec, nodes: dict[str, NodeSpec]) -> list[str]:
    incoming = {node_id: 0 for node_id in nodes}
    children = defaultdict(list)
    for edge in spec.edges:
        incoming[edge.target] += 1
        children[edge.source].append(edge.target)
    queue = deque(n for n, count in incoming.items() if count == 0)
    order: list[str] = []
    while queue:
        current = queue.popleft()
        order.append(current)
        for child in children[current]:
            incoming[child] -= 1
            if incoming[child] == 0:
                queue.append(child)
    if len(order) != len(nodes):
        stuck = next(n for n in nodes if n not in order)
        raise WorkflowDefinitionError("the graph has a cycle; repeat work with a loop node", stuck)
    return order


def _ancestors(order: list[str], parents: dict[str, set[str]]) -> dict[str, set[str]]:
    ancestors: dict[str, set[str]] = {}
    for node_id in order:
        found: set[str] = set()
        for parent in parents.get(node_id, ()):
            found |= {parent} | ancestors[parent]
        ancestors[node_id] = found
    return ancestors


def node_outputs(node: NodeSpec) -> dict[str, str]:
    """A node's outputs by name and type; ``error`` too when failures take a branch."""
    outputs = NODE_TYPES[node.type].outputs(node)
    if node.error.on_error == "branch":
        outputs = {**outputs, "error": "string"}
    return outputs


def _check_references(node: NodeSpec, nodes: dict[str, NodeSpec], upstream: set[str]) -> None:
    kind = NODE_TYPES[node.type]
    templated = [node.config.get(key) for key in (*kind.templated, *kind.bound)]
    for ref in references([node.inputs, *templated]):
        if ref.node not in nodes:
            raise WorkflowDefinitionError(f"{ref} refers to unknown node '{ref.node}'", node.id)
        if ref.node not in upstream:
            raise WorkflowDefinitionError(f"{ref} is not upstream of this node", node.id)
        produced = node_outputs(nodes[ref.node])
        if produced and ref.field not in produced:
            raise WorkflowDefinitionError(
                f"{ref}: node '{ref.node}' has no output '{ref.field}' "
                f"(outputs: {sorted(produced)})",
                node.id,
            )
    for name, expected in kind.input_types(node).items():
        ref = whole_reference(node.inputs.get(name))
        if ref is None or ref.path:
            continue
        produced_type = node_outputs(nodes[ref.node]).get(ref.field)
        if produced_type and not compatible(expected, produced_type):
            raise WorkflowDefinitionError(
                f"parameter '{name}' expects {expected} but {ref} is {produced_type}", node.id
            )


def _check_complete(
    spec: WorkflowSpec,
    nodes: dict[str, NodeSpec],
    starts: list[str],
    ancestors: dict[str, set[str]],
) -> None:
    if not starts:
        raise WorkflowDefinitionError("the workflow has no start node")
    ends = [n.id for n in spec.nodes if n.type == "end"]
    if not ends:
        raise WorkflowDefinitionError("the workflow has no end node")
    if len(ends) > 1:
        raise WorkflowDefinitionError("a workflow has one end node", ends[1])
    for node_id in nodes:
        if node_id != starts[0] and starts[0] not in ancestors[node_id]:
            raise WorkflowDefinitionError("not reachable from the start node", node_id)
