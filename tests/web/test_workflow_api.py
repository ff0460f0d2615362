"""The Coze workflow API through cozepy against real ``coze-lab serve`` processes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cozepy import Coze, CozeAPIError, TokenAuth, WorkflowEventType

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer
from tests.conftest import SANDBOX_CACHE
from tests.core.workflows.examples import DOC_REVIEW, PARALLEL
from tests.support import ServerProcess, run_cli


@pytest.fixture
def env(model_server: ModelServer) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": model_server.url,
        "OPENAI_API_KEY": "test-key",
        "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
        "COZE_LAB_SANDBOX_CACHE_DIR": str(SANDBOX_CACHE),
        "COZE_LAB_SANDBOX_POOL_SIZE": "1",
        "COZE_LAB_WORKFLOW_LEASE_S": "2",
    }


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "server-data"


@pytest.fixture
def wf_server(data_dir: Path, db_url: str, env: dict[str, str]) -> Iterator[ServerProcess]:
    process = ServerProcess(data_dir, db_url, env=env).start()
    yield process
    process.stop()


@pytest.fixture
def published(data_dir: Path, db_url: str, tmp_path: Path) -> dict[str, str]:
    """The issue's example imported and published with the CLI, and a token for alice."""
    path = tmp_path / "doc_review.json"
    path.write_text(json.dumps(DOC_REVIEW.to_json()))
    args = ["--data-dir", str(data_dir), "--database-url", db_url]
    result = run_cli(*args, "workflow", "import", str(path), "--user", "alice", "--publish")
    assert result.returncode == 0, result.stderr
    workflow_id = result.stdout.strip().splitlines()[-1]
    token = run_cli(*args, "pat", "create", "--user", "alice", "--name", "t").stdout
    return {"workflow_id": workflow_id, "token": token.strip().splitlines()[-1]}


def client(server: ServerProcess, token: str) -> Coze:
    return Coze(auth=TokenAuth(token), base_url=server.url)


def stream_until_interrupt(coze: Coze, workflow_id: str) -> list:
    events = list(
        coze.workflows.runs.stream(
            workflow_id=workflow_id, parameters={"doc": "hello   hello\n world"}
        )
    )
    assert [e.event for e in events][-1] == WorkflowEventType.INTERRUPT, events
    return events


def test_stream_interrupt_resume_done(wf_server, published, model_server) -> None:
    model_server.script(["Hello, twice."])
    coze = client(wf_server, published["token"])
    events = stream_until_interrupt(coze, published["workflow_id"])
    interrupt = events[-1].interrupt
    assert interrupt.node_title == "approve"
    question = events[-2].message
    assert question.content == "Approve this summary?\nHello, twice.\n1. yes\n2. no"
    assert interrupt.interrupt_data.type == 2
    ids = [e.id for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)

    resumed = list(
        coze.workflows.runs.resume(
            workflow_id=published["workflow_id"],
            event_id=interrupt.interrupt_data.event_id,
            resume_data="yes",
            interrupt_type=interrupt.interrupt_data.type,
        )
    )
    messages = [e.message for e in resumed if e.event == WorkflowEventType.MESSAGE]
    assert messages and messages[-1].node_is_finish
    assert json.loads(messages[-1].content) == {
        "summary": "Hello, twice.",
        "words": 3,
        "approved": "yes",
    }
    assert min(e.id for e in resumed) > max(ids)

    runs = httpx.get(
        f"{wf_server.url}/coze_lab/api/runs",
        headers={"Authorization": f"Bearer {published['token']}"},
    ).json()
    execute_id = runs["data"]["runs"][0]["id"]
    history = coze.workflows.runs.run_histories.retrieve(
        workflow_id=published["workflow_id"], execute_id=execute_id
    )
    assert history.execute_status == "Success"
    assert json.loads(history.output)["approved"] == "yes"
    assert history.usage.token_count > 0
    assert history.node_execute_status["clean"].is_finish
    node = coze.workflows.runs.run_histories.execute_nodes.retrieve(
        workflow_id=published["workflow_id"],
        execute_id=execute_id,
        node_execute_uuid=history.node_execute_status["clean"].node_execute_uuid,
    )
    assert node.is_finish and json.loads(node.node_output)["words"] == 3
    with pytest.raises(CozeAPIError) as missing:
        coze.workflows.runs.run_histories.execute_nodes.retrieve(
            workflow_id=published["workflow_id"], execute_id=execute_id, node_execute_uuid="nope"
        )
    assert missing.value.code == 4200


