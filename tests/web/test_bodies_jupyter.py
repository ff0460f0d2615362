"""Body caps inside a real jupyter_server (pytest-jupyter): its HTTP server reads bodies up
to 512 MB on its own, so the cap and the early 413 must come from coze_lab's handlers."""

from __future__ import annotations

import asyncio
import json

import pytest

from coze_lab.web.base import RUNTIME_KEY

MAX_JSON = 100_000
# tests take ``jp_fetch`` so that the server listens (it serves the fixture's socket)


@pytest.fixture
def jp_server_config(jp_server_config: dict) -> dict:
    jp_server_config["CozeLab"]["max_json_bytes"] = MAX_JSON
    jp_server_config["CozeLab"]["max_upload_bytes"] = 200_000
    return jp_server_config


async def exchange(
    port: int, head: bytes, chunks: int = 0, piece: int = 64 * 1024
) -> tuple[int, dict[str, str], dict, int]:
    """Send ``head`` then up to ``chunks`` chunks (stopping once an answer arrives); the
    status, headers, JSON body and the number of chunks sent."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head)
        sent = 0
        answer = asyncio.ensure_future(reader.readuntil(b"\r\n\r\n"))
        while sent < chunks and not answer.done():
            writer.write(b"%x\r\n" % piece + b" " * piece + b"\r\n")
            try:
                await asyncio.wait_for(writer.drain(), 5)
            except (ConnectionError, asyncio.TimeoutError):
                break
            sent += 1
            await asyncio.sleep(0)
        raw = await asyncio.wait_for(answer, 15)
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        return status, headers, json.loads(body or b"{}"), sent
    finally:
        writer.close()


def head(base_url: str, path: str, auth: str, **headers: str) -> bytes:
    lines = [f"POST {base_url}{path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: {auth}"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def test_a_chunked_json_body_over_the_cap_is_refused_while_streaming_in_jupyter(
    jp_serverapp, jp_fetch, jp_http_port, jp_base_url, jp_auth_header
) -> None:
    await jp_fetch("coze_lab", "api", "health")  # the studio loads on first use
    runtime = jp_serverapp.web_app.settings[RUNTIME_KEY]
    user = runtime.identity.ensure_user("lab-owner")
    token = runtime.tokens.create(user.id, "t")[1]
    for path, auth in (
        ("coze_lab/v1/conversation/create", f"Bearer {token}"),  # the Coze OpenAPI, token auth
        ("coze_lab/api/tokens", jp_auth_header["Authorization"]),  # the studio, Jupyter auth
    ):
        request = head(
            jp_base_url,
            path,
            auth,
            Content_Type="application/json",
            Transfer_Encoding="chunked",
        )
        status, headers, body, sent = await exchange(jp_http_port, request, chunks=320)
        assert status == 413 and body["code"] == 4000, (path, body)
        assert headers["connection"] == "close"
        assert sent < 160  # 10 of the 20 MB at most: refused while streaming


async def test_a_401_before_the_upload_body_says_connection_close_in_jupyter(
    jp_fetch, jp_http_port, jp_base_url
) -> None:
    request = head(
        jp_base_url,
        "coze_lab/v1/files/upload",
        "Bearer pat_" + "x" * 43,
        Content_Type="multipart/form-data; boundary=b",
        Content_Length="250000",
    )
    status, headers, body, _ = await exchange(jp_http_port, request)
    assert status == 401 and body["code"] == 4100
    assert headers["connection"] == "close"
