"""ModelClient on both paths (lean httpx, the real openai SDK) against the real local server."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from contextlib import aclosing
from dataclasses import replace

import httpx
import pytest

from coze_lab.core.models import (
    CompletionAccumulator,
    ModelClient,
    ModelError,
    ModelNotConfigured,
    ModelSpec,
    Usage,
    accumulate_tool_calls,
)
from coze_lab.core.models.client import IMAGE_OMITTED, on_request_sent
from coze_lab.testing import ErrorReply, ModelServer, ScriptedToolCall, TextReply, ToolCallsReply

USER = [{"role": "user", "content": "Tell me about Paris"}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}


async def collect(client: ModelClient, spec: ModelSpec, messages: list, **kwargs: object) -> list:
    return [chunk async for chunk in client.stream(spec, messages, **kwargs)]


@pytest.mark.asyncio
async def test_plain_completion(server: ModelServer, client: ModelClient) -> None:
    server.script(["Paris is the capital of France."])
    done = await client.complete(server.spec(), USER)
    assert done.content == "Paris is the capital of France."
    assert done.tool_calls == []
    assert done.finish_reason == "stop"
    assert done.model == "coze-lab-demo"
    # the server counts whitespace words: 4 in, 6 out
    assert done.usage == Usage(input_tokens=4, output_tokens=6, total_tokens=10)
    assert server.requests[0]["messages"] == USER
    assert server.requests[0]["model"] == "coze-lab-demo"
    assert "stream" not in server.requests[0]


@pytest.mark.asyncio
async def test_demo_model_answers_without_script(server: ModelServer, client: ModelClient) -> None:
    done = await client.complete(server.spec(), USER)
    assert done.content == "[demo model] You said: Tell me about Paris"


@pytest.mark.asyncio
async def test_stream_deltas_concatenate_and_report_usage(
    server: ModelServer, client: ModelClient
) -> None:
    text = "Streaming works token by token,\nacross lines  and spaces."
    server.script([text])
    chunks = await collect(client, server.spec(), USER)
    deltas = [c.content_delta for c in chunks if c.content_delta]
    assert len(deltas) > 5
    assert "".join(deltas) == text
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["stop"]
    usages = [c.usage for c in chunks if c.usage is not None]
    assert usages == [Usage(4, 9, 13)]
    body = server.requests[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    acc = CompletionAccumulator()
    for chunk in chunks:
        acc.add(chunk)
    assert acc.completion().content == text
    assert acc.completion().usage == Usage(4, 9, 13)


@pytest.mark.asyncio
async def test_usage_missing_from_provider_is_zero(backend: str) -> None:
    with ModelServer(report_usage=False) as srv:
        async with ModelClient(max_retries=0, backend=backend) as client:
            done = await client.complete(srv.spec(), USER)
            chunks = await collect(client, srv.spec(), USER)
    assert done.usage == Usage(0, 0, 0)
    assert all(c.usage is None for c in chunks)
    assert "".join(c.content_delta for c in chunks) == done.content


@pytest.mark.asyncio
async def test_tool_calls_non_stream(server: ModelServer, client: ModelClient) -> None:
    server.script(
        [
            ToolCallsReply(
                [
                    ScriptedToolCall("get_weather", {"city": "Paris"}, id="call_a"),
                    ScriptedToolCall("get_weather", {"city": "Lyon", "days": 3}),
                ]
            )
        ]
    )
    done = await client.complete(server.spec(), USER, tools=[WEATHER_TOOL], tool_choice="auto")
    assert done.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in done.tool_calls] == [
        ("call_a", "get_weather"),
        ("call_1_1", "get_weather"),
    ]
    assert done.tool_calls[1].arguments() == {"city": "Lyon", "days": 3}
    assert server.requests[0]["tools"] == [WEATHER_TOOL]
    assert server.requests[0]["tool_choice"] == "auto"
    # the assistant message round-trips into the next request
    history = [*USER, done.to_message()]
    history += [
        {"role": "tool", "tool_call_id": c.id, "content": "sunny 21C"} for c in done.tool_calls
    ]
    follow_up = await client.complete(server.spec(), history, tools=[WEATHER_TOOL])
    assert follow_up.content == "[demo model] The tool returned: sunny 21C"
    assert server.requests[1]["messages"][1]["tool_calls"][0]["id"] == "call_a"


@pytest.mark.asyncio
async def test_streamed_tool_call_deltas_accumulate(
    server: ModelServer, client: ModelClient
) -> None:
    long_args = {"city": "San Francisco de Macorís", "note": "x" * 50}
    server.script(
        [
            ToolCallsReply(
                [ScriptedToolCall("get_weather", long_args), ScriptedToolCall("get_time", {})],
                text="Let me check.",
            )
        ]
    )
    chunks = await collect(client, server.spec(), USER, tools=[WEATHER_TOOL])
    deltas = [d for c in chunks for d in c.tool_call_deltas]
    assert len(deltas) > 4  # arguments really arrive in pieces
    calls = accumulate_tool_calls(deltas)
    assert [c.name for c in calls] == ["get_weather", "get_time"]
    assert calls[0].arguments() == long_args
    assert calls[1].arguments() == {}
    assert calls[0].id == "call_1_0"
    acc = CompletionAccumulator()
    for chunk in chunks:
        acc.add(chunk)
    done = acc.completion()
    assert done.content == "Let me check."
    assert done.finish_reason == "tool_calls"
    assert done.tool_calls == calls
    assert done.usage.output_tokens > 0


@pytest.mark.asyncio
async def test_demo_model_calls_a_mentioned_tool(server: ModelServer, client: ModelClient) -> None:
    messages = [{"role": "user", "content": "use get_weather for Paris in 3 days"}]
    done = await client.complete(server.spec(), messages, tools=[WEATHER_TOOL])
    assert [c.name for c in done.tool_calls] == ["get_weather"]
    assert done.tool_calls[0].arguments() == {"city": "use get_weather for Paris in 3 days"}


@pytest.mark.asyncio
async def test_tools_dropped_when_function_call_is_off(
    server: ModelServer, client: ModelClient
) -> None:
    spec = server.spec(function_call=False)
    messages = [{"role": "user", "content": "use get_weather please"}]
    done = await client.complete(spec, messages, tools=[WEATHER_TOOL], tool_choice="required")
    chunks = await collect(client, spec, messages, tools=[WEATHER_TOOL], tool_choice="auto")
    assert done.tool_calls == []
    assert done.content.startswith("[demo model]")
    assert "".join(c.content_delta for c in chunks) == done.content
    for body in server.requests:
        assert "tools" not in body
        assert "tool_choice" not in body
    # and with the capability on, the same call does send them
    await client.complete(server.spec(), messages, tools=[WEATHER_TOOL])
    assert server.requests[-1]["tools"] == [WEATHER_TOOL]


@pytest.mark.asyncio
async def test_response_format_and_images_follow_capabilities(
    server: ModelServer, client: ModelClient
) -> None:
    image_message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    }
    fmt = {"type": "json_object"}
    done = await client.complete(server.spec(), [image_message], response_format=fmt)
    answer = "[demo model] You said: What is this? " + IMAGE_OMITTED
    assert json.loads(done.content) == {"answer": answer}
    sent = server.requests[-1]
    assert sent["response_format"] == fmt
    assert sent["messages"][0]["content"][1] == {"type": "text", "text": IMAGE_OMITTED}

    capable = server.spec(json_mode=False, image_understanding=True)
    await client.complete(capable, [image_message], response_format=fmt)
    sent = server.requests[-1]
    assert "response_format" not in sent
    assert sent["messages"][0]["content"][1]["type"] == "image_url"


@pytest.mark.asyncio
async def test_parameters_merge_defaults_and_call_overrides(
    server: ModelServer, client: ModelClient
) -> None:
    spec = server.spec(parameters={"temperature": 0.2, "top_p": 0.9, "max_tokens": 3})
    done = await client.complete(spec, USER, temperature=0.7, top_p=None)
    body = server.requests[0]
    assert body["temperature"] == 0.7
    assert "top_p" not in body
    assert body["max_tokens"] == 3
    # the server honours max_tokens by words
    assert done.content == "[demo model] You"
    assert done.finish_reason == "length"


@pytest.mark.asyncio
async def test_provider_error_becomes_model_error_without_key(
    server: ModelServer, backend: str
) -> None:
    key = "sk-test-SECRET-0123456789abcdef"
    env = {"DEMO_KEY": key}
    spec = server.spec(api_key_env="DEMO_KEY")
    server.script([ErrorReply(400, f"context too long for key {key}", "invalid_request_error")])
    async with ModelClient(max_retries=0, environ=env, backend=backend) as client:
        with pytest.raises(ModelError) as caught:
            await client.complete(spec, USER)
    err = caught.value
    assert err.kind == "status"
    assert err.provider_status == 400
    assert (err.code, err.status) == (5020, 502)
    assert "HTTP 400" in err.msg and "context too long" in err.msg
    assert "model 'demo'" in err.msg
    assert key not in err.msg and key not in str(err)
    assert "SECRET" not in repr(err.args)


@pytest.mark.asyncio
async def test_a_provider_rate_limit_is_coze_4013(server: ModelServer, backend: str) -> None:
    server.script([ErrorReply(429, "slow down", "rate_limit_exceeded")])
    async with ModelClient(max_retries=0, backend=backend) as client:
        with pytest.raises(ModelError) as caught:
            await client.complete(server.spec(), USER)
    assert (caught.value.code, caught.value.status, caught.value.provider_status) == (
        4013,
        502,
        429,
    )


@pytest.mark.asyncio
async def test_wrong_key_is_401_and_right_key_passes(backend: str) -> None:
    key = "sk-right-key-0123456789"
    with ModelServer(api_key=key) as srv:
        spec = srv.spec(api_key_env="MODEL_KEY")
        async with ModelClient(
            max_retries=0, environ={"MODEL_KEY": "sk-wrong-key-987654321"}, backend=backend
        ) as c:
            with pytest.raises(ModelError) as caught:
                await c.complete(spec, USER)
            with pytest.raises(ModelError) as caught_stream:
                await collect(c, spec, USER)
        async with ModelClient(max_retries=0, environ={"MODEL_KEY": key}, backend=backend) as c:
            done = await c.complete(spec, USER)
    assert caught.value.provider_status == 401
    assert caught_stream.value.provider_status == 401
    assert "sk-wrong" not in caught.value.msg
    assert done.content.startswith("[demo model]")


@pytest.mark.asyncio
async def test_unset_key_variable_is_model_not_configured(
    server: ModelServer, backend: str
) -> None:
    spec = server.spec(api_key_env="COZE_LAB_TEST_UNSET_KEY")
    async with ModelClient(environ={}, backend=backend) as client:
        with pytest.raises(ModelNotConfigured, match="COZE_LAB_TEST_UNSET_KEY"):
            await client.complete(spec, USER)
        with pytest.raises(ModelNotConfigured):
            await collect(client, spec, USER)
    assert server.requests == []


@pytest.mark.asyncio
async def test_error_inside_a_stream(server: ModelServer, client: ModelClient) -> None:
    server.script(
        [TextReply("one two three four five", fail_after=2, fail_message="GPU fell over")]
    )
    received: list[str] = []
    with pytest.raises(ModelError, match="GPU fell over") as caught:
        async for chunk in client.stream(server.spec(), USER):
            received.append(chunk.content_delta)
    assert "".join(received) == "one two"
    assert caught.value.kind == "protocol"


@pytest.mark.asyncio
async def test_wrong_path_is_a_status_error(server: ModelServer, client: ModelClient) -> None:
    spec = replace(server.spec(), base_url=server.url.removesuffix("/v1"))
    with pytest.raises(ModelError) as caught:
        await client.complete(spec, USER)
    assert caught.value.provider_status == 404
    assert "no route for /chat/completions" in caught.value.msg


@pytest.mark.asyncio
async def test_connection_refused_is_a_connection_error(backend: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    spec = ModelSpec(id="gone", name="gone", base_url=f"http://127.0.0.1:{port}/v1", model="m")
    async with ModelClient(max_retries=0, backend=backend) as client:
        with pytest.raises(ModelError) as caught:
            await client.complete(spec, USER)
        with pytest.raises(ModelError) as caught_stream:
            await collect(client, spec, USER)
    assert caught.value.kind == caught_stream.value.kind == "connection"
    assert caught.value.status == 502
    assert f"127.0.0.1:{port}" in caught.value.msg


@pytest.mark.asyncio
async def test_timeout_is_a_timeout_error(server: ModelServer, backend: str) -> None:
    server.script([TextReply("late", delay=2.0)])
    async with ModelClient(max_retries=0, timeout=0.3, backend=backend) as client:
        started = time.monotonic()
        with pytest.raises(ModelError) as caught:
            await client.complete(server.spec(), USER)
    assert time.monotonic() - started < 1.5
    assert caught.value.kind == "timeout"
    assert caught.value.status == 504
    assert await asyncio.to_thread(server.wait_for, "disconnects", 1)


@pytest.mark.asyncio
async def test_retryable_errors_are_retried(server: ModelServer, backend: str) -> None:
    server.script([ErrorReply(503, "busy", retry=True), "after retry"])
    async with ModelClient(max_retries=1, backend=backend) as client:
        done = await client.complete(server.spec(), USER)
    assert done.content == "after retry"
    assert len(server.requests) == 2


@pytest.mark.asyncio
async def test_cancelling_a_slow_stream_closes_the_connection(
    server: ModelServer, client: ModelClient
) -> None:
    server.chunk_delay = 0.3
    server.script([" ".join(f"word{i}" for i in range(100))])
    received: list[str] = []
    first = asyncio.Event()

    async def consume() -> None:
        async for chunk in client.stream(server.spec(), USER):
            received.append(chunk.content_delta)
            if chunk.content_delta:
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(server.wait_for, "disconnects", 1, 2.0)
    assert server.disconnects == 1
    assert server.completed == 0
    assert len(received) < 10


@pytest.mark.asyncio
async def test_closing_a_stream_early_closes_the_connection(
    server: ModelServer, client: ModelClient
) -> None:
    server.chunk_delay = 0.2
    server.script([" ".join(f"word{i}" for i in range(100))])
    async with aclosing(client.stream(server.spec(), USER)) as chunks:
        async for chunk in chunks:
            if chunk.content_delta:
                break
    assert await asyncio.to_thread(server.wait_for, "disconnects", 1, 2.0)
    # the client still works afterwards
    server.chunk_delay = 0
    assert (await client.complete(server.spec(), USER)).content.startswith("[demo model]")


@pytest.mark.asyncio
async def test_fifty_concurrent_streams_complete(server: ModelServer, client: ModelClient) -> None:
    server.chunk_delay = 0.01

    async def one(i: int) -> str:
        messages = [{"role": "user", "content": f"request number {i} " + "pad " * 10}]
        return "".join([c.content_delta for c in await collect(client, server.spec(), messages)])

    texts = await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(50))), 60)
    for i, text in enumerate(texts):
        assert text.startswith(f"[demo model] You said: request number {i} pad")
    assert server.completed == 50
    assert server.disconnects == 0


@pytest.mark.asyncio
async def test_provider_dropping_the_connection_mid_stream_is_a_connection_error(
    server: ModelServer, client: ModelClient
) -> None:
    server.script([TextReply("one two three four five", disconnect_after=2)])
    received: list[str] = []
    with pytest.raises(ModelError) as caught:
        async for chunk in client.stream(server.spec(), USER):
            received.append(chunk.content_delta)
    assert "".join(received) == "one two"
    assert caught.value.kind == "connection"
    assert caught.value.status == 502
    # the pool recovers: the next call gets a fresh connection
    assert (await client.complete(server.spec(), USER)).content.startswith("[demo model]")


@pytest.mark.asyncio
async def test_parameters_the_sdk_does_not_know_are_sent_too(
    server: ModelServer, client: ModelClient
) -> None:
    spec = server.spec(parameters={"top_k": 5, "repetition_penalty": 1.1})
    await client.complete(spec, USER)
    await collect(client, spec, USER, min_p=0.05)
    assert (server.requests[0]["top_k"], server.requests[0]["repetition_penalty"]) == (5, 1.1)
    assert (server.requests[1]["top_k"], server.requests[1]["min_p"]) == (5, 0.05)


def test_backend_comes_from_the_environment_and_is_checked() -> None:
    assert ModelClient(environ={}).backend == "httpx"
    assert ModelClient(environ={"COZE_LAB_MODEL_CLIENT": "openai"}).backend == "openai"
    assert ModelClient(backend="openai", environ={"COZE_LAB_MODEL_CLIENT": "httpx"}).backend == (
        "openai"
    )
    with pytest.raises(ModelNotConfigured, match=r"must be 'httpx' or 'openai'.*'requests'"):
        ModelClient(backend="requests")
    with pytest.raises(ModelNotConfigured, match=r"COZE_LAB_MODEL_CLIENT.*'sdk'"):
        ModelClient(environ={"COZE_LAB_MODEL_CLIENT": "sdk"})


@pytest.mark.asyncio
async def test_httpx_own_transport_when_the_environment_asks(
    server: ModelServer, backend: str
) -> None:
    env = {"COZE_LAB_MODEL_TRANSPORT": "httpcore"}
    server.script(["Paris.", "Lyon."])
    async with ModelClient(max_retries=0, environ=env, backend=backend) as client:
        assert isinstance(client._transport, httpx.AsyncHTTPTransport)
        done = await client.complete(server.spec(), USER)
        chunks = await collect(client, server.spec(), USER)
    assert done.content == "Paris."
    assert "".join(c.content_delta for c in chunks) == "Lyon."
    assert ModelClient(environ={})._transport is None  # the lean transport, made on first use
    with pytest.raises(ModelNotConfigured, match=r"COZE_LAB_MODEL_TRANSPORT.*'curl'"):
        ModelClient(environ={"COZE_LAB_MODEL_TRANSPORT": "curl"})


def test_the_sdk_is_not_imported_until_chosen() -> None:
    code = (
        "import sys, coze_lab.core.models, coze_lab.core.chat, coze_lab.core.workflows\n"
        "from coze_lab.core.models import ModelClient\n"
        "ModelClient()._backend()\n"
        "assert 'openai' not in sys.modules, 'openai imported'\n"
        "ModelClient(backend='openai')._backend()\n"
        "assert 'openai' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.asyncio
async def test_on_request_sent_tells_when_the_request_is_out(
    server: ModelServer, client: ModelClient
) -> None:
    """A chat writes its rows once its model request is out: the client says when (on both
    paths, through the traced transport); outside the block nothing is called."""
    sent: list[int] = []
    with on_request_sent(lambda: sent.append(len(server.requests))):
        chunks = await collect(client, server.spec(), USER)
    assert chunks and sent and sent[0] <= 1  # told before the whole request was answered
    told = len(sent)
    await client.complete(server.spec(), USER)
    assert len(sent) == told  # outside the block nobody is told


@pytest.mark.asyncio
async def test_on_request_sent_on_an_untraced_transport_tells_at_the_response() -> None:
    import httpx

    body = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append("request")
        return httpx.Response(200, json=body)

    spec = ModelSpec(id="m", name="m", base_url="http://model.invalid/v1", model="m")
    async with ModelClient(httpx.MockTransport(answer), max_retries=0) as client:
        with on_request_sent(lambda: seen.append("sent")):
            done = await client.complete(spec, USER)
    assert done.content == "ok" and seen == ["request", "sent"]
