"""Request bodies a hostile client sends, over real loopback HTTP to ``coze-lab serve``:
deep or huge JSON, bodies over the cap with and without ``Content-Length``, and what
happens to a kept-alive connection after an early error."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from coze_lab.config import CozeLab
from coze_lab.runtime import Runtime
from coze_lab.store import sqlite_url
from tests.support import ServerProcess

MAX_JSON = 300_000
MAX_UPLOAD = 300_000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, str]]:
    """One server (SQLite) with small caps, and a token of its user."""
    data_dir = tmp_path_factory.mktemp("bodies") / "server-data"
    url = sqlite_url(data_dir / "coze_lab.db")
    runtime = Runtime(CozeLab(data_dir=str(data_dir), database_url=url))
    runtime.start()
    user = runtime.identity.ensure_user("alice")
    token = runtime.tokens.create(user.id, "alice")[1]
    runtime.db.dispose()
    env = {
        "COZE_LAB_MAX_JSON_BYTES": str(MAX_JSON),
        "COZE_LAB_MAX_UPLOAD_BYTES": str(MAX_UPLOAD),
    }
    process = ServerProcess(data_dir, url, env=env).start()
    yield process, token
    process.stop()


def post_json(served: tuple[ServerProcess, str], path: str, content: bytes) -> httpx.Response:
    server, token = served
    return httpx.post(
        server.url + path,
        content=content,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=30,
    )


def test_json_nested_100000_deep_is_a_400(served) -> None:
    deep = b'{"name": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    response = post_json(served, "/v1/conversation/create", deep)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == 4000 and "nested deeper than 100 levels" in body["msg"]


def test_integer_with_5000_digits_is_a_400(served) -> None:
    huge = b'{"meta_data": {"n": ' + b"7" * 5000 + b"}}"
    response = post_json(served, "/v1/conversation/create", huge)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == 4000 and "more than 4300 digits" in body["msg"]


def test_a_json_string_inside_the_body_is_parsed_with_the_same_bounds(served) -> None:
    content = "[" * 5000 + "]" * 5000
    message = {"role": "user", "content": content, "content_type": "object_string"}
    response = post_json(
        served, "/v1/conversation/create", json.dumps({"messages": [message]}).encode()
    )
    assert response.status_code == 400
    assert "object_string content is nested deeper" in response.json()["msg"]
