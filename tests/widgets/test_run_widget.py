"""The workflow-run widget against a real server: state, comm messages, reconnects."""

from __future__ import annotations

import time
from typing import Any

import pytest

import coze_lab as cl
from coze_lab.notebook.studio import Studio
from coze_lab.notebook.widgets import RunWidget
from coze_lab.notebook.widgets.run_state import RunState


def approval() -> cl.Workflow:
    wf = cl.Workflow("widget_approval")
    wf.inputs(topic=str)
    wf.message("announce", content="Reviewing {{start.topic}}")
    wf.question("approve", question="Ship {{start.topic}}?", choices=["yes", "no"])
    wf.input(
        "details",
        form={"fields": [{"name": "owner", "type": "string"}, {"name": "days", "type": "integer"}]},
    )
    wf.end(topic="{{start.topic}}", approved="{{approve.answer}}", owner="{{details.owner}}")
    return wf


def failing() -> cl.Workflow:
    wf = cl.Workflow("widget_failing")
    wf.inputs(x=str)
    wf.node("http", "fetch", url="http://127.0.0.1:9/nothing")
    wf.end(status="{{fetch.status_code}}")
    return wf


def start(studio: Studio, wf: cl.Workflow, **inputs: Any) -> str:
    saved = studio.save_workflow(wf)
    return studio.start_run(saved["id"], inputs)


def from_page(widget: RunWidget, content: dict[str, Any]) -> None:
    """What the browser's ``model.send(content)`` does on the kernel side."""
    widget._handle_custom_msg(content, [])


def test_state_follows_a_run_through_two_pauses(studio: Studio) -> None:
    run_id = start(studio, approval(), topic="launch")
    widget = studio.run(run_id)
    assert isinstance(widget, RunWidget) and widget.id == run_id
    widget.wait(60)
    assert widget.status == "interrupted"
    assert widget.name == "widget_approval"
    nodes = {n["id"]: n for n in widget.nodes}
    assert list(nodes) == ["start", "announce", "approve", "details", "end"]  # declared order
    assert nodes["approve"]["status"] == "interrupted"
    assert nodes["start"]["status"] == "succeeded" and nodes["start"]["latency_ms"] is not None
    assert nodes["end"]["status"] == "pending"
    assert {"source": "approve", "target": "details", "port": None} in widget.edges
    assert [m["content"] for m in widget.messages] == ["Reviewing launch"]
    [question] = widget.pending
    assert question["type"] == "question"
    assert question["data"] == {"question": "Ship launch?", "choices": ["yes", "no"]}

    # The page answers through the comm: the kernel posts it and follows on.
    from_page(widget, {"type": "resume", "event_id": question["event_id"], "data": "yes"})
    widget.wait(60)
    assert widget.status == "interrupted"
    [form] = widget.pending
    assert form["type"] == "input" and form["data"]["form"]["fields"][0]["name"] == "owner"

    # A wrong answer comes back to the page as an error message, the question stays.
    sent: list[Any] = []
    widget.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
    from_page(widget, {"type": "resume", "event_id": form["event_id"], "data": {"owner": 3}})
    assert sent and sent[0]["type"] == "error" and "owner" in sent[0]["msg"]
    assert widget.pending == [form]

    widget.resume({"owner": "ana", "days": 3})  # the only pending one, from Python
    widget.wait(60)
    assert widget.status == "succeeded"
    assert widget.outputs == {"topic": "launch", "approved": "yes", "owner": "ana"}
    assert {n["status"] for n in widget.nodes} == {"succeeded"}
    assert widget.pending == [] and widget.notice == ""
    # the end node's outputs are shown once, as outputs, not again as a streamed message
    assert [m["content"] for m in widget.messages] == ["Reviewing launch"]
    widget.close()


def test_redisplay_reconnects_and_sees_an_answer_given_elsewhere(studio: Studio) -> None:
    run_id = start(studio, approval(), topic="beta")
    first = studio.run(run_id).wait(60)
    first.close()  # as after a kernel restart: nothing of the widget is left

    again = studio.run(run_id).wait(60)  # replays every event from the server
    assert again.status == "interrupted"
    assert [m["content"] for m in again.messages] == ["Reviewing beta"]
    # Answered in the sidebar or by API, not through this widget: it notices by polling.
    studio.resume(again.pending[0]["event_id"], "no")
    deadline = time.monotonic() + 20
    while not (again.pending and again.pending[0]["type"] == "input"):
        assert time.monotonic() < deadline, again.pending
        time.sleep(0.1)
    assert again.pending[0]["type"] == "input"
    again.resume({"owner": "bo", "days": 1})
    assert again.wait(60).outputs["approved"] == "no"
    again.close()


def test_a_failing_node_is_named(studio: Studio) -> None:
    widget = studio.run(start(studio, failing(), x="1")).wait(60)
    assert widget.status == "failed"
    assert widget.error["node_id"] == "fetch"
    nodes = {n["id"]: n for n in widget.nodes}
    assert nodes["fetch"]["status"] == "failed" and nodes["fetch"]["error"]
    assert nodes["end"]["status"] == "not_run"  # never reached, not "waiting"
    widget.close()


