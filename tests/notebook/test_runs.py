"""``cl.runs``: pending questions, resume, list and cancel through the server cl.connect() found."""

from __future__ import annotations

import time

import coze_lab as cl
from tests.widgets.conftest import Served


def _wait(predicate, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_pending_resume_list_and_cancel(served: Served) -> None:
    cl.connect(served.server.url, served.token)
    wf = cl.Workflow("runs_module")
    wf.inputs(topic=str)
    wf.question("ok", question="Ship {{start.topic}}?", choices=["yes", "no"])
    wf.end(answer="{{ok.answer}}")
    studio = cl.connect(served.server.url, served.token)
    saved = studio.save_workflow(wf)
    first = studio.start_run(saved["id"], {"topic": "a"})
    second = studio.start_run(saved["id"], {"topic": "b"})
    _wait(lambda: len(cl.runs.pending()) >= 2)
    mine = cl.runs.pending(first)
    assert [q["data"]["question"] for q in mine] == ["Ship a?"]
    cl.runs.resume(mine[0]["event_id"], "yes")
    _wait(lambda: studio.run_info(first)["status"] == "succeeded")
    widget = cl.runs.get(first)  # the live widget catches up with the finished run
    try:
        _wait(lambda: widget.status == "succeeded")
    finally:
        widget.close()
    assert {r["id"] for r in cl.runs.list(saved["id"])} >= {first, second}
    assert cl.runs.cancel(second) is True
    assert [q for q in cl.runs.pending() if str(q["run_id"]) in (first, second)] == []


def test_every_pending_list_gives_the_same_question_type(served: Served, tmp_path) -> None:
    """cl.runs.pending(), a live run's widget and wf.run_local() all give Question objects
    with the studio API's fields, readable as keys and as attributes (issue 16)."""
    from coze_lab.config import CozeLab
    from coze_lab.notebook.in_process import InProcessHost
    from coze_lab.notebook.questions import Question
    from coze_lab.services import Runtime
    from coze_lab.store import sqlite_url

    wf = cl.Workflow("one_type")
    wf.inputs(topic=str)
    wf.question("ok", question="Ship {{start.topic}}?", choices=["yes", "no"])
    wf.end(answer="{{ok.answer}}")
    studio = cl.connect(served.server.url, served.token)
    saved = studio.save_workflow(wf)
    run_id = studio.start_run(saved["id"], {"topic": "a"})
    _wait(lambda: len(cl.runs.pending(run_id)) == 1)
    [served_question] = cl.runs.pending(run_id)
    widget = cl.runs.get(run_id)
    try:
        _wait(lambda: len(widget.pending) == 1)
        [widget_question] = widget.pending
    finally:
        widget.close()
    runtime = Runtime(CozeLab(data_dir=str(tmp_path), database_url=sqlite_url(tmp_path / "db")))
    runtime.start()
    host = InProcessHost(runtime, "local")
    try:
        [local_question] = host.run(wf.validate(), {"topic": "a"}).pending
    finally:
        host.close()
    for question in (served_question, widget_question, local_question):
        assert isinstance(question, Question), type(question)
        assert question.event_id == question["event_id"] and isinstance(question.event_id, str)
        assert question.data == {"question": "Ship a?", "choices": ["yes", "no"]}
        assert question.node_id == "ok"
    # a live widget knows what the run's interrupt event said; the lists know the rest too
    assert {"event_id", "node_id", "type", "data"} <= widget_question.keys()
    assert served_question.keys() == local_question.keys()
