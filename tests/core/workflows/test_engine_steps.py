"""How a run's steps reach the database: the first with the run, the last with its end, a
chain's nodes awaited in place without starving the event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from coze_lab.core.identity import IdentityService
from coze_lab.core.workflows import Edge, InputSpec, NodeSpec, WorkflowSpec
from coze_lab.core.workflows import engine as engine_module
from coze_lab.core.workflows.engine import Engine
from coze_lab.core.workflows.validate import validate
from coze_lab.store import Database


def chain(nodes: int) -> WorkflowSpec:
    """start → text nodes passing the value on → end."""
    specs = [NodeSpec("start", "start", outputs={"value": "string"})]
    edges, previous, field = [], "start", "value"
    for i in range(nodes):
        config = {"template": f"{{{{{previous}.{field}}}}}"}
        specs.append(NodeSpec(f"n{i}", "text", outputs={"output": "string"}, config=config))
        edges.append(Edge(previous, f"n{i}"))
        previous, field = f"n{i}", "output"
    specs.append(NodeSpec("end", "end", inputs={"value": f"{{{{{previous}.{field}}}}}"}))
    edges.append(Edge(previous, "end"))
    spec = WorkflowSpec(
        "chain", inputs=(InputSpec("value"),), nodes=tuple(specs), edges=tuple(edges)
    )
    validate(spec)
    return spec


def test_a_run_is_written_with_its_first_step_and_ends_with_its_last(db_url: str) -> None:
    db = Database(db_url)
    db.upgrade()
    owner = IdentityService(db).ensure_user("steps").id

    async def scenario() -> None:
        engine = Engine(db, code_runner=lambda: None)
        try:
            run_id = await engine.start(owner, chain(2), {"value": "x"})
            # before the run's task has taken a step, a reader sees the start node started
            assert [(s, e) for s, e, _ in engine.store.events(run_id)] == [(1, "node_started")]
            info = await engine.wait(run_id)
            assert info.status == "succeeded" and info.outputs == {"value": "x"}
            events = engine.store.events(run_id)
            assert [s for s, _, _ in events] == list(range(1, len(events) + 1))
            names = [(e, d.get("node_id")) for _, e, d in events if e != "message"]
            order = ["start", "n0", "n1", "end"]
            assert names == [
                *[(e, n) for n in order for e in ("node_started", "node_finished")],
                ("done", None),
            ]
            stored = engine.store.get(run_id)
            assert stored.status == "succeeded" and set(stored.nodes) == set(order)
            assert all(r.status == "succeeded" for r in stored.nodes.values())
        finally:
            await engine.close()

    asyncio.run(scenario())
    db.dispose()


def test_a_chain_of_nodes_that_never_wait_lets_other_tasks_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "YIELD_EVERY_S", 0.0)  # a turn after every step
    db = Database(f"sqlite:///{tmp_path / 'db.sqlite'}")
    db.upgrade()
    owner = IdentityService(db).ensure_user("steps").id

    async def scenario() -> int:
        engine = Engine(db, code_runner=lambda: None)
        ticks = 0
        done = False

        async def other() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0)

        ticker = asyncio.get_running_loop().create_task(other())
        await asyncio.sleep(0)
        try:
            start = ticks
            info = await engine.wait(await engine.start(owner, chain(20), {"value": "x"}))
            assert info.status == "succeeded"
            return ticks - start
        finally:
            done = True
            await ticker
            await engine.close()

    assert asyncio.run(scenario()) >= 20
    db.dispose()
