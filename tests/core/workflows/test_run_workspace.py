"""A run that asked for a workspace of its own keeps it when it continues in a process that
did not start it (a restarted kernel or server, another replica): the engine finds its
``run-<id>/`` folder. The mounts themselves are the sandbox's (tested with the real Deno +
Pyodide sandbox in ``tests/web/test_file_tools.py`` and the notebook ``05_workspace``); here
a runner records what it was given."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import coze_lab as cl
from coze_lab.config import CozeLab
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.services import Runtime
from coze_lab.testing.runner import FakeRunner
from tests.support import FakeClock


class MountsRecorder(FakeRunner):
    """Runs code as FakeRunner does and keeps the mounts of each call."""

    def __init__(self) -> None:
        super().__init__()
        self.mounts: list[Any] = []

    async def run(self, code: str, params: dict[str, Any], **options: Any) -> Any:
        self.mounts.append(options.get("mounts"))
        return await super().run(code, params, **options)


@pytest.fixture
def recorder() -> MountsRecorder:
    return MountsRecorder()


@pytest.fixture
def host(config: CozeLab, clock: FakeClock, recorder: MountsRecorder) -> Iterator[InProcessHost]:
    runtime = Runtime(config, clock=clock, runner=recorder)
    runtime.start()
    local = InProcessHost(runtime, "tester")
    yield local
    local.close()


def test_a_resumed_run_finds_its_workspace_again(
    host: InProcessHost, recorder: MountsRecorder, tmp_path: Path
) -> None:
    wf = cl.Workflow("approve_then_report")
    wf.inputs(title=str)
    wf.question("approve", question="Write the report?", choices=["yes", "no"])

    @wf.code
    def report(title: str) -> dict:
        return {"title": title}

    wf.end(title="{{report.title}}")
    notes = tmp_path / "notes.txt"
    notes.write_text("remember the milk\n")
    run = host.run(wf.validate(), {"title": "Q3"}, workspace=True, files=[notes])
    assert run.status == "interrupted" and run.workspace is not None
    assert run.workspace.name == f"run-{run.id}"
    assert (run.workspace / "input" / "notes.txt").read_text() == "remember the milk\n"

    host.runtime.engine.run_workspaces.clear()  # as in a process that did not start it
    (question,) = run.pending
    run = run.resume(question.event_id, "yes")
    assert run.status == "succeeded", run.error
    (mounts,) = recorder.mounts
    assert {name: (m.path, m.read_only) for name, m in mounts.items()} == {
        "input": (run.workspace / "input", True),
        "scratchpad": (run.workspace / "scratchpad", False),
        "output": (run.workspace / "output", False),
    }
    files = [(i["status"], i["path"]) for i in run.activity()["items"] if i["kind"] == "file"]
    assert files == [("upload", "input/notes.txt")]


def test_a_run_without_a_workspace_gets_no_mounts_and_files_need_one(
    host: InProcessHost, recorder: MountsRecorder, tmp_path: Path
) -> None:
    wf = cl.Workflow("plain")
    wf.inputs(x=int)

    @wf.code
    def double(x: int) -> dict:
        return {"y": 2 * x}

    wf.end(y="{{double.y}}")
    run = host.run(wf.validate(), {"x": 2})
    assert run.outputs == {"y": 4} and run.workspace is None
    assert recorder.mounts == [None]
    with pytest.raises(ValueError, match="workspace=True"):
        host.run(wf.validate(), {"x": 2}, files=[tmp_path / "missing.txt"])
