"""The studio table API through a real ``coze-lab serve``."""

from __future__ import annotations

import httpx

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from tests.support import ServerProcess


def _tokens(server: ServerProcess) -> dict[str, str]:
    runtime = Runtime(CozeLab(data_dir=str(server.data_dir), database_url=server.database_url))
    try:
        return {
            name: runtime.tokens.create(runtime.identity.ensure_user(name).id, "t")[1]
            for name in ("alice", "bob")
        }
    finally:
        runtime.db.dispose()


def test_tables_rows_publish_and_isolation(server: ServerProcess) -> None:
    tokens = _tokens(server)

    def call(method: str, path: str, who: str = "alice", **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {tokens[who]}"}
        return httpx.request(method, server.url + path, headers=headers, timeout=30, **kwargs)

    fields = [{"name": "title", "required": True}, {"name": "stars", "type": "number"}]
    made = call("POST", "/coze_lab/api/tables", json={"name": "books", "fields": fields})
    assert made.status_code == 201, made.text
    table_id = made.json()["data"]["id"]
    assert (
        call("POST", "/coze_lab/api/tables", json={"name": "books", "fields": fields}).json()[
            "code"
        ]
        == 4090
    )
    added = call(
        "POST",
        f"/coze_lab/api/tables/{table_id}/rows",
        json={"values": {"title": "Dune", "stars": 5}},
    )
    assert added.status_code == 201
    rows = call("GET", f"/coze_lab/api/tables/{table_id}/rows").json()["data"]["rows"]
    assert [(r["title"], r["stars"]) for r in rows] == [("Dune", 5)]
    assert (
        call("GET", f"/coze_lab/api/tables/{table_id}/rows", params={"scene": "online"}).status_code
        == 404
    )
    published = call("POST", f"/coze_lab/api/tables/{table_id}/publish").json()["data"]
    assert published["published"] is True
    assert (
        call("GET", f"/coze_lab/api/tables/{table_id}/rows", params={"scene": "online"}).json()[
            "data"
        ]["rows"]
        == []
    )
    more = call(
        "POST",
        f"/coze_lab/api/tables/{table_id}/fields",
        json={"fields": [{"name": "read", "type": "boolean"}]},
    ).json()["data"]
    assert [f["name"] for f in more["fields"]] == ["title", "stars", "read"]
    for bad in (
        {"name": "Bad Name", "fields": fields},
        {"name": "x", "fields": []},
        {"name": "y", "fields": [{"name": "id"}]},
        {"name": "z", "fields": [{"name": "a", "type": "blob"}]},
    ):
        response = call("POST", "/coze_lab/api/tables", json=bad)
        assert response.status_code == 400 and response.json()["code"] == 4000, bad
    bad_row = call("POST", f"/coze_lab/api/tables/{table_id}/rows", json={"values": {"stars": 1}})
    assert bad_row.status_code == 400
    for method, path in (
        ("GET", f"/coze_lab/api/tables/{table_id}"),
        ("GET", f"/coze_lab/api/tables/{table_id}/rows"),
        ("POST", f"/coze_lab/api/tables/{table_id}/publish"),
        ("DELETE", f"/coze_lab/api/tables/{table_id}"),
    ):
        assert call(method, path, who="bob").status_code == 404
    assert call("GET", "/coze_lab/api/tables", who="bob").json()["data"]["tables"] == []
    assert call("DELETE", f"/coze_lab/api/tables/{table_id}").status_code == 200
    assert call("GET", f"/coze_lab/api/tables/{table_id}").status_code == 404
