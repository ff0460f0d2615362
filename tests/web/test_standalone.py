"""``coze-lab serve`` as a real subprocess, driven by cozepy and httpx over loopback."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest
from cozepy import Coze, CozeAPIError, TokenAuth
from openapi_spec_validator import validate

from coze_lab.config import CozeLab
from coze_lab.core.tokens import TokenService
from coze_lab.services import Runtime
from coze_lab.store.migrate import head_revision
from coze_lab.web.routes import COZE_ROUTES as OPENAPI
from coze_lab.web.routes import STUDIO_ROUTES as STUDIO
from tests.support import ServerProcess

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


@pytest.fixture
def admin(server: ServerProcess) -> Runtime:
    """Direct access to the server's database, as an operator with the CLI would have."""
    runtime = Runtime(CozeLab(data_dir=str(server.data_dir), database_url=server.database_url))
    yield runtime
    runtime.db.dispose()


def token_for(admin: Runtime, user: str, **kwargs) -> str:
    owner = admin.identity.ensure_user(user)
    return admin.tokens.create(owner.id, f"{user} token", **kwargs)[1]


def coze(server: ServerProcess, token: str) -> Coze:
    return Coze(auth=TokenAuth(token), base_url=server.url)


def stored_files(server: ServerProcess) -> list[Path]:
    root = server.data_dir / "files"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_cozepy_uploads_and_retrieves_files(server, admin, tmp_path) -> None:
    path = tmp_path / "chart.png"
    path.write_bytes(PNG)
    client = coze(server, token_for(admin, "alice"))
    uploaded = client.files.upload(file=path)
    assert uploaded.file_name == "chart.png" and uploaded.bytes == len(PNG)
    assert re.fullmatch(r"7\d{18}", uploaded.id)
    retrieved = client.files.retrieve(file_id=uploaded.id)
    assert retrieved.id == uploaded.id and retrieved.created_at == uploaded.created_at
    body = httpx.get(
        f"{server.url}/v1/files/retrieve",
        params={"file_id": uploaded.id},
        headers={"Authorization": f"Bearer {token_for(admin, 'alice')}"},
    ).json()
    assert body["data"]["content_type"] == "image/png"


def test_cozepy_lists_the_personal_workspace(server, admin) -> None:
    client = coze(server, token_for(admin, "alice"))
    workspaces = list(client.workspaces.list())
    alice = admin.identity.ensure_user("alice")
    assert [w.id for w in workspaces] == [str(alice.workspace_id)]
    assert workspaces[0].workspace_type == "personal" and workspaces[0].role_type == "owner"


def test_another_users_token_never_reaches_your_files(server, admin, tmp_path) -> None:
    path = tmp_path / "private.txt"
    path.write_text("alice only")
    file_id = coze(server, token_for(admin, "alice")).files.upload(file=path).id
    with pytest.raises(CozeAPIError) as err:
        coze(server, token_for(admin, "bob")).files.retrieve(file_id=file_id)
    assert err.value.code == 4200
    bob_spaces = list(coze(server, token_for(admin, "bob")).workspaces.list())
    assert str(admin.identity.ensure_user("alice").workspace_id) not in {w.id for w in bob_spaces}


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (None, "missing"),
        ("Basic abc", "Bearer"),
        ("Bearer nonsense", "malformed"),
        ("Bearer pat_" + "x" * 43, "unknown"),
    ],
)
def test_bad_tokens_get_401_with_a_coze_body(server, header, message) -> None:
    headers = {"Authorization": header} if header else {}
    for method, path in [
        ("GET", "/v1/workspaces"),
        ("POST", "/v1/files/upload"),
        ("GET", "/coze_lab/api/health"),
    ]:
        response = httpx.request(method, server.url + path, headers=headers)
        assert response.status_code == 401
        body = response.json()
        assert body["code"] == 4100 and message in body["msg"]
        assert response.headers["X-Tt-Logid"]


def test_expired_and_revoked_tokens_are_refused(server, admin) -> None:
    alice = admin.identity.ensure_user("alice")
    two_days_ago = datetime.now(timezone.utc) - timedelta(days=2)
    past = TokenService(admin.db, clock=lambda: two_days_ago)
    _, expired = past.create(alice.id, "old", expires_in_days=1)
    with pytest.raises(CozeAPIError) as err:
        list(coze(server, expired).workspaces.list())
    assert err.value.code == 4100 and "expired" in err.value.msg

    info, live = admin.tokens.create(alice.id, "live")
    assert list(coze(server, live).workspaces.list())
    admin.tokens.revoke(alice.id, info.id)
    with pytest.raises(CozeAPIError) as err:
        list(coze(server, live).workspaces.list())
    assert err.value.code == 4100 and "revoked" in err.value.msg


