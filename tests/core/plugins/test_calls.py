"""Calling tools against a real HTTP server on loopback."""

from __future__ import annotations

import json

import httpx
import pytest
from sqlalchemy import select

from coze_lab.core.errors import NotFound
from coze_lab.core.net import OutboundPolicy
from coze_lab.core.plugins import PluginService
from coze_lab.store.models import PluginCall
from tests.core.plugins.servers import PETS_YAML, PluginTestServer


async def _pets(plugins: PluginService, user_id: int, api: PluginTestServer,
                **kwargs: object) -> dict[str, int]:
    info = await plugins.import_plugin(user_id, openapi=PETS_YAML.format(url=api.url), **kwargs)
    return {t.name: t.id for t in info.tools}


@pytest.mark.asyncio
async def test_path_query_header_cookie_parameters(plugins: PluginService, alice,
                                                   api: PluginTestServer) -> None:
    tools = await _pets(plugins, alice.id, api, manifest={
        "common_params": {"header": [{"name": "User-Agent", "value": "coze_lab-test"}]}})
    result = await plugins.call_tool(
        alice.id, tools["getPet"],
        {"pet_id": "42", "tags": ["a", "b c"], "X-Trace": "t-1", "session": "s 1"},
        scene="draft", trace={"run_id": "9"})
    assert result.ok and result.status_code == 200 and result.error is None
    seen = result.data
    assert seen["method"] == "GET" and seen["path"] == "/pets/42"
    assert seen["query"] == {"verbose": "false", "tags": ["a", "b c"]}  # default filled
    assert seen["headers"]["x-trace"] == "t-1"
    assert seen["headers"]["cookie"] == "session=s%201"
    assert seen["headers"]["user-agent"] == "coze_lab-test"
    assert json.loads(result.output) == seen
    assert result.request["url"] == f"{api.url}/pets/42"
    assert result.request["arguments"]["pet_id"] == 42  # coerced from "42"
    with plugins._db.transaction() as session:
        row = session.scalars(select(PluginCall).where(PluginCall.id == result.call_id)).one()
        assert (row.ok, row.status_code, row.tool_name, row.scene) == (True, 200, "getPet", "draft")
        assert row.trace == {"run_id": "9"} and row.latency_ms > 0


@pytest.mark.asyncio
async def test_json_and_form_bodies(plugins: PluginService, alice, api: PluginTestServer) -> None:
    tools = await _pets(plugins, alice.id, api)
    created = await plugins.call_tool(
        alice.id, tools["create_pet"],
        json.dumps({"name": "Rex", "kind": "dog", "age": "3", "owner": {"name": "Ann"}}),
        scene="draft")
    assert created.ok, created.output
    assert created.data["headers"]["content-type"] == "application/json"
    assert json.loads(created.data["body"]) == {"name": "Rex", "kind": "dog", "age": 3,
                                                "owner": {"name": "Ann"}}
    form = await plugins.call_tool(alice.id, tools["sendForm"], {"a": "x y", "n": 2},
                                   scene="draft")
    assert form.data["body"] == "a=x+y&n=2"
    assert form.data["headers"]["content-type"] == "application/x-www-form-urlencoded"


@pytest.mark.asyncio
async def test_invalid_arguments_are_tool_errors_for_the_model(plugins: PluginService, alice,
                                                               api: PluginTestServer) -> None:
    tools = await _pets(plugins, alice.id, api)
    before = len(api.requests)
    result = await plugins.call_tool(
        alice.id, tools["create_pet"], {"kind": "cow", "age": -1}, scene="draft")
    assert not result.ok and result.status_code is None
    assert "'name' is a required property" in result.output
    assert "kind: 'cow' is not one of ['cat', 'dog']" in result.output
    assert "age: -1 is less than the minimum of 0" in result.output
    bad_json = await plugins.call_tool(alice.id, tools["getPet"], "{oops", scene="draft")
    assert not bad_json.ok and "not valid JSON" in bad_json.error
    wrong_type = await plugins.call_tool(alice.id, tools["getPet"], {"pet_id": "abc"},
                                         scene="draft")
    assert "pet_id: 'abc' is not of type 'integer'" in wrong_type.output
    assert len(api.requests) == before  # nothing was sent


