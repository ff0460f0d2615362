from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coze_lab.config import CozeLab
from coze_lab.core.identity import UserInfo
from coze_lab.core.plugins import PluginService
from coze_lab.services import Runtime
from tests.core.plugins.servers import PluginTestServer
from tests.support import FakeClock

LAB_URL = "http://lab.test/"


@pytest.fixture
def api() -> Iterator[PluginTestServer]:
    with PluginTestServer() as server:
        yield server


@pytest.fixture
def plugin_runtime(tmp_path: Path, db_url: str, clock: FakeClock) -> Iterator[Runtime]:
    """A runtime whose outbound calls may reach loopback (the test servers) only."""
    config = CozeLab(
        data_dir=str(tmp_path / "data"),
        database_url=db_url,
        outbound_allow=["127.0.0.1/32"],
        public_url=LAB_URL,
    )
    runtime = Runtime(config, clock=clock)
    runtime.start()
    yield runtime
    runtime.db.dispose()


@pytest.fixture
def plugins(plugin_runtime: Runtime) -> PluginService:
    service = plugin_runtime.plugins
    service.settings = type(service.settings)(
        timeout_s=5.0, retries=2, backoff_s=0.0, max_output_chars=2000
    )
    return service


@pytest.fixture
def alice(plugin_runtime: Runtime) -> UserInfo:
    return plugin_runtime.identity.ensure_user("alice")


@pytest.fixture
def bob(plugin_runtime: Runtime) -> UserInfo:
    return plugin_runtime.identity.ensure_user("bob")
