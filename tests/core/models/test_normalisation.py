"""Normalisation edge cases at the transport seam (httpx.MockTransport).

Each behaviour here is also exercised against the real local server in test_client.py;
these tests pin provider shapes the local server never produces.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from coze_lab.core.models import ModelClient, ModelError, ModelSpec, Usage

SPEC = ModelSpec(id="m", name="m", base_url="http://provider.test/v1", model="m")
USER = [{"role": "user", "content": "hi"}]


def sse(*events: object) -> httpx.Response:
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})


def chunk(delta: dict, finish: str | None = None, **extra: object) -> dict:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def client_for(handler: Callable[[httpx.Request], httpx.Response], backend: str) -> ModelClient:
    return ModelClient(httpx.MockTransport(handler), max_retries=0, backend=backend)


@pytest.mark.asyncio
async def test_interleaved_tool_call_fragments(backend: str) -> None:
    """Providers may interleave fragments of parallel calls and repeat the name."""

    def handler(request: httpx.Request) -> httpx.Response:
        return sse(
            chunk({"role": "assistant", "content": None}),
            chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g"}}]}),
            chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]}),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"y":'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]}),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": " 2}"}}]}),
            chunk({}, "tool_calls"),
        )

    async with client_for(handler, backend) as client:
        chunks = [c async for c in client.stream(SPEC, USER)]
    from coze_lab.core.models import CompletionAccumulator

    acc = CompletionAccumulator()
    for c in chunks:
        acc.add(c)
    done = acc.completion()
    assert [(t.id, t.name, t.arguments()) for t in done.tool_calls] == [
        ("a", "f", {}),
        ("b", "g", {"y": 2}),
    ]
    assert done.finish_reason == "tool_calls"
    assert done.usage == Usage()


@pytest.mark.asyncio
async def test_null_content_missing_usage_and_finish_reason(backend: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": None},
                        "finish_reason": None,
                    }
                ],
            },
        )

    async with client_for(handler, backend) as client:
        done = await client.complete(SPEC, USER)
    assert (done.content, done.finish_reason, done.usage) == ("", "stop", Usage())


@pytest.mark.asyncio
async def test_no_choices_is_a_protocol_error(backend: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}
        return httpx.Response(200, json=body)

    async with client_for(handler, backend) as client:
        with pytest.raises(ModelError, match="no choices") as caught:
            await client.complete(SPEC, USER)
    assert caught.value.kind == "protocol"


@pytest.mark.asyncio
async def test_html_error_page_and_key_shaped_text_are_cleaned(backend: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        auth = request.headers["authorization"]
        return httpx.Response(
            502, text=f"<html>Bad gateway; got {auth} sk-leaked-abcdef12345</html>"
        )

    env = {"K": "sk-mine-0123456789"}
    spec = ModelSpec(id="m", name="m", base_url="http://p.test/v1", model="m", api_key_env="K")
    async with ModelClient(
        httpx.MockTransport(handler), max_retries=0, environ=env, backend=backend
    ) as client:
        with pytest.raises(ModelError) as caught:
            await client.complete(spec, USER)
    msg = caught.value.msg
    assert caught.value.provider_status == 502
    assert "sk-mine" not in msg and "sk-leaked" not in msg
    assert "Bad gateway" in msg


@pytest.mark.asyncio
async def test_transport_failure_mid_stream_is_a_connection_error(backend: str) -> None:
    class Broken(httpx.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[override]
            yield b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m",'
            yield b'"choices":[{"index":0,"delta":{"content":"hel"},"finish_reason":null}]}\n\n'
            raise httpx.ReadError("connection reset by peer")

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=Broken(), headers={"content-type": "text/event-stream"})

    received: list[str] = []
    async with client_for(handler, backend) as client:
        with pytest.raises(ModelError) as caught:
            async for c in client.stream(SPEC, USER):
                received.append(c.content_delta)
    assert received == ["hel"]
    assert caught.value.kind == "connection"


@pytest.mark.asyncio
async def test_usage_without_total_is_summed(backend: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return sse(
            chunk({"content": "ok"}, "stop"),
            {
                **chunk({}),
                "choices": [],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 0},
            },
        )

    async with client_for(handler, backend) as client:
        chunks = [c async for c in client.stream(SPEC, USER)]
    assert chunks[-1].usage == Usage(3, 2, 5)
