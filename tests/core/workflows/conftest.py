from __future__ import annotations

from collections.abc import Iterator

import pytest

from coze_lab.config import CozeLab
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.services import Runtime
from coze_lab.testing.runner import FakeRunner
from tests.support import FakeClock


@pytest.fixture
def host(config: CozeLab, clock: FakeClock) -> Iterator[InProcessHost]:
    """The engine on a background loop, as ``wf.run_local`` uses it, with code nodes in a
    plain child Python (these tests are about the engine, not the sandbox)."""
    runtime = Runtime(config, clock=clock, runner=FakeRunner())
    runtime.start()
    local = InProcessHost(runtime, "tester")
    yield local
    local.close()


@pytest.fixture
def sandbox_host(runtime: Runtime) -> Iterator[InProcessHost]:
    """The same with the real Deno + Pyodide sandbox."""
    local = InProcessHost(runtime, "tester")
    yield local
    local.close()
