from __future__ import annotations

from collections.abc import Iterator

import pytest

from coze_lab.local import LocalHost
from coze_lab.runtime import Runtime


@pytest.fixture
def host(runtime: Runtime) -> Iterator[LocalHost]:
    """The runtime's engine on a background loop, as ``wf.run_local`` uses it."""
    local = LocalHost(runtime, "tester")
    yield local
    local.close()
