"""The server extension inside a real jupyter_server (pytest-jupyter), base_url included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cozepy import AsyncCoze, AsyncTokenAuth, CozeAPIError
from tornado.httpclient import HTTPClientError

from coze_lab.web.base import RUNTIME_KEY


async def fetch_json(jp_fetch, *parts: str, **kwargs) -> tuple[int, dict]:
    try:
        response = await jp_fetch(*parts, **kwargs)
    except HTTPClientError as err:
        assert err.response is not None
        return err.code, json.loads(err.response.body)
    return response.code, json.loads(response.body)


@pytest.fixture
def runtime_of(jp_serverapp, jp_fetch, jp_asyncio_loop):
    jp_asyncio_loop.run_until_complete(jp_fetch("coze_lab", "api", "health"))  # loads it
    return jp_serverapp.web_app.settings[RUNTIME_KEY]


async def test_extension_is_loaded_and_reports_health(jp_fetch, jp_serverapp) -> None:
    assert "coze_lab" in jp_serverapp.extension_manager.extensions
    # the studio loads on its first request, not with the server
    assert RUNTIME_KEY not in jp_serverapp.web_app.settings
    status, body = await fetch_json(jp_fetch, "coze_lab", "api", "health")
    assert RUNTIME_KEY in jp_serverapp.web_app.settings
    assert status == 200 and body["code"] == 0
    assert body["data"]["user"]["name"] == "lab-owner"
    assert body["data"]["database"]["ok"] is True


async def test_single_user_server_maps_every_session_to_its_owner(jp_fetch) -> None:
    """Cookie-less token calls get a new anonymous Jupyter identity each time; not a new user."""
    ids = {(await fetch_json(jp_fetch, "coze_lab", "api", "me"))[1]["data"]["id"] for _ in range(3)}
    assert len(ids) == 1


async def test_studio_tokens_work_with_the_jupyter_identity(jp_fetch, runtime_of) -> None:
    status, created = await fetch_json(
        jp_fetch,
        "coze_lab",
        "api",
        "tokens",
        method="POST",
        body=json.dumps({"name": "from lab", "expires_in_days": 7}),
    )
    assert status == 201 and created["data"]["token"].startswith("pat_")
    status, listed = await fetch_json(jp_fetch, "coze_lab", "api", "tokens")
    assert [t["name"] for t in listed["data"]["tokens"]] == ["from lab"]
    principal = runtime_of.tokens.authenticate(created["data"]["token"])
    status, me = await fetch_json(jp_fetch, "coze_lab", "api", "me")
    assert str(principal.user_id) == me["data"]["id"]
    status, revoked = await fetch_json(
        jp_fetch, "coze_lab", "api", "tokens", created["data"]["id"], method="DELETE"
    )
    assert status == 200 and revoked["data"]["status"] == "revoked"


async def test_studio_rejects_bad_input_without_writing(jp_fetch, runtime_of) -> None:
    for body in ("{bad", "[]", json.dumps({"name": ""}), json.dumps({"name": "x", "scopes": 1})):
        status, reply = await fetch_json(
            jp_fetch, "coze_lab", "api", "tokens", method="POST", body=body
        )
        assert status == 400 and reply["code"] == 4000
    status, reply = await fetch_json(
        jp_fetch, "coze_lab", "api", "tokens", "not-a-number", method="DELETE"
    )
    assert status == 400
    status, reply = await fetch_json(jp_fetch, "coze_lab", "api", "tokens", "123", method="DELETE")
    assert status == 404 and reply["code"] == 4200
    _, listed = await fetch_json(jp_fetch, "coze_lab", "api", "tokens")
    assert listed["data"]["tokens"] == []


async def test_studio_needs_a_jupyter_login(jp_fetch) -> None:
    status, _ = await fetch_json(
        jp_fetch, "coze_lab", "api", "health", headers={"Authorization": ""}
    )
    assert status in (401, 403)


async def test_openapi_inside_jupyter_uses_personal_access_tokens(
    jp_fetch, jp_serverapp, jp_http_port, jp_base_url, runtime_of, tmp_path
) -> None:
    alice = runtime_of.identity.ensure_user("alice")
    _, secret = runtime_of.tokens.create(alice.id, "api")
    base_url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}coze_lab"
    client = AsyncCoze(auth=AsyncTokenAuth(secret), base_url=base_url)
    path = tmp_path / "note.txt"
    path.write_text("hello from cozepy")
    uploaded = await client.files.upload(file=path)
    assert (await client.files.retrieve(file_id=uploaded.id)).file_name == "note.txt"
    spaces = await client.workspaces.list()
    assert [w.id async for w in spaces] == [str(alice.workspace_id)]

    bad = AsyncCoze(auth=AsyncTokenAuth("pat_" + "z" * 43), base_url=base_url)
    with pytest.raises(CozeAPIError) as err:
        await bad.files.retrieve(file_id=uploaded.id)
    assert err.value.code == 4100


async def test_openapi_ignores_the_jupyter_login(jp_fetch) -> None:
    """A Jupyter session is not a personal access token: /v1 still demands one."""
    status, body = await fetch_json(jp_fetch, "coze_lab", "v1", "workspaces")
    assert status == 401 and body["code"] == 4100


async def test_unknown_paths_under_coze_lab_are_coze_404s(jp_fetch) -> None:
    status, body = await fetch_json(jp_fetch, "coze_lab", "v1", "nope")
    assert status == 404 and body["code"] == 4200


async def test_openapi_document_is_public(jp_fetch) -> None:
    status, body = await fetch_json(
        jp_fetch, "coze_lab", "openapi.json", headers={"Authorization": ""}
    )
    assert status == 200 and body["openapi"].startswith("3.1")


async def test_session_workspaces_live_under_the_jupyter_root(jp_serverapp, runtime_of) -> None:
    # so JupyterLab's file browser shows input/, scratchpad/ and output/ of each session
    expected = Path(jp_serverapp.root_dir) / "coze_workspaces"
    assert runtime_of.config.workspace_path == expected
    assert runtime_of.chats.workspaces.root == expected
