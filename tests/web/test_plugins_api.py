"""The studio plugin API over HTTP, against a real ``coze-lab serve`` and real loopback APIs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from tests.core.plugins.servers import ME_JSON, PETS_YAML, PluginTestServer, oauth_manifest
from tests.support import ServerProcess


@pytest.fixture
def served(tmp_path: Path, db_url: str) -> Iterator[tuple[ServerProcess, str, str]]:
    data = tmp_path / "data"
    admin = Runtime(CozeLab(data_dir=str(data), database_url=db_url))
    admin.start()
    _, alice = admin.tokens.create(admin.identity.ensure_user("alice").id, "studio")
    _, bob = admin.tokens.create(admin.identity.ensure_user("bob").id, "studio")
    admin.db.dispose()
    server = ServerProcess(data, db_url, env={"COZE_LAB_OUTBOUND_ALLOW": "127.0.0.1/32"}).start()
    yield server, alice, bob
    server.stop()


@pytest.fixture
def remote() -> Iterator[PluginTestServer]:
    with PluginTestServer() as server:
        yield server


def client(server: ServerProcess, token: str) -> httpx.Client:
    return httpx.Client(base_url=server.url + "/coze_lab/api",
                        headers={"Authorization": f"Bearer {token}"}, timeout=30)


def test_import_edit_credentials_debug_publish_delete(served, remote: PluginTestServer) -> None:
    server, alice_token, bob_token = served
    with client(server, alice_token) as alice, client(server, bob_token) as bob:
        broken = alice.post("/plugins", json={"openapi": "openapi: 3.0.0\npaths: {}\n",
                                              "manifest": {"auth": {"type": "magic"}}})
        assert broken.status_code == 400
        problems = broken.json()["detail"]["problems"]
        assert {"pointer": "/manifest/auth/type",
                "message": "must be one of ['none', 'service_token', 'oauth']"} in problems
        assert {p["pointer"] for p in problems} >= {"", "/servers", "/manifest/auth/type"}
        for bad in ({"openapi": 5}, {"url": 3}, {"openapi": "x: 1", "manifest": []}):
            answer = alice.post("/plugins", json=bad)
            assert answer.status_code == 400 and answer.json()["code"] == 4000
        assert alice.post("/plugins", content=b"[1]").status_code == 400

        created = alice.post("/plugins", json={
            "openapi": PETS_YAML.format(url=remote.url),
            "manifest": {"name_for_model": "pets",
                         "auth": {"type": "service_token", "key": "X-Api-Key",
                                  "template": "{{api_key}}"}},
            "credentials": {"api_key": "first-secret"}})
        assert created.status_code == 201, created.text
        plugin = created.json()["data"]
        plugin_id = plugin["id"]
        tools = {t["name"]: t["id"] for t in plugin["tools"]}
        assert plugin["auth"]["configured"] is True and plugin["warnings"]
        assert [p["id"] for p in alice.get("/plugins").json()["data"]["plugins"]] == [plugin_id]

        stored = alice.put(f"/plugins/{plugin_id}/credentials",
                           json={"credentials": {"api_key": "second-secret"}})
        assert stored.json()["data"] == {"configured": ["api_key"]}
        assert alice.put(f"/plugins/{plugin_id}/credentials",
                         json={"credentials": {"nope": "x"}}).status_code == 400
        assert alice.put(f"/plugins/{plugin_id}/credentials", json={}).status_code == 400

        debug = alice.post(f"/plugins/{plugin_id}/tools/{tools['getPet']}/debug",
                           json={"arguments": {"pet_id": 5}})
        result = debug.json()["data"]
        assert result["ok"] and result["status_code"] == 200
        assert result["data"]["headers"]["x-api-key"] == "second-secret"
        invalid = alice.post(f"/plugins/{plugin_id}/tools/{tools['getPet']}/debug",
                             json={"arguments": {"pet_id": "five"}}).json()["data"]
        assert invalid["ok"] is False and "is not of type 'integer'" in invalid["output"]
        calls = alice.get(f"/plugins/{plugin_id}/calls").json()["data"]["calls"]
        assert [c["ok"] for c in calls] == [False, True]
        # no API answer shows a secret, not even the request summaries
        everything = " ".join(alice.get(p).text for p in (
            "/plugins", f"/plugins/{plugin_id}", f"/plugins/{plugin_id}/calls"))
        assert "second-secret" not in everything and "first-secret" not in everything
        assert "second-secret" not in server.log()

        # other users' ids read as unknown; malformed ids are bad requests
        for method, path in (("get", f"/plugins/{plugin_id}"),
                             ("put", f"/plugins/{plugin_id}"),
                             ("delete", f"/plugins/{plugin_id}"),
                             ("post", f"/plugins/{plugin_id}/publish"),
                             ("get", f"/plugins/{plugin_id}/calls"),
                             ("post", f"/plugins/{plugin_id}/tools/{tools['getPet']}/debug"),
                             ("put", f"/plugins/{plugin_id}/credentials")):
            kwargs = {} if method in ("get", "delete") else {"json": {"credentials": {"a": "b"}}}
            answer = bob.request(method, path, **kwargs)
            assert answer.status_code == 404, (method, path, answer.text)
            assert answer.json()["code"] == 4200
        assert alice.get("/plugins/abc").status_code == 400
        assert alice.post(f"/plugins/{plugin_id}/tools/{plugin_id}/debug",
                          json={}).status_code == 404
        assert alice.get(f"/plugins/{plugin_id}?scene=online").status_code == 404

        assert alice.post(f"/plugins/{plugin_id}/publish").json()["data"] == {"version": 1}
        edited = alice.put(f"/plugins/{plugin_id}", json={"manifest": {
            "name_for_model": "pets", "name_for_human": "Pets v2",
            "auth": {"type": "service_token", "key": "X-Api-Key", "template": "{{api_key}}"}}})
        assert edited.json()["data"]["name"] == "Pets v2"
        online = alice.get(f"/plugins/{plugin_id}", params={"scene": "online"}).json()["data"]
        assert online["name"] == "Pet Store" and online["version"] == 1
        assert alice.put(f"/plugins/{plugin_id}", json={"openapi": {"openapi": "3.1.0"}}
                         ).status_code == 400
        assert alice.delete(f"/plugins/{plugin_id}").status_code == 200
        assert alice.get(f"/plugins/{plugin_id}").status_code == 404


def test_oauth_through_the_server_callback(served, remote: PluginTestServer) -> None:
    server, alice_token, _ = served
    with client(server, alice_token) as alice:
        created = alice.post("/plugins", json={
            "openapi": {**ME_JSON, "servers": [{"url": remote.url}]},
            "manifest": oauth_manifest(remote)})
        plugin = created.json()["data"]
        tool_id = plugin["tools"][0]["id"]
        assert remote.CLIENT_SECRET not in created.text
        first = alice.post(f"/plugins/{plugin['id']}/tools/{tool_id}/debug", json={}).json()
        assert first["data"]["error"] == "authorization required"

        url = alice.post(f"/plugins/{plugin['id']}/oauth/authorize").json()["data"][
            "authorization_url"]
        redirect = parse_qs(urlparse(url).query)["redirect_uri"][0]
        assert redirect == f"{server.url}/coze_lab/api/plugins/oauth/callback"
        # the browser: provider → coze_lab callback (public: no token), which exchanges the code
        with httpx.Client(follow_redirects=True, timeout=30) as browser:
            page = browser.get(url)
        assert page.status_code == 200 and "is authorized" in page.text
        again = httpx.get(str(page.url), timeout=30)  # the state is single-use
        assert again.status_code == 400 and again.json()["code"] == 4000
        assert httpx.get(f"{server.url}/coze_lab/api/plugins/oauth/callback",
                         timeout=30).status_code == 400

        called = alice.post(f"/plugins/{plugin['id']}/tools/{tool_id}/debug", json={}).json()
        assert called["data"]["ok"] and called["data"]["data"]["user"] == "octocat"
        assert alice.get(f"/plugins/{plugin['id']}").json()["data"]["auth"]["authorized"]
        assert alice.delete(f"/plugins/{plugin['id']}/credentials").status_code == 200
        assert not alice.get(f"/plugins/{plugin['id']}").json()["data"]["auth"]["authorized"]