def test_a_second_resume_is_refused(wf_server, published, model_server) -> None:
    coze = client(wf_server, published["token"])
    event_id = stream_until_interrupt(coze, published["workflow_id"])[
        -1
    ].interrupt.interrupt_data.event_id
    list(
        coze.workflows.runs.resume(
            workflow_id=published["workflow_id"],
            event_id=event_id,
            resume_data="no",
            interrupt_type=2,
        )
    )
    with pytest.raises(CozeAPIError) as err:
        list(
            coze.workflows.runs.resume(
                workflow_id=published["workflow_id"],
                event_id=event_id,
                resume_data="yes",
                interrupt_type=2,
            )
        )
    assert err.value.code == 4090


def test_sigkill_between_interrupt_and_resume(
    data_dir, db_url, env, published, model_server
) -> None:
    first = ServerProcess(data_dir, db_url, env=env).start()
    try:
        coze = client(first, published["token"])
        event_id = stream_until_interrupt(coze, published["workflow_id"])[
            -1
        ].interrupt.interrupt_data.event_id
        first.kill()
    finally:
        first.stop()

    second = ServerProcess(data_dir, db_url, env=env).start()
    try:
        pending = httpx.get(
            f"{second.url}/coze_lab/api/interrupts",
            headers={"Authorization": f"Bearer {published['token']}"},
        ).json()
        assert [p["event_id"] for p in pending["data"]["interrupts"]] == [event_id]
        resumed = list(
            client(second, published["token"]).workflows.runs.resume(
                workflow_id=published["workflow_id"],
                event_id=event_id,
                resume_data="yes",
                interrupt_type=2,
            )
        )
        final = json.loads([e for e in resumed if e.message][-1].message.content)
        assert final["approved"] == "yes" and final["words"] == 3
    finally:
        second.stop()


def test_two_replicas_two_concurrent_resumes_one_wins(
    data_dir, db_url, env, published, model_server
) -> None:
    a = ServerProcess(data_dir, db_url, env=env).start()
    b = ServerProcess(data_dir.with_name("replica-b"), db_url, env=env).start()
    try:
        event_id = stream_until_interrupt(client(a, published["token"]), published["workflow_id"])[
            -1
        ].interrupt.interrupt_data.event_id
        outcomes: list[object] = []

        def answer(server: ServerProcess, text: str) -> None:
            try:
                outcomes.append(
                    list(
                        client(server, published["token"]).workflows.runs.resume(
                            workflow_id=published["workflow_id"],
                            event_id=event_id,
                            resume_data=text,
                            interrupt_type=2,
                        )
                    )
                )
            except CozeAPIError as exc:
                outcomes.append(exc)

        threads = [
            threading.Thread(target=answer, args=(a, "yes")),
            threading.Thread(target=answer, args=(b, "no")),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        refused = [o for o in outcomes if isinstance(o, CozeAPIError)]
        assert len(outcomes) == 2 and len(refused) == 1 and refused[0].code == 4090
    finally:
        a.stop()
        b.stop()


def test_sync_run_and_async_run(wf_server, db_url, data_dir, published, tmp_path) -> None:
    admin = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    alice = admin.identity.ensure_user("alice")
    spec = PARALLEL.validate()
    info = admin.workflows.save(alice.id, spec.to_dict())
    admin.workflows.publish(alice.id, info.id)
    admin.db.dispose()
    coze = client(wf_server, published["token"])
    result = coze.workflows.runs.create(workflow_id=str(info.id), parameters={"topic": "x"})
    assert result.execute_id and result.data == "{}"  # paused on its two questions
    body = httpx.post(
        f"{wf_server.url}/v1/workflow/run",
        headers={"Authorization": f"Bearer {published['token']}"},
        json={"workflow_id": str(info.id), "parameters": {"topic": "y"}, "is_async": True},
    ).json()
    assert body["code"] == 0 and body["execute_id"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"workflow_id": "123", "parameters": {}}, 4200),
        ({"workflow_id": "abc"}, 4000),
        ({"parameters": {"doc": "x"}}, 4000),
        ({"workflow_id": "WID", "parameters": {"doc": 5}}, 4000),
        ({"workflow_id": "WID", "parameters": "[1]"}, 4000),
    ],
)
def test_bad_run_requests_are_refused_and_start_nothing(wf_server, published, body, code) -> None:
    body = {k: (published["workflow_id"] if v == "WID" else v) for k, v in body.items()}
    headers = {"Authorization": f"Bearer {published['token']}"}
    response = httpx.post(f"{wf_server.url}/v1/workflow/run", json=body, headers=headers)
    assert 400 <= response.status_code < 500 and response.json()["code"] == code
    # a request for a stream gets its error as Coze answers it: 200 and the JSON body
    streamed = httpx.post(f"{wf_server.url}/v1/workflow/stream_run", json=body, headers=headers)
    assert streamed.status_code == 200
    assert streamed.headers["Content-Type"].startswith("application/json")
    assert streamed.json() == response.json() and not streamed.text.endswith("\n")
    runs = httpx.get(
        f"{wf_server.url}/coze_lab/api/runs",
        headers={"Authorization": f"Bearer {published['token']}"},
    ).json()
    assert runs["data"]["runs"] == []


