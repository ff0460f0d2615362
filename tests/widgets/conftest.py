"""A real ``coze-lab serve`` with the local model server, and a studio client on it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from coze_lab.config import CozeLab
from coze_lab.notebook.studio import Studio
from coze_lab.services import Runtime
from coze_lab.store import sqlite_url
from coze_lab.testing import ModelServer
from tests.conftest import SANDBOX_CACHE
from tests.support import ServerProcess


@dataclass
class Served:
    server: ServerProcess
    model: ModelServer
    token: str

    def studio(self) -> Studio:
        return Studio(self.server.url, self.token)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("widgets") / "data"
    url = sqlite_url(data / "coze_lab.db")
    admin = Runtime(CozeLab(data_dir=str(data), database_url=url))
    admin.start()
    alice = admin.identity.ensure_user("alice")
    _, token = admin.tokens.create(alice.id, "studio")
    admin.db.dispose()
    with ModelServer() as model:
        env = {
            "COZE_LAB_SANDBOX_CACHE_DIR": str(SANDBOX_CACHE),
            "COZE_LAB_SANDBOX_POOL_SIZE": "1",
            "OPENAI_BASE_URL": model.url,
            "OPENAI_API_KEY": "test-key",
            "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
        }
        server = ServerProcess(data, url, env=env).start()
        try:
            yield Served(server, model, token)
        finally:
            server.stop()


@pytest.fixture
def studio(served: Served) -> Iterator[Studio]:
    client = served.studio()
    yield client
    client.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path
