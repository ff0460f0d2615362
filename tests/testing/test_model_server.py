"""The local OpenAI-compatible server, spoken to with plain HTTP (and once via the CLI)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from coze_lab.testing import DEMO_PREFIX, ErrorReply, ModelServer, demo_reply

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "convert",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "number"},
                    "unit": {"type": "string", "enum": ["c", "f"]},
                    "note": {"type": "string"},
                    "exact": {"type": "boolean"},
                },
                "required": ["amount", "unit", "exact"],
            },
        },
    },
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}},
]


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as srv:
        yield srv


def post(srv: ModelServer, body: object, key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.post(f"{srv.url}/chat/completions", json=body, headers=headers, timeout=10)


def events(response: httpx.Response) -> list[str]:
    return [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]


def test_url_and_models(server: ModelServer) -> None:
    assert server.url == f"http://127.0.0.1:{server.port}/v1"
    models = httpx.get(f"{server.url}/models").json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["coze-lab-demo"]


def test_non_stream_shape_and_usage(server: ModelServer) -> None:
    body = {
        "model": "x",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "one two three"},
        ],
    }
    data = post(server, body).json()
    assert data["object"] == "chat.completion"
    assert data["model"] == "x"
    choice = data["choices"][0]
    assert choice["message"] == {
        "role": "assistant",
        "content": f"{DEMO_PREFIX} You said: one two three",
    }
    assert choice["finish_reason"] == "stop"
    assert data["usage"] == {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
    assert server.requests == [body]
    assert server.completed == 1


def test_stream_shape(server: ModelServer) -> None:
    server.script(
        [{"tool_calls": [{"name": "search", "arguments": {"q": "tornado"}}], "text": "ok"}]
    )
    response = post(
        server,
        {
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    assert response.headers["content-type"].startswith("text/event-stream")
    raw = events(response)
    assert raw[-1] == "[DONE]"
    chunks = [json.loads(e) for e in raw[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 4
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    arguments = "".join(
        tc["function"].get("arguments", "")
        for c in chunks[:-1]
        for tc in c["choices"][0]["delta"].get("tool_calls", [])
    )
    assert json.loads(arguments) == {"q": "tornado"}
    # without include_usage there is no usage chunk
    plain = events(post(server, {"messages": [{"role": "user", "content": "hi"}], "stream": True}))
    assert all("usage" not in json.loads(e) or json.loads(e)["usage"] is None for e in plain[:-1])


def test_scripted_replies_in_order_then_demo(server: ModelServer) -> None:
    server.script(["first", {"text": "second"}, ErrorReply(429, "slow down", code="rate_limit")])
    assert server.pending == 3
    user = {"messages": [{"role": "user", "content": "q"}]}
    assert post(server, user).json()["choices"][0]["message"]["content"] == "first"
    assert post(server, user).json()["choices"][0]["message"]["content"] == "second"
    error = post(server, user)
    assert error.status_code == 429
    assert error.headers["x-should-retry"] == "false"
    assert error.json() == {
        "error": {
            "message": "slow down",
            "type": "server_error",
            "param": None,
            "code": "rate_limit",
        }
    }
    assert post(server, user).json()["choices"][0]["message"]["content"].startswith(DEMO_PREFIX)
    assert server.pending == 0 and len(server.requests) == 4
    server.reset()
    assert server.requests == [] and server.completed == 0


def test_api_key_check() -> None:
    with ModelServer(api_key="sk-expected-123456") as srv:
        user = {"messages": [{"role": "user", "content": "q"}]}
        missing = post(srv, user)
        wrong = post(srv, user, key="sk-other")
        right = post(srv, user, key="sk-expected-123456")
        models = httpx.get(f"{srv.url}/models")
    assert missing.status_code == wrong.status_code == models.status_code == 401
    assert wrong.json()["error"]["type"] == "invalid_request_error"
    assert wrong.json()["error"]["code"] == "invalid_api_key"
    assert "sk-" not in wrong.text
    assert right.status_code == 200


def test_bad_requests(server: ModelServer) -> None:
    bad = httpx.post(f"{server.url}/chat/completions", content=b"{nope")
    assert bad.status_code == 400
    assert "messages" in bad.json()["error"]["message"]
    assert post(server, {"model": "m"}).status_code == 400
    missing = httpx.get(f"{server.url}/audio/speech")
    assert missing.status_code == 404 and "error" in missing.json()
    assert server.requests == []


def test_demo_tool_calls_follow_the_schema() -> None:
    mention = {
        "messages": [{"role": "user", "content": "please CONVERT 21.5 degrees"}],
        "tools": TOOLS,
    }
    reply = demo_reply(mention)
    call = reply.calls[0]
    assert call.name == "convert"
    assert json.loads(call.arguments_json()) == {"amount": 21.5, "unit": "c", "exact": True}
    # nothing mentioned: plain text; "required": first tool; forced: that tool; "none": text
    assert demo_reply({**mention, "messages": [{"role": "user", "content": "hello"}]}).text
    forced = {"type": "function", "function": {"name": "search"}}
    assert demo_reply({**mention, "tool_choice": forced}).calls[0].name == "search"
    assert (
        demo_reply(
            {**mention, "messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"}
        )
        .calls[0]
        .name
        == "convert"
    )
    assert demo_reply({**mention, "tool_choice": "none"}).text.startswith(DEMO_PREFIX)
    after_tool = {
        **mention,
        "messages": [
            *mention["messages"],
            {"role": "tool", "tool_call_id": "a", "content": "70.7F"},
        ],
    }
    assert demo_reply(after_tool).text == f"{DEMO_PREFIX} The tool returned: 70.7F"


def test_demo_json_schema_reply() -> None:
    fmt = {
        "type": "json_schema",
        "json_schema": {
            "name": "r",
            "schema": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "count": {"type": "integer"},
                    "tags": {"type": "array"},
                },
            },
        },
    }
    reply = demo_reply(
        {"messages": [{"role": "user", "content": "list 3 things"}], "response_format": fmt}
    )
    assert json.loads(reply.text) == {
        "title": f"{DEMO_PREFIX} You said: list 3 things",
        "count": 3,
        "tags": [],
    }


def test_long_messages_are_shortened() -> None:
    text = demo_reply({"messages": [{"role": "user", "content": "word " * 500}]}).text
    assert len(text) < 250 and text.endswith("…")


def test_command_line_server(tmp_path: object) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "coze_lab.testing.model_server",
            "--port",
            str(port),
            "--chunk-delay",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/v1" in banner and "demo model" in banner
        deadline = time.monotonic() + 10
        while True:
            try:
                response = httpx.post(
                    f"http://127.0.0.1:{port}/v1/chat/completions",
                    json={"messages": [{"role": "user", "content": "ping"}]},
                )
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert (
            response.json()["choices"][0]["message"]["content"] == f"{DEMO_PREFIX} You said: ping"
        )
    finally:
        proc.terminate()
        proc.communicate(timeout=10)  # also closes the pipes


def test_embeddings_are_deterministic_and_near_for_similar_texts(server: ModelServer) -> None:
    import openai

    client = openai.OpenAI(base_url=server.url, api_key="k")
    texts = ["the red cat sleeps", "a red cat sleeping", "quarterly stock prices"]
    first = [d.embedding for d in client.embeddings.create(model="m", input=texts).data]
    again = client.embeddings.create(model="m", input=texts[0]).data[0].embedding
    assert again == first[0] and len(first[0]) == 256
    dot = [sum(a * b for a, b in zip(first[0], v, strict=True)) for v in first]
    assert abs(dot[0] - 1) < 1e-6 and dot[1] > 0.5 > dot[2]
    assert server.embeddings == 2 and server.requests == []  # chats only in requests
    bad = httpx.post(f"{server.url}/embeddings", json={"input": [1, 2]})
    assert bad.status_code == 400 and "input" in bad.json()["error"]["message"]
