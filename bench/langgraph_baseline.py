"""LangGraph's side of ``bench/engine.py``: the same pass-through graph with ``SqliteSaver``.

Runs in its own virtualenv (langgraph's ``websockets>=15`` conflicts with cozepy's pin), as a
worker driven over stdin/stdout so that ``bench/engine.py`` can interleave the two sides
run block by run block. Protocol, one JSON object per line:

- on start it prints ``{"ready": true, "versions": ..., "sqlite": {pragmas read back}}``;
- for ``{"runs": N, "durability": "sync" | "async"}`` it runs the graph N times on new
  threads and prints ``{"per_node_ms": [...], "cpu_per_node_ms": [...]}`` (wall time and
  this process's CPU time, all its threads, per run divided by the nodes);
- end of input ends it.

The SQLite file gets the durability settings coze_lab's store uses (WAL,
``synchronous=NORMAL``); the pragmas are read back after ``SqliteSaver.setup()`` so the
bench prints what was really in force on both sides.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


class State(TypedDict):
    value: str


def build(nodes: int) -> StateGraph:
    graph = StateGraph(State)
    for i in range(nodes):
        graph.add_node(f"n{i}", lambda state: {"value": state["value"]})
    graph.add_edge(START, "n0")
    for i in range(nodes - 1):
        graph.add_edge(f"n{i}", f"n{i + 1}")
    graph.add_edge(f"n{nodes - 1}", END)
    return graph


def main(nodes: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "lg.db", check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # as coze_lab's store (coze_lab/store/db.py)
        saver = SqliteSaver(conn)
        saver.setup()
        app = build(nodes).compile(checkpointer=saver)
        pragmas = {
            "journal_mode": conn.execute("PRAGMA journal_mode").fetchone()[0],
            "synchronous": SYNCHRONOUS[conn.execute("PRAGMA synchronous").fetchone()[0]],
        }
        versions = {name: version(name) for name in ("langgraph", "langgraph-checkpoint-sqlite")}
        print(json.dumps({"ready": True, "versions": versions, "sqlite": pragmas}), flush=True)
        thread = 0
        for line in sys.stdin:
            command = json.loads(line)
            per_node, cpu_per_node = [], []
            for _ in range(command["runs"]):
                thread += 1
                config = {"configurable": {"thread_id": f"t{thread}"}}
                cpu, start = time.process_time(), time.perf_counter()
                out = app.invoke({"value": "x"}, config, durability=command["durability"])
                per_node.append((time.perf_counter() - start) / nodes * 1000)
                cpu_per_node.append((time.process_time() - cpu) / nodes * 1000)
                assert out == {"value": "x"}
            print(
                json.dumps({"per_node_ms": per_node, "cpu_per_node_ms": cpu_per_node}), flush=True
            )
        conn.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
