"""Fixtures shared by the whole suite.

Storage tests run on SQLite always, on PostgreSQL too when ``COZE_LAB_TEST_DATABASE_URL``
is set and on MySQL/MariaDB when ``COZE_LAB_TEST_MYSQL_URL`` is set (CI sets both); each
such test gets its own schema or database, dropped afterwards. A configured server that cannot be reached fails the test.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from coze_lab.config import CozeLab
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.services import Runtime
from coze_lab.store import sqlite_url
from coze_lab.testing import ModelServer
from tests.support import FakeClock, ServerProcess, pg_schema

pytest_plugins = ["pytest_jupyter.jupyter_server"]

PG_URL = os.environ.get("COZE_LAB_TEST_DATABASE_URL", "")
MYSQL_URL = os.environ.get("COZE_LAB_TEST_MYSQL_URL", "")
BACKENDS = ["sqlite"] + (["postgresql"] if PG_URL else []) + (["mysql"] if MYSQL_URL else [])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``postgresql`` exist only when PostgreSQL is configured (as the
    ``postgresql`` cases of ``db_url`` do): deselected, not skipped, without it; with it, a
    server that cannot be reached fails them. Tests marked ``server_db`` have no SQLite
    case (what they test, such as a server connection, SQLite does not have)."""

    def absent(item: pytest.Item) -> bool:
        if item.get_closest_marker("postgresql") is not None and not PG_URL:
            return True
        params = getattr(item, "callspec", None)
        on_sqlite = params is not None and params.params.get("db_url") == "sqlite"
        return on_sqlite and item.get_closest_marker("server_db") is not None

    kept = [item for item in items if not absent(item)]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database on each backend under test."""
    if request.param == "sqlite":
        yield sqlite_url(tmp_path / "db" / "coze_lab.db")
        return
    if request.param == "mysql":
        yield from _mysql_database()
        return
    with pg_schema(PG_URL, "t_") as url:
        yield url


def _mysql_database() -> Iterator[str]:
    name = "t_" + secrets.token_hex(6)
    admin = create_engine(MYSQL_URL)
    with admin.begin() as connection:
        connection.execute(text(f"create database `{name}`"))
    try:
        yield make_url(MYSQL_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f"drop database `{name}`"))
        admin.dispose()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


SANDBOX_CACHE = Path(
    os.environ.get("COZE_LAB_TEST_SANDBOX_CACHE", Path(__file__).parents[1] / ".cache" / "sandbox")
)


@pytest.fixture
def config(tmp_path: Path, db_url: str) -> CozeLab:
    return CozeLab(
        data_dir=str(tmp_path / "data"),
        database_url=db_url,
        sandbox_cache_dir=str(SANDBOX_CACHE),
        sandbox_pool_size=1,
    )


@pytest.fixture
def runtime(config: CozeLab, clock: FakeClock) -> Iterator[Runtime]:
    rt = Runtime(config, clock=clock)
    rt.start()
    yield rt
    rt.db.dispose()


@pytest.fixture
def server(tmp_path: Path, db_url: str) -> Iterator[ServerProcess]:
    """A real ``coze-lab serve`` subprocess on a free loopback port."""
    process = ServerProcess(tmp_path / "server-data", db_url).start()
    yield process
    process.stop()


# ---- pytest-jupyter: the extension inside a real jupyter_server --------------------------
@pytest.fixture
def jp_server_config(tmp_path: Path, db_url: str) -> dict:
    return {
        "ServerApp": {"jpserver_extensions": {"coze_lab": True}},
        "CozeLab": {
            "data_dir": str(tmp_path / "jp-data"),
            "database_url": db_url,
            "local_user": "lab-owner",
        },
    }


# ---- a model for in-process agents (chats, cl.Bot) -----------------------------------------
@pytest.fixture
def model_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelServer]:
    """The local model server as the environment's default model (``OPENAI_*``)."""
    with ModelServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("COZE_LAB_DEFAULT_MODEL", "coze-lab-demo")
        yield server


@pytest.fixture
def agent_host(runtime: Runtime, model_env: ModelServer) -> Iterator[InProcessHost]:
    """The runtime on a background loop (as ``cl.Bot`` uses it), with the model server."""
    local = InProcessHost(runtime, "agent")
    yield local
    local.close()
