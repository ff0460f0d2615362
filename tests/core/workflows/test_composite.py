"""Sub-workflows, loops and batches: child runs that are durable and can ask questions."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

import coze_lab as cl
from coze_lab.core.workflows.spec import WorkflowDefinitionError
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.store.models import WorkflowRun
from tests.core.workflows.composites import (
    BATCHED,
    COUNTED,
    OUTER,
    PICKING,
    REVIEWING,
    SUMMING,
    pick,
)


def child_runs(host: InProcessHost, root: int) -> int:
    with host.runtime.db.transaction() as session:
        return session.execute(select(func.count()).select_from(WorkflowRun).where(
            WorkflowRun.root_run_id == root, WorkflowRun.id != root)).scalar_one()


def test_a_question_inside_a_subworkflow_pauses_the_parent(host: InProcessHost) -> None:
    run = host.run(OUTER.validate(), {"topic": "tea"})
    assert run.status == "interrupted"
    [question] = run.pending
    assert question.data == {"question": "What do you think of tea?"}
    assert question.execute_id == str(run.id) and question.run_id != str(run.id)
    assert run.nodes["sub"].status == "interrupted"
    run.resume(question.event_id, "lovely")
    assert run.status == "succeeded", run.error
    assert run.outputs == {"reply": "you said: lovely"}
    assert child_runs(host, run.id) == 1


def test_loop_runs_code_per_item_and_carries_a_variable(host: InProcessHost) -> None:
    run = host.run(SUMMING.validate(), {"numbers": [1, 2, 3, 4]})
    assert run.status == "succeeded", run.error
    assert run.outputs["total"] == 10 and run.outputs["count"] == 4
    assert [r["doubled"] for r in run.outputs["results"]] == [2, 4, 6, 8]
    assert [r["total"] for r in run.outputs["results"]] == [1, 3, 6, 10]
    assert child_runs(host, run.id) == 4


def test_counted_loop_stops_at_break(host: InProcessHost) -> None:
    run = host.run(COUNTED.validate(), {"limit": 0})
    assert run.status == "succeeded", run.error
    assert run.outputs["count"] == 3
    assert [r["i"] for r in run.outputs["results"]] == [0, 1, 2]


def test_loop_body_continue_and_break_nodes(host: InProcessHost) -> None:
    run = host.run(PICKING.validate(), {"numbers": [2, 3, 4, -1, 6]})
    assert run.status == "succeeded", run.error
    assert run.outputs["results"] == [{"item": 2, "total": 2}, {"item": 4, "total": 6}]
    assert run.outputs["total"] == 6 and run.outputs["count"] == 2
    assert child_runs(host, run.id) == 4  # nothing ran after the break
    wrong = cl.Workflow("wrong")
    wrong.inputs(numbers=list)
    with pytest.raises(WorkflowDefinitionError, match="belongs in a loop body"):
        wrong.batch("each", body=pick, over="{{start.numbers}}")


def test_batch_keeps_order_and_passes_extra_inputs(host: InProcessHost) -> None:
    words = ["a", "b", "c", "d", "e"]
    run = host.run(BATCHED.validate(), {"words": words})
    assert run.status == "succeeded", run.error
    assert [r["text"] for r in run.outputs["results"]] == [f"{i}:{w}!" for i, w in
                                                          enumerate(words)]
    assert child_runs(host, run.id) == len(words)


def test_questions_inside_a_loop_come_one_iteration_at_a_time(host: InProcessHost) -> None:
    run = host.run(REVIEWING.validate(), {"items": ["x", "y"]})
    assert [p.data["question"] for p in run.pending] == ["Keep x?"]
    run.resume(run.pending[0].event_id, "keep")
    assert run.status == "interrupted"
    assert [p.data["question"] for p in run.pending] == ["Keep y?"]
    run.resume(run.pending[0].event_id, "drop")
    assert run.status == "succeeded", run.error
    assert run.outputs["results"] == [{"item": "x", "decision": "keep"},
                                      {"item": "y", "decision": "drop"}]
    assert child_runs(host, run.id) == 2  # the first iteration was not run again


def test_canceling_a_run_cancels_its_children(host: InProcessHost) -> None:
    run = host.run(OUTER.validate(), {"topic": "x"})
    assert host.call(host.runtime.engine.cancel(run.info.owner_id, run.id))
    with host.runtime.db.transaction() as session:
        statuses = set(session.scalars(select(WorkflowRun.status).where(
            WorkflowRun.root_run_id == run.id)))
    assert statuses == {"canceled"}
    assert host.runtime.engine.store.pending(run.info.owner_id) == []

