"""Pictures of a workflow graph (Mermaid text, rendered by JupyterLab's Markdown)."""

from __future__ import annotations

from coze_lab.core.workflows.spec import WorkflowSpec

_SHAPES = {
    "start": ("([", "])"),
    "end": ("([", "])"),
    "condition": ("{", "}"),
    "question": ("[/", "/]"),
    "input": ("[/", "/]"),
}


def mermaid(spec: WorkflowSpec, status: dict[str, str] | None = None) -> str:
    """A Mermaid flowchart; ``status`` (node id → status) colours the nodes.

    Node ids get an ``n_`` prefix: ``end`` is a Mermaid keyword.

    Example:
        >>> from coze_lab.core.workflows.spec import NodeSpec, Edge
        >>> print(mermaid(WorkflowSpec("w", nodes=(NodeSpec("a", "start"),))))
        flowchart TD
          n_a(["a<br/><small>start</small>"])
    """
    lines = ["flowchart TD"]
    for node in spec.nodes:
        left, right = _SHAPES.get(node.type, ("[", "]"))
        label = (node.title or node.id).replace('"', "'")
        lines.append(f'  n_{node.id}{left}"{label}<br/><small>{node.type}</small>"{right}')
    for edge in spec.edges:
        arrow = f"-->|{edge.port}|" if edge.port else "-->"
        lines.append(f"  n_{edge.source} {arrow} n_{edge.target}")
    colours = {
        "succeeded": "#d4f7dc",
        "running": "#fff3c4",
        "failed": "#ffd6d6",
        "interrupted": "#d9e8ff",
        "skipped": "#eeeeee",
    }
    for node_id, state in (status or {}).items():
        if state in colours:
            lines.append(f"  style n_{node_id} fill:{colours[state]}")
    return "\n".join(lines)
