"""The studio workflow API over HTTP, against a real ``coze-lab serve``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cozepy import Coze, TokenAuth, WorkflowEventType

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from tests.conftest import SANDBOX_CACHE
from tests.core.workflows.composites import OUTER
from tests.core.workflows.examples import PARALLEL
from tests.support import ServerProcess


@pytest.fixture
def served(tmp_path: Path, db_url: str) -> Iterator[tuple[ServerProcess, str, Runtime]]:
    data = tmp_path / "data"
    env = {"COZE_LAB_SANDBOX_CACHE_DIR": str(SANDBOX_CACHE), "COZE_LAB_SANDBOX_POOL_SIZE": "1"}
    admin = Runtime(CozeLab(data_dir=str(data), database_url=db_url))
    admin.start()
    alice = admin.identity.ensure_user("alice")
    _, token = admin.tokens.create(alice.id, "studio")
    server = ServerProcess(data, db_url, env=env).start()
    yield server, token, admin
    server.stop()
    admin.db.dispose()


def api(server: ServerProcess, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=server.url + "/coze_lab/api",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )


def sse(response: httpx.Response) -> list[tuple[int, str, dict]]:
    events = []
    for block in response.text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
    return events


def test_save_publish_run_draft_answer_from_the_list_and_replay(served) -> None:
    server, token, _ = served
    with api(server, token) as client:
        saved = client.post("/workflows", json={"definition": PARALLEL.to_json()})
        assert saved.status_code == 201
        workflow_id = saved.json()["data"]["id"]
        assert saved.json()["data"]["published_version"] is None
        assert client.post(f"/workflows/{workflow_id}/publish").json()["data"] == {"version": 1}

        started = client.post(
            f"/workflows/{workflow_id}/runs", json={"parameters": {"topic": "launch"}}
        )
        run_id = started.json()["data"]["execute_id"]
        events = sse(client.get(f"/runs/{run_id}/events"))
        assert [e for _, e, _ in events][-1] == "interrupted"
        assert [e for _, e, _ in events].count("interrupt") == 2

        pending = client.get("/interrupts", params={"run_id": run_id}).json()["data"]
        by_node = {p["node_id"]: p["event_id"] for p in pending["interrupts"]}
        assert set(by_node) == {"legal", "brand"}
        for node, answer in (("legal", "ok"), ("brand", "fine")):
            reply = client.post(f"/interrupts/{by_node[node]}/resume", json={"data": answer})
            assert reply.json()["data"]["execute_id"] == run_id
        again = client.post(f"/interrupts/{by_node['legal']}/resume", json={"data": "x"})
        assert again.status_code == 409 and again.json()["code"] == 4090

        last_seen = events[-1][0]
        replay = sse(
            client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": str(last_seen)})
        )
        assert all(seq > last_seen for seq, _, _ in replay)
        assert replay[-1][1] == "done"
        assert replay[-1][2]["outputs"] == {"legal": "ok", "brand": "fine"}

        trace = client.get(f"/runs/{run_id}").json()["data"]
        assert trace["status"] == "succeeded"
        assert {n["node_id"]: n["status"] for n in trace["nodes"]}["legal"] == "succeeded"
        listed = client.get("/runs", params={"workflow_id": workflow_id}).json()["data"]
        assert [r["id"] for r in listed["runs"]] == [run_id]


def test_cancel_over_http(served) -> None:
    server, token, _ = served
    with api(server, token) as client:
        workflow_id = client.post(
            "/workflows", json={"definition": PARALLEL.to_json(), "publish": True}
        ).json()["data"]["id"]
        run_id = client.post(
            f"/workflows/{workflow_id}/runs", json={"parameters": {"topic": "x"}}
        ).json()["data"]["execute_id"]
        sse(client.get(f"/runs/{run_id}/events"))
        assert client.post(f"/runs/{run_id}/cancel").json()["data"] == {"canceled": True}
        assert client.get(f"/runs/{run_id}").json()["data"]["status"] == "canceled"
        assert client.get("/interrupts").json()["data"]["interrupts"] == []
        assert client.delete(f"/workflows/{workflow_id}").status_code == 200
        assert client.get(f"/workflows/{workflow_id}").status_code == 404


def test_a_question_inside_a_subworkflow_over_the_coze_api(served) -> None:
    server, token, admin = served
    alice = admin.identity.ensure_user("alice")
    info = admin.workflows.save(alice.id, OUTER.to_json())
    admin.workflows.publish(alice.id, info.id)
    coze = Coze(auth=TokenAuth(token), base_url=server.url)
    events = list(coze.workflows.runs.stream(workflow_id=str(info.id), parameters={"topic": "tea"}))
    interrupt = events[-1].interrupt
    assert events[-1].event == WorkflowEventType.INTERRUPT
    assert events[-2].message.content == "What do you think of tea?"
    resumed = list(
        coze.workflows.runs.resume(
            workflow_id=str(info.id),
            event_id=interrupt.interrupt_data.event_id,
            resume_data="lovely",
            interrupt_type=interrupt.interrupt_data.type,
        )
    )
    final = [e.message for e in resumed if e.event == WorkflowEventType.MESSAGE][-1]
    assert json.loads(final.content) == {"reply": "you said: lovely"}
