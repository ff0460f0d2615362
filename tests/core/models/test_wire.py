"""The lean HTTP path's own rules: retries and their delays, odd provider answers.

Retries run against the real local model server with a recording ``sleep`` (no waiting);
shapes the local server never sends go through ``httpx.MockTransport``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable

import httpx
import pytest

from coze_lab.core.models import CompletionAccumulator, ModelClient, ModelError, ModelSpec, Usage
from coze_lab.core.models.wire import ChatCompletions, backoff, retry_after, should_retry
from coze_lab.testing import ErrorReply, ModelServer

USER = [{"role": "user", "content": "hi"}]
REQUEST = {"model": "coze-lab-demo", "messages": USER}


class Sleeps(list[float]):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.mark.asyncio
async def test_retry_after_is_honoured(server: ModelServer) -> None:
    server.script([ErrorReply(429, "slow down", retry=True, retry_after=0.25), "fine"])
    sleeps = Sleeps()
    async with httpx.AsyncClient() as http:
        wire = ChatCompletions(http, max_retries=2, sleep=sleeps)
        done = await wire.complete(server.spec(), "no-key", REQUEST)
    assert done.content == "fine"
    assert sleeps == [0.25]
    assert len(server.requests) == 2


@pytest.mark.asyncio
async def test_backoff_grows_and_gives_up_after_max_retries(server: ModelServer) -> None:
    server.script([ErrorReply(503, "busy", retry=True)] * 3)
    sleeps = Sleeps()
    async with httpx.AsyncClient() as http:
        wire = ChatCompletions(http, max_retries=2, sleep=sleeps)
        with pytest.raises(ModelError) as caught:
            await wire.complete(server.spec(), "no-key", {**REQUEST, "stream": True})
    assert caught.value.provider_status == 503 and "busy" in caught.value.msg
    assert len(server.requests) == 3
    assert len(sleeps) == 2
    assert 0.375 <= sleeps[0] <= 0.5 and 0.75 <= sleeps[1] <= 1.0


@pytest.mark.asyncio
async def test_no_retry_when_told_not_to_or_asked_to_wait_too_long(server: ModelServer) -> None:
    server.script(
        [ErrorReply(503, "not now"), ErrorReply(503, "later", retry=True, retry_after=600)]
    )
    sleeps = Sleeps()
    async with httpx.AsyncClient() as http:
        wire = ChatCompletions(http, max_retries=2, sleep=sleeps)
        for expected in ("not now", "later"):
            with pytest.raises(ModelError, match=expected):
                await wire.complete(server.spec(), "no-key", REQUEST)
    assert sleeps == [] and len(server.requests) == 2


@pytest.mark.asyncio
async def test_connection_failures_are_retried() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    spec = ModelSpec(id="gone", name="gone", base_url=f"http://127.0.0.1:{port}/v1", model="m")
    sleeps = Sleeps()
    async with httpx.AsyncClient() as http:
        wire = ChatCompletions(http, max_retries=3, sleep=sleeps)
        with pytest.raises(ModelError) as caught:
            await wire.complete(spec, "no-key", REQUEST)
    assert caught.value.kind == "connection" and len(sleeps) == 3


def test_retry_rules() -> None:
    assert [should_retry(s, {}, None) for s in (400, 401, 404, 408, 409, 429, 500, 503)] == [
        False, False, False, True, True, True, True, True,
    ]  # fmt: skip
    assert should_retry(400, {"x-should-retry": "true"}, None)
    assert not should_retry(503, {}, 121.0)
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after({"retry-after": "soon"}) is None
    assert 59 <= retry_after({"retry-after": _http_date(60)}) <= 61  # type: ignore[operator]
    assert retry_after({"retry-after": "inf"}) == 121.0
    assert retry_after({}) is None
    assert all(0 < backoff(n) <= 8.0 for n in range(2000))


def _http_date(seconds_from_now: float) -> str:
    import email.utils
    import time

    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


def mock(handler: Callable[[httpx.Request], httpx.Response], backend: str) -> ModelClient:
    return ModelClient(httpx.MockTransport(handler), max_retries=0, backend=backend)


SPEC = ModelSpec(id="m", name="m", base_url="http://provider.test/v1", model="m")


@pytest.mark.asyncio
async def test_a_server_that_ignores_stream_gives_one_chunk() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content)["stream"] is True
        message = {
            "role": "assistant",
            "content": "whole",
            "tool_calls": [{"id": "c", "type": "function",
                            "function": {"name": "f", "arguments": '{"x": 1}'}}],
        }  # fmt: skip
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        return httpx.Response(200, json={"choices": [choice], "usage": usage})

    async with mock(handler, "httpx") as client:
        chunks = [c async for c in client.stream(SPEC, USER)]
    acc = CompletionAccumulator()
    for chunk in chunks:
        acc.add(chunk)
    done = acc.completion()
    assert len(chunks) == 1
    assert (done.content, done.finish_reason, done.usage) == ("whole", "tool_calls", Usage(1, 1, 2))
    assert done.tool_calls[0].arguments() == {"x": 1}


@pytest.mark.asyncio
@pytest.mark.parametrize("backend", ["httpx", "openai"])
async def test_an_event_that_is_not_json_is_a_protocol_error(backend: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = 'data: {"choices": [{"index": 0, "delta": {"content": "ok"}}]}\n\ndata: {oops\n\n'
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    received: list[str] = []
    async with mock(handler, backend) as client:
        with pytest.raises(ModelError) as caught:
            async for chunk in client.stream(SPEC, USER):
                received.append(chunk.content_delta)
    assert received == ["ok"]
    assert caught.value.kind == "protocol"


@pytest.mark.asyncio
@pytest.mark.parametrize("backend", ["httpx", "openai"])
async def test_tool_call_fragments_without_index_take_their_position(backend: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        calls = [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": '{"y": 2}'}},
        ]
        events = [
            {"choices": [{"index": 0, "delta": {"tool_calls": calls}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
        body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    async with mock(handler, backend) as client:
        acc = CompletionAccumulator()
        async for chunk in client.stream(SPEC, USER):
            acc.add(chunk)
    assert [(c.id, c.name, c.arguments()) for c in acc.completion().tool_calls] == [
        ("a", "f", {}),
        ("b", "g", {"y": 2}),
    ]


@pytest.mark.asyncio
async def test_request_headers_and_body() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})

    spec = ModelSpec(id="m", name="m", base_url="http://provider.test/v1/", model="m",
                     api_key_env="K")  # fmt: skip
    async with ModelClient(httpx.MockTransport(handler), environ={"K": "sk-abc"}) as client:
        await client.complete(spec, [{"role": "user", "content": "héllo"}])
    request = seen[0]
    assert str(request.url) == "http://provider.test/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-abc"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("coze-lab/")
    assert json.loads(request.content) == {
        "model": "m",
        "messages": [{"role": "user", "content": "héllo"}],
    }