def test_scopes_are_enforced(server, admin, tmp_path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("x")
    chat_only = token_for(admin, "alice", scopes=["chat"])
    with pytest.raises(CozeAPIError) as err:
        coze(server, chat_only).files.upload(file=path)
    assert err.value.code == 4101
    assert coze(server, token_for(admin, "alice", scopes=["files"])).files.upload(file=path).id
    studio = httpx.get(
        f"{server.url}/coze_lab/api/health", headers={"Authorization": f"Bearer {chat_only}"}
    )
    assert studio.status_code == 403 and studio.json()["code"] == 4101
    assert stored_files(server) and len(stored_files(server)) == 1


def wait_until(condition, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def upload(server, token, content: bytes, name: str = "f.txt", **kwargs) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/files/upload",
        headers={"Authorization": f"Bearer {token}"},
        files={"file": (name, content)},
        **kwargs,
    )


@pytest.mark.parametrize("name", ["../../etc/passwd", "a/b.txt", "..", "..\\..\\win.ini", ""])
def test_path_traversal_in_file_names_is_refused(server, admin, name) -> None:
    response = upload(server, token_for(admin, "alice"), b"payload", name)
    assert response.status_code == 400 and response.json()["code"] == 4000
    assert stored_files(server) == []


def test_oversized_upload_is_413_and_leaves_nothing(tmp_path, db_url) -> None:
    server = ServerProcess(tmp_path / "small", db_url).start()
    try:
        config = CozeLab(data_dir=str(server.data_dir), database_url=db_url)
        admin = Runtime(config)
        token = token_for(admin, "alice")
        big = b"x" * (101 * 1024 * 1024)
        response = upload(server, token, big, "big.bin", timeout=60)
        assert response.status_code == 413 and response.json()["code"] == 4302

        # chunked: no Content-Length to refuse up front; the cap applies while streaming
        def chunks():
            for _ in range(110):
                yield b"y" * (1024 * 1024)

        boundary = "b0undary"

        def body():
            yield (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                f'filename="big.bin"\r\n\r\n'
            ).encode()
            yield from chunks()
            yield f"\r\n--{boundary}--\r\n".encode()

        try:
            streamed = httpx.post(
                f"{server.url}/v1/files/upload",
                content=body(),
                timeout=60,
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": f"multipart/form-data; boundary={boundary}",
                },
            )
            assert streamed.status_code in (400, 413)
        except httpx.HTTPError:
            pass  # the server may close the connection once the cap is passed
        wait_until(lambda: stored_files(server) == [])
        assert list(coze(server, token).workspaces.list())  # the server still serves
        admin.db.dispose()
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b"not multipart at all", "text/plain"),
        (
            b'--x\r\nContent-Disposition: form-data; name="other"\r\n\r\nv\r\n--x--\r\n',
            "multipart/form-data; boundary=x",
        ),
        (
            b'--x\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nabc',
            "multipart/form-data; boundary=x",
        ),
        (b"garbage", "multipart/form-data"),
    ],
)
def test_malformed_multipart_is_400(server, admin, content, content_type) -> None:
    response = httpx.post(
        f"{server.url}/v1/files/upload",
        content=content,
        headers={
            "Authorization": f"Bearer {token_for(admin, 'alice')}",
            "Content-Type": content_type,
        },
    )
    assert response.status_code == 400 and response.json()["code"] == 4000
    assert stored_files(server) == []


@pytest.mark.parametrize("file_id", ["", "abc", "-3", "99999999999999999999", "123"])
def test_bad_or_unknown_file_ids(server, admin, file_id) -> None:
    response = httpx.get(
        f"{server.url}/v1/files/retrieve",
        params={"file_id": file_id},
        headers={"Authorization": f"Bearer {token_for(admin, 'alice')}"},
    )
    assert response.status_code in (400, 404)
    assert response.json()["code"] == (4200 if file_id == "123" else 4000)


