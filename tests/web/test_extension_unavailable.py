"""A studio that cannot load answers every request with a 503 saying why; the Jupyter
server itself starts and serves as usual."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError


@pytest.fixture
def jp_server_config(tmp_path: Path) -> dict:
    return {
        "ServerApp": {"jpserver_extensions": {"coze_lab": True}},
        "CozeLab": {
            "data_dir": str(tmp_path / "jp-data"),
            # nothing listens on port 1: the database cannot be reached
            "database_url": "postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=2",
        },
    }


async def test_a_studio_whose_database_is_down_answers_503_with_the_reason(jp_fetch) -> None:
    assert (await jp_fetch("api", "status")).code == 200  # Jupyter itself is fine
    for _ in range(2):  # each request tries again, and says why it failed
        with pytest.raises(HTTPClientError) as caught:
            await jp_fetch("coze_lab", "api", "health")
        assert caught.value.code == 503
        body = json.loads(caught.value.response.body)
        assert body["code"] == 5030
        assert body["msg"] == (
            "coze_lab could not start (OperationalError); the server log says why"
        )