def test_another_users_workflow_and_runs_are_invisible(
    wf_server, published, data_dir, db_url
) -> None:
    args = ["--data-dir", str(data_dir), "--database-url", db_url]
    bob = run_cli(*args, "pat", "create", "--user", "bob", "--name", "b").stdout
    bob_token = bob.strip().splitlines()[-1]
    with pytest.raises(CozeAPIError) as err:
        list(
            client(wf_server, bob_token).workflows.runs.stream(
                workflow_id=published["workflow_id"], parameters={"doc": "x"}
            )
        )
    assert err.value.code == 4200
    listed = httpx.get(
        f"{wf_server.url}/coze_lab/api/workflows", headers={"Authorization": f"Bearer {bob_token}"}
    ).json()
    assert listed["data"]["workflows"] == []


def test_undeclared_parameters_are_ignored_on_the_coze_api_only(
    wf_server, published, model_server
) -> None:
    model_server.script(["Fine."])
    coze = client(wf_server, published["token"])
    headers = {"Authorization": f"Bearer {published['token']}"}
    events = list(
        coze.workflows.runs.stream(
            workflow_id=published["workflow_id"], parameters={"doc": "a b", "norco": "JS"}
        )
    )
    assert events[-1].event == WorkflowEventType.INTERRUPT
    [run] = httpx.get(f"{wf_server.url}/coze_lab/api/runs", headers=headers).json()["data"]["runs"]
    assert run["inputs"] == {"doc": "a b", "reviewer": "anonymous"}
    trace = httpx.get(
        f"{wf_server.url}/coze_lab/api/runs/{run['id']}/events", headers=headers, timeout=30
    ).text
    assert trace.startswith("id: 1\nevent: note\n") and "['norco']" in trace
    # the studio API (like the notebook API) catches the typo
    refused = httpx.post(
        f"{wf_server.url}/coze_lab/api/workflows/{published['workflow_id']}/runs",
        json={"parameters": {"doc": "x", "norco": "JS"}},
        headers=headers,
    )
    assert refused.status_code == 400 and "['norco']" in refused.json()["msg"]


def two_versions(data_dir: Path, db_url: str) -> tuple[str, str]:
    """A workflow of alice's published twice (v1 answers 'one: …', v2 'two: …') and a
    never-published one; their ids."""
    import coze_lab as cl

    admin = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    alice = admin.identity.ensure_user("alice")
    ids = []
    for name, texts in (("greeter", ("one", "two")), ("sketch", ())):
        for text in texts or ("draft",):
            wf = cl.Workflow(name, description=f"says {text}")
            wf.inputs(who=str)
            wf.text("say", template=text + ": {{start.who}}")
            wf.end(said="{{say.output}}")
            info = admin.workflows.save(alice.id, wf.to_json())
            if texts:
                admin.workflows.publish(alice.id, info.id)
        ids.append(str(info.id))
    admin.db.dispose()
    return ids[0], ids[1]


