"""Retrying a failed run from its failed node through a real ``coze-lab serve``: the studio
API and the notebook's run widget, with the real sandbox and the local model server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import coze_lab as cl
from coze_lab.config import CozeLab
from coze_lab.core.workflows.dsl import code_change
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer
from tests.conftest import SANDBOX_CACHE
from tests.core.workflows.examples import FRAGILE, parse_fixed
from tests.support import ServerProcess


@pytest.fixture
def lab(tmp_path: Path, db_url: str) -> Iterator[tuple[ServerProcess, ModelServer, str, str]]:
    data = tmp_path / "data"
    admin = Runtime(CozeLab(data_dir=str(data), database_url=db_url))
    admin.start()
    _, alice = admin.tokens.create(admin.identity.ensure_user("alice").id, "studio")
    _, bob = admin.tokens.create(admin.identity.ensure_user("bob").id, "studio")
    admin.db.dispose()
    with ModelServer() as model:
        env = {
            "COZE_LAB_SANDBOX_CACHE_DIR": str(SANDBOX_CACHE),
            "COZE_LAB_SANDBOX_POOL_SIZE": "1",
            "OPENAI_BASE_URL": model.url,
            "OPENAI_API_KEY": "test-key",
            "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
        }
        server = ServerProcess(data, db_url, env=env).start()
        try:
            yield server, model, alice, bob
        finally:
            server.stop()


def api(server: ServerProcess, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=server.url + "/coze_lab/api",
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


def finished(client: httpx.Client, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        run = client.get(f"/runs/{run_id}").json()["data"]
        if run["status"] not in ("running",):
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.1)


def failed_run(client: httpx.Client, model: ModelServer) -> tuple[str, str]:
    saved = client.post("/workflows", json={"definition": FRAGILE.to_json()}).json()["data"]
    model.script(["Two short words."])
    started = client.post(f"/workflows/{saved['id']}/runs", json={"parameters": {"doc": "d"}})
    run_id = started.json()["data"]["execute_id"]
    run = finished(client, run_id)
    assert run["status"] == "failed" and run["error"]["node_id"] == "parse", run
    return saved["id"], run_id


def test_retry_through_the_studio_api(lab) -> None:
    server, model, alice, bob = lab
    with api(server, alice) as client, api(server, bob) as other:
        _, run_id = failed_run(client, model)
        assert len(model.requests) == 1
        change = code_change(parse_fixed)
        # refusals: another user's run, an unknown node, a change to another node
        assert other.post(f"/runs/{run_id}/retry", json={}).status_code == 404
        unknown = client.post(f"/runs/{run_id}/retry", json={"from_node": "nope"})
        assert unknown.status_code == 400 and "'nope' is not in run" in unknown.json()["msg"]
        wrong = client.post(
            f"/runs/{run_id}/retry",
            json={"from_node": "parse", "node_changes": {"measure": change}},
        )
        assert wrong.status_code == 400 and "only the retried node" in wrong.json()["msg"]
        bad = client.post(f"/runs/{run_id}/retry", json={"node_changes": ["x"]})
        assert bad.status_code == 400

        retried = client.post(
            f"/runs/{run_id}/retry", json={"from_node": "parse", "node_changes": {"parse": change}}
        )
        assert retried.status_code == 201, retried.text
        new_id = retried.json()["data"]["execute_id"]
        run = finished(client, new_id)
        assert run["status"] == "succeeded", run["error"]
        assert run["retry_of"] == run_id
        assert run["outputs"]["words"] == 3
        assert len(model.requests) == 1  # the LLM node before the fixed one was not called
        old = client.get(f"/runs/{run_id}").json()["data"]
        assert old["retry_of"] is None and old["status"] == "failed"
        by_node = {n["node_id"]: n for n in old["nodes"]}
        for node in run["nodes"]:
            if node["node_id"] in ("given", "summarize", "measure"):
                assert node == by_node[node["node_id"]]

        # a succeeded run is not retried
        again = client.post(f"/runs/{new_id}/retry", json={})
        assert again.status_code == 409 and "only a failed or canceled run" in again.json()["msg"]


def test_retry_from_the_notebook_run_widget(lab) -> None:
    server, model, alice, _ = lab
    with api(server, alice) as client:
        _, run_id = failed_run(client, model)
    studio = cl.connect(server.url, alice)
    widget = studio.run(run_id)
    retried = widget.retry(code=parse_fixed)  # from the node it failed on
    try:
        retried.wait(60)
        assert retried.status == "succeeded"
        assert studio.run_info(retried.id)["retry_of"] == run_id
    finally:
        widget.close()
        retried.close()
    assert len(model.requests) == 1