@pytest.mark.asyncio
async def test_http_errors_retries_and_truncation(plugins: PluginService, alice,
                                                  api: PluginTestServer) -> None:
    tools = await _pets(plugins, alice.id, api)
    flaky = await plugins.call_tool(alice.id, tools["flakyGet"], {}, scene="draft")
    assert flaky.ok and flaky.data == {"calls": 3} and flaky.request["attempts"] == 3
    api.flaky_calls = 0
    post = await plugins.call_tool(alice.id, tools["flakyPost"], {}, scene="draft")
    assert not post.ok and post.status_code == 503 and post.error == "HTTP 503"
    assert api.flaky_calls == 1  # POST is not idempotent: no retry
    assert post.output.startswith("HTTP 503: ")
    big = await plugins.call_tool(alice.id, tools["big"], {"n": 5000}, scene="draft")
    assert big.ok and len(big.output) < 2100 and big.output.endswith("characters]")
    assert big.data["text"] == "x" * 5000


@pytest.mark.asyncio
async def test_connect_errors_are_retried_then_reported(plugins: PluginService, alice,
                                                        api: PluginTestServer) -> None:
    tools = await _pets(plugins, alice.id, api, server_url="http://127.0.0.1:9")
    attempts: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        raise httpx.ConnectError("refused", request=request)

    plugins._policy = OutboundPolicy.from_strings(["127.0.0.1/32"],
                                                  transport=httpx.MockTransport(refuse))
    result = await plugins.call_tool(alice.id, tools["flakyPost"], {}, scene="draft")
    assert not result.ok and "unreachable (ConnectError)" in result.error
    assert len(attempts) == 3  # connect failures are safe to retry, even for POST


@pytest.mark.asyncio
async def test_the_ssrf_guard_refuses_private_addresses_without_a_packet(
        plugins: PluginService, alice, api: PluginTestServer) -> None:
    tools = await _pets(plugins, alice.id, api, server_url="http://10.0.0.7:8080")
    sent: list[httpx.Request] = []
    plugins._policy = OutboundPolicy.from_strings(
        ["127.0.0.1/32"],
        transport=httpx.MockTransport(lambda r: sent.append(r) or httpx.Response(200)))
    result = await plugins.call_tool(alice.id, tools["getPet"], {"pet_id": 1}, scene="draft")
    assert not result.ok and "10.0.0.7 is a private, loopback or link-local" in result.error
    assert sent == []


@pytest.mark.asyncio
async def test_the_ssrf_guard_refuses_loopback_unless_allowed(plugins: PluginService, alice,
                                                              api: PluginTestServer) -> None:
    tools = await _pets(plugins, alice.id, api, server_url=f"http://localhost:{api.port}")
    plugins._policy = OutboundPolicy()
    result = await plugins.call_tool(alice.id, tools["getPet"], {"pet_id": 1}, scene="draft")
    assert not result.ok and "refusing to call localhost" in result.error
    assert api.requests == []


@pytest.mark.asyncio
async def test_other_users_tools_are_unknown(plugins: PluginService, alice, bob,
                                             api: PluginTestServer) -> None:
    tools = await _pets(plugins, alice.id, api)
    with pytest.raises(NotFound):
        await plugins.call_tool(bob.id, tools["getPet"], {"pet_id": 1}, scene="draft")
    with pytest.raises(NotFound):
        plugins.tool_definitions(bob.id, [tools["getPet"]], scene="draft")
    definitions = plugins.tool_definitions(alice.id, [tools["getPet"]], scene="draft")
    assert definitions[0].name == "getPet"
    assert definitions[0].openai_tool()["function"]["parameters"]["required"] == ["pet_id"]