def test_list_retrieve_and_versions_of_workflows(wf_server, published, data_dir, db_url) -> None:
    greeter, sketch = two_versions(data_dir, db_url)
    coze = client(wf_server, published["token"])
    listed = list(coze.workflows.list())
    assert [w.workflow_id for w in listed] == [sketch, greeter, published["workflow_id"]]
    assert listed[1].workflow_name == "greeter" and listed[1].description == "says two"
    assert listed[1].creator.name == "alice" and listed[1].app_id == ""
    online = coze.workflows.list(publish_status="published_online")
    assert [w.workflow_id for w in online] == [greeter, published["workflow_id"]]
    drafts = coze.workflows.list(publish_status="unpublished_draft")
    assert [w.workflow_id for w in drafts] == [sketch]
    assert list(coze.workflows.list(workflow_mode="chatflow")) == []
    paged = coze.workflows.list(page_size=1)
    assert [w.workflow_id for w in paged] == [sketch, greeter, published["workflow_id"]]

    detail = coze.workflows.retrieve(workflow_id=greeter).workflow_detail
    assert detail.workflow_name == "greeter" and detail.created_at and detail.updated_at

    versions = list(coze.workflows.versions.list(workflow_id=greeter, page_size=1))
    assert [v.version for v in versions] == ["2", "1"]
    assert versions[0].workflow_id == greeter and versions[0].creator.name == "alice"
    assert versions[1].description == "says one" and int(versions[1].created_at) > 0
    assert list(coze.workflows.versions.list(workflow_id=sketch)) == []

    with pytest.raises(CozeAPIError) as missing:
        coze.workflows.retrieve(workflow_id="123")
    assert missing.value.code == 4200
    bob = run_cli(
        "--data-dir", str(data_dir), "--database-url", db_url,
        "pat", "create", "--user", "bob", "--name", "b",
    ).stdout.split()[-1]  # fmt: skip
    with pytest.raises(CozeAPIError) as hidden:
        client(wf_server, bob).workflows.versions.list(workflow_id=greeter)
    assert hidden.value.code == 4200
    assert list(client(wf_server, bob).workflows.list()) == []


def test_running_a_given_version_and_the_older_run_history(
    wf_server, published, data_dir, db_url
) -> None:
    greeter, sketch = two_versions(data_dir, db_url)
    coze = client(wf_server, published["token"])
    headers = {"Authorization": f"Bearer {published['token']}"}
    newest = coze.workflows.runs.create(workflow_id=greeter, parameters={"who": "Ann"})
    assert json.loads(newest.data) == {"said": "two: Ann"}
    body = {"workflow_id": greeter, "parameters": {"who": "Ann"}, "version": "1"}
    first = httpx.post(f"{wf_server.url}/v1/workflow/run", json=body, headers=headers).json()
    assert first["code"] == 0 and json.loads(first["data"]) == {"said": "one: Ann"}
    streamed = httpx.post(
        f"{wf_server.url}/v1/workflow/stream_run",
        json={**body, "version": "v1"},
        headers=headers,
        timeout=30,
    ).text
    assert "one: Ann" in streamed and "two: Ann" not in streamed
    missing = httpx.post(
        f"{wf_server.url}/v1/workflow/run", json={**body, "version": "3"}, headers=headers
    ).json()
    assert missing["code"] == 4200 and "version 3" in missing["msg"]
    never = httpx.post(
        f"{wf_server.url}/v1/workflow/run",
        json={"workflow_id": sketch, "parameters": {"who": "x"}},
        headers=headers,
    ).json()
    assert never["code"] == 4200 and "publish" in never["msg"]

    history = httpx.get(
        f"{wf_server.url}/v1/workflow/get_run_history",
        params={"workflow_id": greeter, "execute_id": first["execute_id"]},
        headers=headers,
    ).json()
    assert history["code"] == 0
    [record] = history["data"]
    assert record["execute_status"] == "Success"
    assert json.loads(record["output"]) == {"said": "one: Ann"}
    same = coze.workflows.runs.run_histories.retrieve(
        workflow_id=greeter, execute_id=first["execute_id"]
    )
    assert same.output == record["output"] and same.execute_id == record["execute_id"]
    wrong = httpx.get(
        f"{wf_server.url}/v1/workflow/get_run_history",
        params={"workflow_id": published["workflow_id"], "execute_id": first["execute_id"]},
        headers=headers,
    ).json()
    assert wrong["code"] == 4000
