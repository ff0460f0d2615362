"""The engine with real parts: the database of each backend and the Deno + Pyodide sandbox."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import select

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.workflows.run_store import InterruptGone, NodeWrite
from coze_lab.notebook.in_process import InProcessHost, LocalRun
from coze_lab.store.models import NodeRun, RunEvent
from tests.core.workflows.examples import FAILING, PARALLEL, PATIENT, REVIEW, SLOW
from tests.support import FakeClock


def test_code_node_runs_in_the_sandbox_and_the_question_pauses(
    sandbox_host: InProcessHost,
) -> None:
    host = sandbox_host
    run = host.run(REVIEW.validate(), {"doc": "  a   short\n doc  "})
    assert run.status == "interrupted"
    assert run.nodes["tidy"].outputs == {"text": "a short doc", "words": 3}
    assert run.nodes["tidy"].status == "succeeded"
    [pending] = run.pending
    assert pending.type == "question"
    assert pending.data == {"question": "Approve 'a short doc'?", "choices": ["yes", "no"]}
    run.resume(pending.event_id, "yes")
    assert run.status == "succeeded"
    assert run.outputs == {"text": "a short doc", "words": 3, "approved": "yes"}


def test_completed_nodes_never_run_twice(host: InProcessHost) -> None:
    run = host.run(REVIEW.validate(), {"doc": "x y"})
    before = run.nodes["tidy"]
    run.resume(run.pending[0].event_id, "no")
    after = run.nodes["tidy"]
    assert after.attempts == before.attempts == 1
    assert after.started_at == before.started_at and after.finished_at == before.finished_at


def test_node_records_hold_inputs_outputs_and_timing(host: InProcessHost) -> None:
    run = host.run(REVIEW.validate(), {"doc": "one two"})
    tidy = run.nodes["tidy"]
    assert tidy.inputs == {"doc": "one two"}
    assert tidy.latency_ms is not None and tidy.latency_ms >= 0
    approve = run.nodes["approve"]
    assert approve.status == "interrupted"
    assert approve.inputs == {"question": "Approve 'one two'?"}


def test_a_wrong_answer_is_refused_and_keeps_the_question(host: InProcessHost) -> None:
    run = host.run(REVIEW.validate(), {"doc": "x"})
    event_id = run.pending[0].event_id
    with pytest.raises(InvalidParameter, match="one of"):
        run.resume(event_id, "perhaps")
    assert [p.event_id for p in LocalRun(host, run.info).pending] == [event_id]
    run.resume(event_id, {"answer": "yes"})
    assert run.status == "succeeded"


def test_a_second_resume_is_refused(host: InProcessHost) -> None:
    run = host.run(REVIEW.validate(), {"doc": "x"})
    event_id = run.pending[0].event_id
    run.resume(event_id, "yes")
    with pytest.raises(InterruptGone, match=f"question {event_id} was already answered"):
        run.resume(event_id, "no")
    assert run.outputs["approved"] == "yes"


def test_two_concurrent_resumes_exactly_one_wins(host: InProcessHost) -> None:
    run = host.run(REVIEW.validate(), {"doc": "x"})
    event_id = run.pending[0].event_id
    engine = host.runtime.engine

    async def both() -> list:
        return await asyncio.gather(
            engine.resume(run.info.owner_id, event_id, "yes"),
            engine.resume(run.info.owner_id, event_id, "no"),
            return_exceptions=True,
        )

    results = host.call(both())
    assert sum(isinstance(r, InterruptGone) for r in results) == 1
    final = host.call(engine.wait(run.id))
    winner = next(r for r in results if not isinstance(r, Exception))
    assert final.outputs["approved"] == winner.resume_data


def test_parallel_questions_are_pending_at_once(host: InProcessHost) -> None:
    run = host.run(PARALLEL.validate(), {"topic": "launch"})
    assert run.status == "interrupted"
    by_node = {p.node_id: p for p in run.pending}
    assert set(by_node) == {"legal", "brand"}
    run.resume(by_node["brand"].event_id, "fine")
    assert run.status == "interrupted"
    assert [p.node_id for p in run.pending] == ["legal"]
    run.resume(by_node["legal"].event_id, "approved")
    assert run.status == "succeeded"
    assert run.outputs == {"legal": "approved", "brand": "fine"}


def test_retry_default_output_and_error_branch(host: InProcessHost) -> None:
    run = host.run(FAILING.validate(), {"n": 3})
    assert run.status == "succeeded", run.error
    assert run.nodes["flaky"].attempts == 3  # retry=2
    assert run.outputs["flaky"] == -1
    assert run.nodes["flaky"].error["msg"].startswith("user_error")
    assert run.nodes["broken"].port == "error"
    assert "ZeroDivisionError" in run.outputs["outcome"]
    assert run.nodes["fine"].status == "skipped"
    with host.runtime.db.transaction() as session:
        events = session.scalars(select(RunEvent.event).where(RunEvent.run_id == run.id)).all()
    assert events.count("node_finished") == 6 and events[-1] == "done"
    assert events.count("node_skipped") == 1


def test_timeout_fails_the_run_and_names_the_node(host: InProcessHost) -> None:
    run = host.run(SLOW.validate(), {"n": 1})
    assert run.status == "failed"
    assert run.error["node_id"] == "spin"
    # the message names the limit and what changes it
    assert "timeout" in run.error["msg"] and "timeout=..." in run.error["msg"], run.error



def test_bad_inputs_are_refused_before_anything_is_stored(host: InProcessHost) -> None:
    for bad in ({}, {"doc": 5}, {"doc": "x", "extra": 1}):
        with pytest.raises(InvalidParameter):
            host.run(REVIEW.validate(), bad)
    assert host.runtime.engine.store.list(host.user.id) == []


def test_a_run_whose_worker_died_is_recovered_from_its_last_commit(host: InProcessHost) -> None:
    store = host.runtime.engine.store
    spec = REVIEW.validate()
    run_id = store.create(
        host.user.id, spec.to_dict(), {"doc": "a b c"}, lease_owner="dead-worker", lease_s=-1
    )
    store.commit_step(
        run_id,
        [NodeWrite("begin", "begin", "start", "succeeded", outputs={"doc": "a b c"}, attempts=1)],
        [(1, "node_started", {"node_id": "tidy"})],
    )
    # the crash happened while tidy was running: started, never committed

    recovered = host.call(host.runtime.engine.recover())
    assert recovered == [run_id]
    info = host.call(host.runtime.engine.wait(run_id))
    assert info.status == "interrupted"
    assert info.nodes["begin"].attempts == 1  # committed before the crash: not run again
    assert info.nodes["tidy"].attempts == 1 and info.nodes["tidy"].outputs["words"] == 3
    seqs = [seq for seq, _, _ in store.events(run_id)]
    assert seqs == sorted(set(seqs)) and seqs[0] == 1  # numbering went on after the crash


def test_a_live_lease_is_not_taken_over(host: InProcessHost) -> None:
    store = host.runtime.engine.store
    run_id = store.create(
        host.user.id,
        REVIEW.validate().to_dict(),
        {"doc": "x"},
        lease_owner="busy-worker",
        lease_s=60,
    )
    assert host.call(host.runtime.engine.recover()) == []
    assert not store.claim(run_id, "someone-else", 30)


def test_cancel_stops_the_run_and_its_questions(host: InProcessHost) -> None:
    run = host.run(REVIEW.validate(), {"doc": "x"})
    event_id = run.pending[0].event_id
    assert host.call(host.runtime.engine.cancel(run.info.owner_id, run.id))
    with pytest.raises(InterruptGone, match="canceled"):
        run.resume(event_id, "yes")
    assert host.runtime.engine.store.get(run.id).status == "canceled"


def test_questions_expire_visibly(host: InProcessHost, clock: FakeClock) -> None:
    run = host.run(REVIEW.validate(), {"doc": "x"})
    event_id = run.pending[0].event_id
    clock.advance(timedelta(days=7, seconds=1))
    with pytest.raises(InterruptGone, match="expired"):
        run.resume(event_id, "yes")
    host.call(host.runtime.engine.recover())
    assert host.runtime.engine.store.interrupt(event_id, run.info.owner_id).status == "expired"
    final = host.runtime.engine.store.get(run.id)
    assert final.status == "failed" and final.error["code"] == 4092
    assert "expired" in final.error["msg"]


def test_an_expired_question_can_take_its_timeout_branch(host: InProcessHost,
                                                         clock: FakeClock) -> None:
    run = host.run(PATIENT.validate(), {"item": "invoice"})
    assert run.status == "interrupted"
    clock.advance(timedelta(days=8))
    host.call(host.runtime.engine.recover())
    final = host.call(host.runtime.engine.wait(run.id))
    assert final.status == "succeeded", final.error
    assert final.outputs == {"outcome": "no answer; defaulted"}
    assert final.nodes["ask"].port == "timeout" and final.nodes["approved"].status == "skipped"


def test_an_answer_in_time_takes_the_normal_path(host: InProcessHost) -> None:
    run = host.run(PATIENT.validate(), {"item": "invoice"})
    run.resume(run.pending[0].event_id, "sure")
    assert run.outputs == {"outcome": "answered: sure"}


def test_another_users_question_is_not_found(host: InProcessHost) -> None:
    run = host.run(REVIEW.validate(), {"doc": "x"})
    stranger = host.runtime.identity.ensure_user("stranger")
    with pytest.raises(Exception, match="does not exist"):
        host.call(host.runtime.engine.resume(stranger.id, int(run.pending[0].event_id), "yes"))
    with host.runtime.db.transaction() as session:
        assert (
            session.scalars(
                select(NodeRun.status).where(
                    NodeRun.run_id == run.id, NodeRun.node_key == "approve"
                )
            ).one()
            == "interrupted"
        )


def test_undeclared_inputs_are_refused_unless_asked_to_ignore_them(host: InProcessHost) -> None:
    with pytest.raises(InvalidParameter, match=r"unknown parameters \['nope'\]"):
        host.run(PARALLEL.validate(), {"topic": "x", "nope": 1})

    async def lenient() -> tuple[int, list]:
        engine = host.runtime.engine
        run_id = await engine.start(
            host.user.id, PARALLEL.validate(), {"topic": "x", "nope": 1}, ignore_undeclared=True
        )
        await engine.wait(run_id)
        return run_id, engine.store.events(run_id)

    run_id, events = host.call(lenient())
    assert events[0][:2] == (1, "note") and events[0][2]["ignored_parameters"] == ["nope"]
    assert "nope" in events[0][2]["msg"] and "topic" in events[0][2]["msg"]
    assert host.runtime.engine.store.get(run_id).inputs == {"topic": "x"}
    assert [e[1] for e in events].count("note") == 1
