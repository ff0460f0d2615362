"""LangGraph's per-node overhead on the same 50-node pass-through graph (SqliteSaver).

Run by ``bench/engine.py`` in its own virtualenv: langgraph's dependencies (websockets>=15)
conflict with cozepy's, so it cannot share the project's venv. Prints one JSON line.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    value: str


def build(nodes: int):
    graph = StateGraph(State)
    for i in range(nodes):
        graph.add_node(f"n{i}", lambda state: {"value": state["value"]})
    graph.add_edge(START, "n0")
    for i in range(nodes - 1):
        graph.add_edge(f"n{i}", f"n{i + 1}")
    graph.add_edge(f"n{nodes - 1}", END)
    return graph


def main(nodes: int = 50, runs: int = 30) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "lg.db", check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # the same durability setting as coze_lab
        app = build(nodes).compile(checkpointer=SqliteSaver(conn))
        app.invoke({"value": "x"}, {"configurable": {"thread_id": "warmup"}})
        times = []
        for run in range(runs):
            start = time.perf_counter()
            app.invoke({"value": "x"}, {"configurable": {"thread_id": f"t{run}"}})
            times.append(time.perf_counter() - start)
        checkpoints = conn.execute("select count(*) from checkpoints").fetchone()[0]
    per_node = [t / nodes * 1000 for t in times]
    print(
        json.dumps(
            {
                "median_ms_per_node": statistics.median(per_node),
                "p95_ms_per_node": sorted(per_node)[int(len(per_node) * 0.95) - 1],
                "checkpoints": checkpoints,
                "runs": runs,
                "nodes": nodes,
            }
        )
    )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
