"""Plugin imports through a real ``coze-lab serve``: the server keeps answering while a
document is read (review finding: a 3 KB document froze it for minutes)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator

import httpx
import psutil
import pytest

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.store import sqlite_url
from tests.core.plugins.documents import fan_out, operations
from tests.support import ServerProcess


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, str]]:
    """A server whose expansion limit is off, so only the reader's deadline stops a fan-out."""
    data_dir = tmp_path_factory.mktemp("imports") / "server-data"
    url = sqlite_url(data_dir / "coze_lab.db")
    runtime = Runtime(CozeLab(data_dir=str(data_dir), database_url=url))
    runtime.start()
    token = runtime.tokens.create(runtime.identity.ensure_user("alice").id, "alice")[1]
    runtime.db.dispose()
    env = {"COZE_LAB_PLUGIN_MAX_SCHEMA_NODES": str(10**12), "COZE_LAB_PLUGIN_IMPORT_TIMEOUT_S": "4"}
    process = ServerProcess(data_dir, url, env=env).start()
    yield process, token
    process.stop()


def import_plugin(served: tuple[ServerProcess, str], document: dict) -> httpx.Response:
    server, token = served
    return httpx.post(
        f"{server.url}/coze_lab/api/plugins",
        json={"openapi": json.dumps(document)},
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )


def test_the_server_answers_while_a_runaway_import_is_read(served) -> None:
    server, _ = served
    outcome: list[httpx.Response] = []
    importing = threading.Thread(target=lambda: outcome.append(import_plugin(served, fan_out(24))))
    importing.start()
    answered_meanwhile = 0
    while importing.is_alive():
        health = httpx.get(f"{server.url}/healthz", timeout=10)  # frozen server: ReadTimeout
        assert health.status_code == 200
        if importing.is_alive():
            answered_meanwhile += 1
    importing.join()
    assert answered_meanwhile >= 3  # the import ran for seconds; the server kept answering
    response = outcome[0]
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == 4000 and "plugin_import_timeout_s" in body["msg"]
    # the server is unharmed: a good import right after works
    good = import_plugin(served, fan_out(4))
    assert good.status_code == 201, good.text


def test_5000_operations_are_a_400_naming_the_limit(served) -> None:
    response = import_plugin(served, operations(5000))
    assert response.status_code == 400
    body = response.json()
    assert "5000 operations; the limit is 300 (setting: plugin_max_operations)" in body["msg"]
    assert body["detail"]["problems"][0]["pointer"] == "/paths"


def runaway_import(tmp_path) -> tuple[ServerProcess, list[psutil.Process]]:
    """A server reading a 30-level fan-out with a deadline far away, and its reader
    processes (the helper and the child it forked) at work."""
    data_dir = tmp_path / "server-data"
    url = sqlite_url(data_dir / "coze_lab.db")
    runtime = Runtime(CozeLab(data_dir=str(data_dir), database_url=url))
    runtime.start()
    token = runtime.tokens.create(runtime.identity.ensure_user("alice").id, "alice")[1]
    runtime.db.dispose()
    env = {
        "COZE_LAB_PLUGIN_MAX_SCHEMA_NODES": str(10**12),
        "COZE_LAB_PLUGIN_IMPORT_TIMEOUT_S": "600",  # only the server's end can end it early
    }
    server = ServerProcess(data_dir, url, env=env).start()
    assert server.proc is not None

    def importing() -> None:
        with contextlib.suppress(httpx.HTTPError):  # the server goes away mid-request
            import_plugin((server, token), fan_out(30))

    threading.Thread(target=importing, daemon=True).start()
    me = psutil.Process(server.proc.pid)
    readers: list[psutil.Process] = []
    for _ in range(600):
        readers = me.children(recursive=True)
        if len(readers) >= 2:
            break
        threading.Event().wait(0.05)
    assert len(readers) >= 2, readers
    return server, readers


def test_sigterm_during_a_runaway_import_stops_the_server_and_its_readers(tmp_path) -> None:
    """Review finding: at 30 levels the server froze at 4 GB and ignored SIGTERM. The
    reading happens in a child process now: the server stops at once, and the reader and
    its forked child go with it instead of reading on to their deadline."""
    server, readers = runaway_import(tmp_path)
    assert server.proc is not None
    try:
        assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
        server.proc.terminate()
        assert server.proc.wait(30) is not None  # not frozen: stopped
        _, alive = psutil.wait_procs(readers, timeout=30)
        assert not alive, alive  # nothing keeps reading (or holding memory) after the server
    finally:
        server.stop()


def test_a_killed_server_leaves_no_reader_behind(tmp_path) -> None:
    """SIGKILL runs no shutdown code: the helper sees its pipe close and kills its child."""
    server, readers = runaway_import(tmp_path)
    try:
        server.kill()
        _, alive = psutil.wait_procs(readers, timeout=30)
        assert not alive, alive
    finally:
        server.stop()
