"""Request bodies a hostile client sends, over real loopback HTTP to ``coze-lab serve``:
deep or huge JSON, bodies over the cap with and without ``Content-Length``, and what
happens to a kept-alive connection after an early error."""

from __future__ import annotations

import http.client
import json
import select
import socket
from collections.abc import Iterator

import httpx
import pytest

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
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


# ---- raw HTTP/1.1 over a socket: bodies without Content-Length, kept-alive connections -----
def connect(server: ServerProcess) -> socket.socket:
    url = httpx.URL(server.url)
    return socket.create_connection((url.host, url.port), timeout=15)


def request_head(method: str, path: str, token: str | None, **headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_response(sock: socket.socket) -> http.client.HTTPResponse:
    response = http.client.HTTPResponse(sock)
    response.begin()
    return response


def send_chunks_until_answered(sock: socket.socket, total: int, piece: int = 64 * 1024) -> int:
    """Send up to ``total`` bytes as chunks, stopping when an answer arrives; bytes sent."""
    sent = 0
    chunk = b"%x\r\n" % piece + b" " * piece + b"\r\n"
    while sent < total:
        readable, _, _ = select.select([sock], [], [], 0)
        if readable:
            break
        try:
            sock.sendall(chunk)
        except OSError:  # the server answered and closed
            break
        sent += piece
    return sent


def test_a_chunked_json_body_over_the_cap_is_refused_while_streaming(served) -> None:
    server, token = served
    with connect(server) as sock:
        sock.sendall(
            request_head(
                "POST",
                "/v1/conversation/create",
                token,
                Content_Type="application/json",
                Transfer_Encoding="chunked",
            )
            + b'6\r\n{"a":[\r\n'
        )
        sent = send_chunks_until_answered(sock, 20 * 1024 * 1024)
        response = read_response(sock)
        body = json.loads(response.read())
    assert response.status == 413 and body["code"] == 4000
    assert f"exceeds {MAX_JSON} bytes" in body["msg"]
    assert response.getheader("Connection") == "close"
    # answered long before the 20 MB were sent (the rest of `sent` sits in socket buffers)
    assert sent < 10 * 1024 * 1024


def test_a_content_length_over_the_cap_is_refused_before_the_body(served) -> None:
    server, token = served
    with connect(server) as sock:
        sock.sendall(
            request_head(
                "POST",
                "/v1/conversation/create",
                token,
                Content_Type="application/json",
                Content_Length=str(50 * 1024 * 1024),
            )
        )
        response = read_response(sock)  # no body byte was sent
        body = json.loads(response.read())
    assert response.status == 413 and body["code"] == 4000
    assert response.getheader("Connection") == "close"


def multipart_head(boundary: str) -> bytes:
    return (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()


def test_an_over_size_chunked_upload_is_a_413_with_a_coze_body(served) -> None:
    server, token = served
    boundary = "b0undary"
    with connect(server) as sock:
        head = multipart_head(boundary)
        sock.sendall(
            request_head(
                "POST",
                "/v1/files/upload",
                token,
                Content_Type=f"multipart/form-data; boundary={boundary}",
                Transfer_Encoding="chunked",
            )
            + b"%x\r\n" % len(head)
            + head
            + b"\r\n"
        )
        sent = send_chunks_until_answered(sock, 20 * 1024 * 1024)
        response = read_response(sock)
        body = json.loads(response.read())
    assert response.status == 413 and body["code"] == 4302  # Coze: file too large
    assert f"file exceeds the limit of {MAX_UPLOAD} bytes" in body["msg"]
    assert sent < 10 * 1024 * 1024
    assert not [p for p in (server.data_dir / "files").rglob("*") if p.is_file()]


def test_a_401_before_the_upload_body_says_connection_close(served) -> None:
    server, _ = served
    boundary = "b0undary"
    payload = multipart_head(boundary) + b"x" * 200_000 + f"\r\n--{boundary}--\r\n".encode()
    with connect(server) as sock:
        sock.sendall(
            request_head(
                "POST",
                "/v1/files/upload",
                "pat_" + "x" * 43,
                Content_Type=f"multipart/form-data; boundary={boundary}",
                Content_Length=str(len(payload)),
            )
        )
        response = read_response(sock)
        body = json.loads(response.read())
        assert response.status == 401 and body["code"] == 4100
        # the server closes this connection (the body was never read): it must say so
        assert response.getheader("Connection") == "close"


def test_a_403_before_the_upload_body_says_connection_close(served) -> None:
    server, _ = served
    runtime = Runtime(CozeLab(data_dir=str(server.data_dir), database_url=server.database_url))
    alice = runtime.identity.ensure_user("alice")
    chat_only = runtime.tokens.create(alice.id, "chat only", scopes=["chat"])[1]  # no `files`
    runtime.db.dispose()
    boundary = "b0undary"
    payload = multipart_head(boundary) + b"x" * 200_000 + f"\r\n--{boundary}--\r\n".encode()
    with connect(server) as sock:
        sock.sendall(
            request_head(
                "POST",
                "/v1/files/upload",
                chat_only,
                Content_Type=f"multipart/form-data; boundary={boundary}",
                Content_Length=str(len(payload)),
            )
        )
        response = read_response(sock)
        body = json.loads(response.read())
        assert response.status == 403 and body["code"] == 4101, body
        # the server closes this connection (the body was never read): it must say so
        assert response.getheader("Connection") == "close"


def test_a_401_after_a_json_body_keeps_the_connection_usable(served) -> None:
    server, token = served
    payload = b'{"name": "kept alive"}'
    with connect(server) as sock:
        for bearer, status in (("pat_" + "x" * 43, 401), (token, 200)):
            sock.sendall(
                request_head(
                    "POST",
                    "/v1/conversation/create",
                    bearer,
                    Content_Type="application/json",
                    Content_Length=str(len(payload)),
                )
                + payload
            )
            response = read_response(sock)
            response.read()
            assert response.status == status
            assert response.getheader("Connection") != "close"
