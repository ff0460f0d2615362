"""MCP both ways against a real ``coze-lab serve``: a bot calls tools of MCP servers built
with the ``mcp`` SDK (stdio and streamable HTTP), and the SDK's own client lists and calls
the published workflows and bots at ``/coze_lab/mcp``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from cozepy import ChatStatus, Coze, Message, TokenAuth
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

import coze_lab as cl
from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer, ScriptedToolCall, TextReply, ToolCallsReply
from tests.core.mcp.servers import HttpCalcServer, stdio_server
from tests.support import ServerProcess


@pytest.fixture
def setup(tmp_path: Path, db_url: str, model_server: ModelServer) -> Iterator[dict]:
    data = tmp_path / "data"
    admin = Runtime(CozeLab(data_dir=str(data), database_url=db_url))
    admin.start()
    alice = admin.identity.ensure_user("alice")
    bob = admin.identity.ensure_user("bob")
    tokens = {
        name: admin.tokens.create(user.id, "mcp")[1]
        for name, user in (("alice", alice), ("bob", bob))
    }
    admin.db.dispose()
    env = {
        "OPENAI_BASE_URL": model_server.url,
        "OPENAI_API_KEY": "test-key",
        "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
        "COZE_LAB_OUTBOUND_ALLOW": "127.0.0.1/32",
        "COZE_LAB_MCP_STDIO_COMMANDS": sys.executable,
    }
    server = ServerProcess(data, db_url, env=env).start()
    try:
        yield {
            "server": server,
            "space_id": str(alice.workspace_id),
            "model": model_server,
            **tokens,
        }
    finally:
        server.stop()


def api(server: ServerProcess, token: str, prefix: str = "/coze_lab/api") -> httpx.Client:
    return httpx.Client(
        base_url=server.url + prefix, headers={"Authorization": f"Bearer {token}"}, timeout=60
    )


def test_a_bot_calls_tools_of_mcp_servers_over_stdio_and_http(setup) -> None:
    server, model = setup["server"], setup["model"]
    with (
        api(server, setup["alice"]) as alice,
        api(server, setup["bob"]) as bob,
        HttpCalcServer(token="remote-key") as remote,
    ):
        local = alice.post("/mcp/servers", json=stdio_server("calc"))
        assert local.status_code == 201, local.text
        local_id = local.json()["data"]["id"]
        added = alice.post("/mcp/servers", json={"name": "remote", "url": remote.url})
        remote_id = added.json()["data"]["id"]
        assert alice.put(
            f"/mcp/servers/{remote_id}/credentials",
            json={"headers": {"Authorization": "Bearer remote-key"}},
        ).json()["data"] == {"configured": ["Authorization"]}
        listed = alice.get("/mcp/servers").json()["data"]["servers"]
        assert [(s["name"], s["transport"], s["has_credentials"]) for s in listed] == [
            ("remote", "http", True),
            ("calc", "stdio", False),
        ]
        tools = alice.get(f"/mcp/servers/{local_id}/tools").json()["data"]["tools"]
        assert {t["name"] for t in tools} == {"add", "environment", "fail", "shout"}
        # another user's server is not there; bad bodies are 400s
        assert bob.get(f"/mcp/servers/{local_id}").status_code == 404
        assert bob.get(f"/mcp/servers/{local_id}/tools").status_code == 404
        assert alice.post("/mcp/servers", json=stdio_server("calc")).status_code == 409
        for bad in ({"name": "x", "command": "/bin/sh"}, {"name": "x"}, {"name": "x", "url": 5}):
            answer = alice.post("/mcp/servers", json=bad)
            assert answer.status_code in (400, 403) and answer.json()["code"] != 0, bad
        assert (
            alice.put(
                f"/mcp/servers/{local_id}/credentials", json={"headers": {"A": "b"}}
            ).status_code
            == 400
        )

        with api(server, setup["alice"], "") as coze:
            made = coze.post(
                "/v1/bot/create",
                json={
                    "space_id": setup["space_id"],
                    "name": "Adder",
                    "prompt_info": {"prompt": "You add numbers with your tools."},
                    "mcp_servers": [
                        {"server_id": local_id, "tools": ["add"]},
                        {"server_id": remote_id},
                    ],
                },
            )
            bot_id = made.json()["data"]["bot_id"]
            assert (
                coze.post(
                    "/v1/bot/publish", json={"bot_id": bot_id, "connector_ids": ["1024"]}
                ).json()["code"]
                == 0
            )
            refused = coze.post(
                "/v1/bot/update", json={"bot_id": bot_id, "mcp_servers": [{"server_id": "123"}]}
            )
            assert refused.json()["code"] != 0 and "mcp_servers" in refused.json()["msg"]

        model.script(
            [
                ToolCallsReply(
                    [
                        ScriptedToolCall("add", {"a": 2, "b": 3}, id="c1"),
                        ScriptedToolCall("add_2", {"a": 40, "b": 2}, id="c2"),
                    ]
                ),
                TextReply("5 here and 42 there."),
            ]
        )
        coze = Coze(auth=TokenAuth(setup["alice"]), base_url=server.url)
        poll = coze.chat.create_and_poll(
            bot_id=bot_id,
            user_id="u1",
            additional_messages=[Message.build_user_question_text("Add for me")],
        )
        assert poll.chat.status == ChatStatus.COMPLETED, poll.chat.last_error
        offered = sorted(t["function"]["name"] for t in model.requests[0]["tools"])
        assert offered == ["add", "add_2", "environment", "fail", "shout"]
        results = {
            m["tool_call_id"]: m["content"]
            for m in model.requests[1]["messages"]
            if m["role"] == "tool"
        }
        assert results == {"c1": "5", "c2": "42"}
        assert "remote-key" not in server.log()


def adder(server_id: str) -> cl.Workflow:
    wf = cl.Workflow("add_numbers", description="Add two integers with the calc MCP server")
    wf.start(start)
    wf.mcp("sum", server=server_id, tool="add", inputs={"a": "{{start.a}}", "b": "{{start.b}}"})
    wf.end(total="{{sum.text}}")
    return wf


def start(a: int, b: int):
    """Two integers."""


def first_mcp_error(exc: BaseException) -> MCPError:
    """The MCPError in what the SDK raised (its task groups wrap it)."""
    while not isinstance(exc, MCPError):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def mcp_client(url: str, token: str | None, **kwargs: object) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    return Client(streamable_http_client(url, http_client=http), cache=None, **kwargs)


@pytest.mark.asyncio
async def test_the_mcp_sdk_client_lists_and_calls_published_workflows_and_bots(setup) -> None:
    server, model = setup["server"], setup["model"]
    with api(server, setup["alice"]) as alice:
        calc = alice.post("/mcp/servers", json=stdio_server("calc")).json()["data"]["id"]
        saved = alice.post(
            "/workflows", json={"definition": adder(calc).to_json(), "publish": True}
        )
        assert saved.status_code == 201, saved.text
        draft_only = adder(calc).to_json()
        draft_only["name"] = "unpublished"
        alice.post("/workflows", json={"definition": draft_only})
    with api(server, setup["alice"], "") as coze:
        bot_id = coze.post(
            "/v1/bot/create",
            json={
                "space_id": setup["space_id"],
                "name": "Greeter",
                "description": "Says hello.",
                "prompt_info": {"prompt": "Greet."},
            },
        ).json()["data"]["bot_id"]
        coze.post("/v1/bot/publish", json={"bot_id": bot_id, "connector_ids": ["1024"]})
    url = server.url + "/coze_lab/mcp"

    async with mcp_client(url, setup["alice"], mode="legacy") as client:
        assert client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
        assert client.server_info is not None and client.server_info.name == "coze_lab"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"add_numbers", "Greeter"}
        schema = tools["add_numbers"].input_schema
        assert schema["properties"]["a"]["type"] == "integer" and schema["required"] == ["a", "b"]
        assert tools["Greeter"].description == "Says hello."
        result = await client.call_tool("add_numbers", {"a": 2, "b": 40})
        assert not result.is_error and result.structured_content == {"total": "42"}
        assert json.loads(result.content[0].text) == {"total": "42"}
        model.script([TextReply("Hello, Ada!")])
        answer = await client.call_tool("Greeter", {"message": "I am Ada"})
        assert not answer.is_error and answer.content[0].text == "Hello, Ada!"
        # bad input: arguments the workflow refuses, a bot without its message, unknown tools
        wrong = await client.call_tool("add_numbers", {"a": "two", "b": 1})
        assert wrong.is_error and "a" in wrong.content[0].text
        assert (await client.call_tool("add_numbers", {"a": 1, "c": 2})).is_error
        assert (await client.call_tool("Greeter", {})).is_error
        with pytest.raises(MCPError, match="Unknown tool: nope"):
            await client.call_tool("nope", {})

    async with mcp_client(url, setup["alice"]) as modern:  # the SDK's default: it probes
        assert [t.name for t in (await modern.list_tools()).tools] == ["add_numbers", "Greeter"]

    async with mcp_client(url, setup["bob"], mode="legacy") as other:
        assert (await other.list_tools()).tools == []  # alice's are invisible to bob
        with pytest.raises(MCPError, match="Unknown tool"):
            await other.call_tool("add_numbers", {"a": 1, "b": 2})

    for token in (None, "pat_" + "z" * 43):
        with pytest.raises(Exception) as refused:  # the SDK raises a group
            async with mcp_client(url, token, mode="legacy"):
                pass
        assert "token" in first_mcp_error(refused.value).error.message.lower()

    with httpx.Client(headers={"Authorization": f"Bearer {setup['alice']}"}) as raw:
        broken = raw.post(url, content=b"{not json")
        assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700
        assert raw.post(url, json=[1]).json()["error"]["code"] == -32600
        unknown = raw.post(url, json={"jsonrpc": "2.0", "id": 7, "method": "x/y"}).json()
        assert unknown == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": -32601, "message": "Method not found: x/y"},
        }
        bad_params = raw.post(
            url,
            json={"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"arguments": {}}},
        ).json()
        assert bad_params["error"]["code"] == -32602
        note = raw.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert note.status_code == 202 and note.content == b""
        assert raw.get(url).status_code == 405
        # the Coze API prefix of coze-lab serve has no second copy of it
        assert raw.post(server.url + "/mcp", json={}).status_code == 404
