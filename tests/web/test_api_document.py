"""The API matches its own document (issue 11 item 6): schemathesis against ``openapi.json``
of a real ``coze-lab serve``, and one test per finding it made."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import jsonschema
import pytest

from coze_lab.store import sqlite_url
from coze_lab.web.routes import LIVENESS, ROUTES, SERVICE_ROOT
from tests.support import ServerProcess, run_cli

#: what schemathesis checks (tests/web/schemathesis.toml): every check but the timed and
#: the stateful ones; positive_data_acceptance is off for the operations (named there, with
#: why) whose valid input JSON Schema cannot state, the data checks for the event streams
CONFIG = Path(__file__).with_name("schemathesis.toml")


@dataclass
class Api:
    url: str
    token: str

    def get(self, path: str, **kwargs: object) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def request(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.request(method, self.url + path, headers=headers, timeout=30, **kwargs)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    data = tmp_path_factory.mktemp("api-document") / "data"
    url = sqlite_url(data / "coze_lab.db")
    args = ["--data-dir", str(data), "--database-url", url]
    token = run_cli(*args, "pat", "create", "--user", "st", "--name", "st").stdout.split()[-1]
    server = ServerProcess(data, url).start()
    try:
        yield Api(server.url, token)
    finally:
        server.stop()


def test_schemathesis_finds_no_server_error_and_no_mismatch_with_the_document(
    api: Api, tmp_path: Path
) -> None:
    """Every operation, a few examples each, a fixed seed (about 40 s)."""
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(CONFIG),
        "run",
        api.url + "/openapi.json",
        "--header",
        f"Authorization: Bearer {api.token}",
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        "3",
        "--seed",
        "20261201",
        "--continue-on-failure",
        "--request-timeout",
        "20",
        "--no-shrink",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    # every operation of the document was tested
    operations = sum(len(route.ops) for route in (*ROUTES, LIVENESS, SERVICE_ROOT))
    assert f"Tested: {operations}\n" in result.stdout, result.stdout[-2000:]


def test_ids_the_document_allows_are_ids_the_server_takes(api: Api) -> None:
    doc = api.get("/openapi.json").json()
    [path_id] = [
        p["schema"]
        for p in doc["paths"]["/coze_lab/api/runs/{run_id}"]["get"]["parameters"]
        if p["name"] == "run_id"
    ]
    pattern = re.compile(path_id["pattern"])
    refused_ids = ("0", "00", "01", "-1", "9000000000000000000", "9223372036854775807", "1e3")
    for refused in (*refused_ids, "9223372036854775808", "99999999999999999999"):
        assert not pattern.search(refused), refused
        assert api.get(f"/coze_lab/api/runs/{refused}").status_code == 400
    for allowed in ("1", "7391234567890123456", "8999999999999999999"):
        assert pattern.search(allowed), allowed
        assert api.get(f"/coze_lab/api/runs/{allowed}").status_code == 404  # well-formed


def test_a_405_answer_carries_allow(api: Api) -> None:
    answer = api.request("PATCH", "/v3/chat")
    assert answer.status_code == 405 and answer.headers["Allow"] == "POST"
    assert answer.json()["code"] == 4000
    assert api.request("TRACE", "/coze_lab/api/bots/1").headers["Allow"] == "GET, PUT, DELETE"
    # each message endpoint serves only its own method
    assert (
        api.get("/v1/conversation/message/delete?conversation_id=1&message_id=1").headers["Allow"]
        == "POST"
    )


def test_openapi_json_matches_its_own_schema(api: Api) -> None:
    doc = api.get("/coze_lab/openapi.json").json()
    response = doc["paths"]["/coze_lab/openapi.json"]["get"]["responses"]["200"]
    jsonschema.validate(doc, response["content"]["application/json"]["schema"])
    assert doc["paths"]["/healthz"]["get"]["security"] == []


def test_token_creation_documents_its_201(api: Api) -> None:
    doc = api.get("/openapi.json").json()
    assert set(doc["paths"]["/coze_lab/api/tokens"]["post"]["responses"]) == {"201", "4XX"}
    made = api.request("POST", "/coze_lab/api/tokens", json={"name": "documented"})
    assert made.status_code == 201 and made.json()["data"]["token"].startswith("pat_")