def test_cancel_from_the_page(studio: Studio) -> None:
    widget = studio.run(start(studio, approval(), topic="x")).wait(60)
    from_page(widget, {"type": "cancel"})
    assert widget.wait(30).status == "canceled"
    assert widget.pending == []
    nodes = {n["id"]: n["status"] for n in widget.nodes}
    assert nodes["approve"] == "canceled"  # the stopped node, no longer "needs you"/"running"
    assert nodes["details"] == nodes["end"] == "not_run"
    widget.close()


def test_unreachable_server_is_a_notice_not_an_exception() -> None:
    studio = Studio("http://127.0.0.1:9/", "pat_nothing")
    widget = RunWidget("123", studio=studio)
    deadline = time.monotonic() + 10
    while not widget.notice and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "cannot follow the run" in widget.notice
    widget.close()


def test_run_state_reducer() -> None:
    state = RunState("1")
    state.graph(approval().to_json())
    state.apply(
        1, "node_started", {"node_id": "start", "node_title": "start", "node_type": "start"}
    )
    state.apply(2, "node_finished", {"node_id": "start", "node_title": "start"})
    state.apply(
        3,
        "interrupt",
        {
            "event_id": "9",
            "node_id": "approve",
            "node_title": "approve",
            "type": "question",
            "data": {"question": "?"},
        },
    )
    state.apply(4, "interrupted", {"pending": ["9"]})
    assert state.status == "interrupted" and state.nodes["approve"]["status"] == "interrupted"
    state.apply(5, "resumed", {"event_id": "9", "node_id": "approve"})
    assert state.pending == {} and state.status == "running"
    state.apply(6, "failed", {"error": {"code": 5100, "msg": "boom", "node_id": "details"}})
    assert state.nodes["details"] == pytest.approx(state.nodes["details"])
    assert state.nodes["details"]["status"] == "failed"
    assert state.nodes["details"]["error"] == "boom"
    assert state.snapshot()["last_event"] == 6
    # the run is over: what was still running was stopped, what was ahead never ran
    assert state.nodes["approve"]["status"] == "canceled"
    assert state.nodes["end"]["status"] == "not_run"


def test_run_state_shows_the_outputs_once() -> None:
    state = RunState("2")
    state.graph(approval().to_json())
    state.apply(1, "node_started", {"node_id": "announce", "node_type": "message"})
    state.apply(2, "message", {"node_id": "announce", "content": "Reviewing x"})
    state.apply(3, "node_started", {"node_id": "end", "node_type": "end"})
    state.apply(4, "message", {"node_id": "end", "content": '{"topic": "x"}'})
    state.apply(5, "done", {"outputs": {"topic": "x"}})
    assert [m["content"] for m in state.messages] == ["Reviewing x"]
    assert state.outputs == {"topic": "x"}
    # an answer template is text, not the outputs again: it stays a message
    state.apply(6, "message", {"node_id": "end", "content": "Shipped x."})
    assert state.messages[-1]["content"] == "Shipped x."


def asks_the_model() -> cl.Workflow:
    wf = cl.Workflow("widget_retry")
    wf.inputs(topic=str)
    wf.text("topic_line", template="Topic: {{start.topic}}")
    wf.llm("answer", prompt="{{topic_line.output}}")
    wf.end(answer="{{answer.output}}")
    return wf


def test_retry_from_the_page_follows_the_new_run(studio: Studio, served) -> None:
    from coze_lab.testing.model_server import ErrorReply

    served.model.script([ErrorReply(400, "the model refused")] * 3)
    widget = studio.run(start(studio, asks_the_model(), topic="x")).wait(60)
    assert widget.status == "failed" and widget.error["node_id"] == "answer"
    old = widget.run_id
    served.model.reset()
    from_page(widget, {"type": "retry", "from_node": None})  # the "Retry from answer" button
    assert widget.run_id != old and widget.retry_of == old
    assert widget.wait(60).status == "succeeded", widget.error
    assert len(served.model.requests) == 1  # the retried node only
    assert studio.run_info(widget.run_id)["retry_of"] == old
    assert studio.run_info(old)["status"] == "failed"  # the old run stays as it was
    # a succeeded run cannot be retried: the widget says so, it does not raise
    from_page(widget, {"type": "retry"})
    assert "only a failed or canceled run" in widget.notice
    widget.close()


def test_run_state_joins_a_streamed_message() -> None:
    state = RunState("3")
    piece = {"node_id": "write", "node_title": "write", "node_is_finish": False}
    state.apply(1, "message", {**piece, "content": "Hel"})
    shown = state.snapshot()["messages"]
    state.apply(2, "message", {**piece, "content": "lo"})
    state.apply(3, "message", {**piece, "content": "", "node_is_finish": True})
    state.apply(4, "message", {"node_id": "say", "node_title": "say", "content": "Bye",
                               "node_is_finish": True})
    assert [(m["node_id"], m["content"]) for m in state.messages] == [
        ("write", "Hello"), ("say", "Bye")
    ]
    assert shown == [{"node_id": "write", "node_title": "write", "content": "Hel"}]
