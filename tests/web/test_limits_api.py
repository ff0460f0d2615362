"""Names, descriptions and workflow sizes are bounded on every write path, over HTTP to a
real ``coze-lab serve`` (review finding: a 100 000-character name and a 3000-node
workflow were accepted)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.store import sqlite_url
from coze_lab.web.requests import parse_bot_edit
from tests.support import ServerProcess

ERROR = {"retry": 0, "timeout": None, "on_error": "fail", "default_output": None}


def workflow(name: str = "w", nodes: int = 1) -> dict[str, Any]:
    """start → ``nodes`` text nodes side by side → end."""
    texts = [
        {
            "id": f"t{i}",
            "type": "text",
            "title": f"t{i}",
            "inputs": {},
            "outputs": {"output": "string"},
            "config": {"template": "{{start.x}}"},
            "error": ERROR,
        }
        for i in range(nodes)
    ]
    return {
        "schema_version": 1,
        "name": name,
        "description": "",
        "inputs": [{"name": "x", "type": "string", "required": True, "description": ""}],
        "nodes": [
            {"id": "start", "type": "start", "outputs": {"x": "string"}, "error": ERROR},
            *texts,
            {"id": "end", "type": "end", "inputs": {"out": "{{t0.output}}"}, "error": ERROR},
        ],
        "edges": [{"source": "start", "target": t["id"]} for t in texts]
        + [{"source": t["id"], "target": "end"} for t in texts],
    }


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    data_dir = tmp_path_factory.mktemp("limits") / "server-data"
    url = sqlite_url(data_dir / "coze_lab.db")
    runtime = Runtime(CozeLab(data_dir=str(data_dir), database_url=url))
    runtime.start()
    user = runtime.identity.ensure_user("alice")
    token = runtime.tokens.create(user.id, "alice")[1]
    space = str(user.workspace_id)
    runtime.db.dispose()
    server = ServerProcess(data_dir, url).start()
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as client:
        client.space_id = space  # type: ignore[attr-defined]
        yield client
    server.stop()


def refused(response: httpx.Response, *words: str) -> None:
    assert response.status_code == 400, response.text[:300]
    body = response.json()
    assert body["code"] == 4000
    for word in words:
        assert word in body["msg"], body["msg"]


def test_a_workflow_name_of_100000_characters_is_a_400(api: httpx.Client) -> None:
    response = api.post("/coze_lab/api/workflows", json=workflow("n" * 100_000))
    refused(response, "the workflow name must be a non-empty string of at most 100 characters")
    assert api.post("/coze_lab/api/workflows", json=workflow("n" * 100)).status_code == 201


def test_a_3000_node_workflow_is_a_400_naming_the_limit(api: httpx.Client) -> None:
    response = api.post("/coze_lab/api/workflows", json=workflow("big", nodes=3000))
    refused(response, "at most 500 nodes, this one 3002", "max_workflow_nodes")
    assert api.post("/coze_lab/api/workflows", json=workflow("fine", nodes=498)).status_code == 201
    listed = api.get("/coze_lab/api/workflows").json()["data"]["workflows"]
    assert "big" not in {w["name"] for w in listed}


def test_workflow_descriptions_titles_and_input_descriptions_are_bounded(
    api: httpx.Client,
) -> None:
    for change in (
        lambda d: d.update(description="d" * 2001),
        lambda d: d["nodes"][1].update(title="t" * 101),
        lambda d: d["inputs"][0].update(description="d" * 2001),
    ):
        definition = copy.deepcopy(workflow("bounded"))
        change(definition)
        refused(api.post("/coze_lab/api/workflows", json=definition))


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"name": "b" * 100_000}, ["name must be a non-empty string of at most 100"]),
        ({"name": "ok", "description": "d" * 2001}, ["description", "2000"]),
        ({"name": "ok", "onboarding_info": {"prologue": "p" * 10_001}}, ["prologue"]),
        (
            {"name": "ok", "onboarding_info": {"suggested_questions": ["q"] * 21}},
            ["suggested_questions allows 20"],
        ),
        ({"name": "ok", "variables": [{"keyword": "k", "description": "d" * 2001}]}, ["2000"]),
        ({"name": "ok", "variables": [{"keyword": "k", "default_value": "v" * 10_001}]}, ["10000"]),
        (
            {"name": "ok", "functions": [{"name": "f", "description": "d" * 2001}]},
            ["functions[0].description"],
        ),
    ],
)
def test_bot_texts_are_bounded(api: httpx.Client, body: dict, words: list[str]) -> None:
    response = api.post("/v1/bot/create", json={"space_id": api.space_id, **body})  # type: ignore[attr-defined]
    refused(response, *words)


def test_a_conversation_name_is_bounded(api: httpx.Client) -> None:
    refused(api.post("/v1/conversation/create", json={"name": "c" * 101}), "at most 100")
    assert api.post("/v1/conversation/create", json={"name": "c" * 100}).status_code == 200


def test_the_limits_are_settings(tmp_path) -> None:
    config = CozeLab(
        data_dir=str(tmp_path),
        max_workflow_nodes=3,
        max_name_chars=5,
        max_description_chars=10,
    )
    runtime = Runtime(config)
    runtime.start()
    try:
        user = runtime.identity.ensure_user("alice")
        with pytest.raises(Exception, match="at most 3 nodes"):
            runtime.workflows.save(user.id, workflow("w", nodes=2))  # start + 2 + end
        runtime.workflows.save(user.id, workflow("w", nodes=1))
        with pytest.raises(Exception, match="at most 5 characters"):
            runtime.bots.create(
                user.id, user.workspace_id, parse_bot_edit({"name": "sixsix"}, create=True)
            )
        with pytest.raises(Exception, match="at most 10 characters"):
            runtime.bots.create(
                user.id,
                user.workspace_id,
                parse_bot_edit({"name": "b", "description": "d" * 11}, create=True),
            )
    finally:
        runtime.db.dispose()
