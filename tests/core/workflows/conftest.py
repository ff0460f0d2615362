from __future__ import annotations

from collections.abc import Iterator

import pytest

from coze_lab.notebook.in_process import InProcessHost
from coze_lab.services import Runtime


@pytest.fixture
def host(runtime: Runtime) -> Iterator[InProcessHost]:
    """The runtime's engine on a background loop, as ``wf.run_local`` uses it."""
    local = InProcessHost(runtime, "tester")
    yield local
    local.close()
