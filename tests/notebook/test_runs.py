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
