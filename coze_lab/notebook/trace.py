"""Runs as data: a run's trace per node (``run.trace.to_pandas()``) and a table across runs
(``cl.runs.table(workflow=..., since=...)``).

Each node row: ``node_id``, ``node_type``, ``status``, ``attempts``, ``latency_ms``,
``model``, ``input_tokens``, ``output_tokens``, ``total_tokens`` and ``cost`` (from the
model registry's ``prices``; None when the model has none). pandas is optional: without it
the rows are plain dicts (``trace.rows``) and ``to_pandas()`` says what to install.

Example:
    >>> trace = RunTrace("1", [{"node_id": "summarize", "node_type": "llm",
    ...     "status": "succeeded", "attempts": 1, "latency_ms": 12.0,
    ...     "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
    ...               "model": "demo", "cost": 0.0001}}])
    >>> trace.rows[0]["cost"], trace.cost, trace.tokens
    (0.0001, 0.0001, 15)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

NODE_COLUMNS = (
    "run_id",
    "node_id",
    "node_type",
    "status",
    "attempts",
    "latency_ms",
    "model",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost",
)
RUN_COLUMNS = (
    "run_id",
    "workflow",
    "status",
    "created_at",
    "nodes",
    "attempts",
    "latency_ms",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost",
    "retry_of",
)


def require_pandas() -> Any:
    """The pandas module, or an ImportError saying how to get it."""
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(
            "run traces as DataFrames need pandas in this kernel: pip install pandas"
        ) from exc
    return pandas


def node_row(run_id: str, node: Mapping[str, Any]) -> dict[str, Any]:
    """One node of a run (a studio API node record) as a flat row."""
    usage = node.get("usage") or {}
    return {
        "run_id": run_id,
        "node_id": node.get("node_id"),
        "node_type": node.get("node_type"),
        "status": node.get("status"),
        "attempts": node.get("attempts"),
        "latency_ms": node.get("latency_ms"),
        "model": usage.get("model"),
        "input_tokens": int(usage.get("input_tokens", 0)),
        "output_tokens": int(usage.get("output_tokens", 0)),
        "total_tokens": int(usage.get("total_tokens", 0)),
        "cost": usage.get("cost"),
    }


class RunTrace:
    """One run's nodes as rows: tokens, cost, latency and attempts per node."""

    def __init__(self, run_id: str | int, nodes: Iterable[Mapping[str, Any]]) -> None:
        self.run_id = str(run_id)
        self.rows = [node_row(self.run_id, node) for node in nodes]

    @property
    def tokens(self) -> int:
        return sum(row["total_tokens"] for row in self.rows)

    @property
    def cost(self) -> float | None:
        """The summed cost of the nodes that called a model (None when one has no price)."""
        return _cost(self.rows)

    def to_pandas(self) -> Any:
        """A DataFrame, one row per node (columns: ``NODE_COLUMNS``)."""
        return require_pandas().DataFrame(self.rows, columns=list(NODE_COLUMNS))

    def __repr__(self) -> str:
        return f"RunTrace(run_id={self.run_id!r}, nodes={len(self.rows)}, tokens={self.tokens})"


def run_row(run: Mapping[str, Any]) -> dict[str, Any]:
    """One run (a studio API run) as a flat row with its nodes' totals."""
    rows = RunTrace(run["id"], run.get("nodes") or []).rows
    latencies = [r["latency_ms"] for r in rows if r["latency_ms"] is not None]
    created = run.get("created_at")
    return {
        "run_id": str(run["id"]),
        "workflow": run.get("name"),
        "status": run.get("status"),
        "created_at": None
        if created is None
        else datetime.fromtimestamp(int(created), tz=timezone.utc),
        "nodes": len(rows),
        "attempts": sum(int(r["attempts"] or 0) for r in rows),
        "latency_ms": sum(latencies) if latencies else None,
        "input_tokens": sum(r["input_tokens"] for r in rows),
        "output_tokens": sum(r["output_tokens"] for r in rows),
        "total_tokens": sum(r["total_tokens"] for r in rows),
        "cost": _cost(rows),
        "retry_of": run.get("retry_of"),
    }


def _cost(rows: list[dict[str, Any]]) -> float | None:
    priced = [r for r in rows if r["total_tokens"] or r["model"]]
    if not priced or any(r["cost"] is None for r in priced):
        return None
    return round(sum(float(r["cost"]) for r in priced), 10)