@pytest.mark.parametrize(
    "body",
    [
        b"{bad json",
        b"[1, 2]",
        b"\xff\xfe",
        b'{"name": 5}',
        b'{"name": "x", "scopes": "chat"}',
        b'{"name": "x", "expires_in_days": "soon"}',
        b'{"name": "x", "connector_id": 1024}',
    ],
)
def test_studio_token_creation_rejects_bad_json(server, admin, body) -> None:
    token = token_for(admin, "alice")
    response = httpx.post(
        f"{server.url}/coze_lab/api/tokens",
        content=body,
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 400 and response.json()["code"] == 4000
    listed = httpx.get(
        f"{server.url}/coze_lab/api/tokens", headers={"Authorization": f"Bearer {token}"}
    ).json()["data"]["tokens"]
    assert len(listed) == 1  # only the token used for the call


def test_huge_json_body_is_413(server, admin) -> None:
    response = httpx.post(
        f"{server.url}/coze_lab/api/tokens",
        content=b'{"name": "' + b"x" * (3 * 1024 * 1024) + b'"}',
        headers={"Authorization": f"Bearer {token_for(admin, 'alice')}"},
    )
    # Coze's "request parameter error": the SDKs must not read it as a rate limit (4013)
    assert response.status_code == 413 and response.json()["code"] == 4000


def test_studio_token_lifecycle(server, admin) -> None:
    auth = {"Authorization": f"Bearer {token_for(admin, 'alice')}"}
    created = httpx.post(
        f"{server.url}/coze_lab/api/tokens",
        headers=auth,
        json={"name": "notebook", "expires_in_days": 30, "scopes": ["chat"]},
    )
    assert created.status_code == 201
    data = created.json()["data"]
    assert data["token"].startswith("pat_") and data["status"] == "active"
    listed = httpx.get(f"{server.url}/coze_lab/api/tokens", headers=auth).json()["data"]
    assert all("token" not in t for t in listed["tokens"])
    assert data["id"] in {t["id"] for t in listed["tokens"]}
    bob_auth = {"Authorization": f"Bearer {token_for(admin, 'bob')}"}
    other = httpx.delete(f"{server.url}/coze_lab/api/tokens/{data['id']}", headers=bob_auth)
    assert other.status_code == 404
    revoked = httpx.delete(f"{server.url}/coze_lab/api/tokens/{data['id']}", headers=auth)
    assert revoked.json()["data"]["status"] == "revoked"
    gone = httpx.get(
        f"{server.url}/v1/workspaces", headers={"Authorization": f"Bearer {data['token']}"}
    )
    assert gone.status_code == 401


def test_health_reports_version_user_database_and_sandbox(server, admin) -> None:
    response = httpx.get(
        f"{server.url}/coze_lab/api/health",
        headers={"Authorization": f"Bearer {token_for(admin, 'alice')}"},
    )
    data = response.json()["data"]
    assert data["version"] and data["user"]["name"] == "alice"
    assert data["database"]["ok"] is True and data["database"]["revision"] == head_revision()
    assert {"installed", "started", "workers", "runs", "restarts"} <= set(data["sandbox"])


def test_unknown_paths_and_methods_get_coze_bodies(server, admin) -> None:
    auth = {"Authorization": f"Bearer {token_for(admin, 'alice')}"}
    missing = httpx.get(f"{server.url}/v1/nothing/here", headers=auth)
    assert missing.status_code == 404 and missing.json()["code"] == 4200
    wrong = httpx.delete(f"{server.url}/v1/workspaces", headers=auth)
    assert wrong.status_code == 405 and wrong.json()["code"] == 4000


def test_openapi_document_is_valid_and_covers_every_route(server) -> None:
    doc = httpx.get(f"{server.url}/openapi.json").json()
    validate(doc)
    documented = {re.sub(r"\{[^}]+\}", "([^/]+)", path) for path in doc["paths"]}
    for pattern, _ in OPENAPI + STUDIO:
        assert pattern in documented, pattern


def test_secrets_never_reach_the_logs(server, admin, tmp_path) -> None:
    token = token_for(admin, "alice")
    auth = {"Authorization": f"Bearer {token}"}
    created = httpx.post(
        f"{server.url}/coze_lab/api/tokens", headers=auth, json={"name": "n"}
    ).json()["data"]["token"]
    httpx.get(f"{server.url}/v1/workspaces", headers={"Authorization": f"Bearer {created}x"})
    httpx.get(f"{server.url}/v1/workspaces", headers=auth)
    httpx.post(f"{server.url}/coze_lab/api/tokens", headers=auth, content=b"{bad")
    log = server.log()
    assert "/v1/workspaces" in log  # the log is real and was written
    for secret in (token, created):
        assert secret[4:] not in log


def test_users_me_is_the_tokens_owner(server, admin) -> None:
    alice = admin.identity.ensure_user("alice")
    me = coze(server, token_for(admin, "alice", scopes=["chat"], connector_id="999")).users.me()
    assert (me.user_id, me.user_name, me.nick_name) == (str(alice.id), "alice", "alice")
    assert coze(server, token_for(admin, "bob")).users.me().user_name == "bob"
    with pytest.raises(CozeAPIError) as err:
        coze(server, "pat_unknown").users.me()
    assert err.value.code == 4100
