"""MCP servers as tools: a stdio server started on demand and an HTTP server through the
SSRF guard, both the ``mcp`` SDK's own server (tests/core/mcp/calc_server.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from coze_lab.core.errors import InvalidParameter, NotFound, PermissionDenied
from coze_lab.core.mcp.client import McpSettings
from coze_lab.core.mcp.service import McpService
from coze_lab.core.net import OutboundPolicy
from coze_lab.services import Runtime
from coze_lab.store.models import McpCredential, McpServer
from tests.core.mcp.servers import HttpCalcServer, stdio_server


def service(runtime: Runtime, tmp_path: Path, *, loopback: bool = False, **settings: object):
    policy = OutboundPolicy.from_strings(["127.0.0.1/32"] if loopback else [])
    return McpService(
        runtime.db,
        secrets=runtime.secrets,
        policy=policy,
        settings=McpSettings(
            stdio_commands=(sys.executable,), work_dir=tmp_path / "mcp", **settings
        ),
        clock=runtime.clock,
    )


@pytest.fixture
def users(runtime: Runtime) -> Iterator[tuple[int, int]]:
    yield runtime.identity.ensure_user("alice").id, runtime.identity.ensure_user("bob").id


@pytest.mark.asyncio
async def test_a_stdio_server_is_started_on_demand_with_only_its_own_environment(
    runtime: Runtime, tmp_path: Path, users, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = users
    monkeypatch.setenv("OPENAI_API_KEY", "server-secret")
    mcp = service(runtime, tmp_path)
    server = mcp.add(alice, stdio_server(env={"CALC_KEY": "k1"}))
    assert server.transport == "stdio" and server.env_names == ("CALC_KEY",)
    try:
        tools = {t.name: t for t in await mcp.tools(alice, server.id)}
        assert set(tools) == {"add", "environment", "fail", "shout"}
        assert tools["add"].input_schema["required"] == ["a", "b"]
        added = await mcp.call(alice, server.id, "add", {"a": 2, "b": 3})
        assert (added.ok, added.output, added.data) == (True, "5", {"result": 5})
        assert mcp.connections.running() == 1  # the process stays for the next call
        own = await mcp.call(alice, server.id, "environment", {"name": "CALC_KEY"})
        leaked = await mcp.call(alice, server.id, "environment", {"name": "OPENAI_API_KEY"})
        assert (own.output, leaked.output) == ("k1", "")
        # what the model gets wrong comes back as a failed result, not an exception
        for tool, args in (("add", {"a": "two"}), ("fail", {"message": "no"}), ("nope", {})):
            result = await mcp.call(alice, server.id, tool, args)
            assert not result.ok, (tool, result)
        assert (
            "a\n  Input should be a valid integer"
            in (await mcp.call(alice, server.id, "add", {"a": "two", "b": 1})).output
        )
        long = await mcp.call(alice, server.id, "shout", {"text": "ab", "times": 30_000})
        assert long.output.endswith("…[truncated]") and len(long.output) < 20_100
        # another user's ids read as unknown
        with pytest.raises(NotFound):
            await mcp.call(bob, server.id, "add", {"a": 1, "b": 1})
        assert mcp.list(bob) == []
    finally:
        await mcp.close()
    assert mcp.connections.running() == 0
    # the env is encrypted at rest
    with runtime.db.reading() as session:
        row = session.scalars(select(McpServer)).one()
        assert "k1" not in (row.env_secret or "")


@pytest.mark.asyncio
async def test_stdio_commands_must_be_allowed_and_a_hanging_call_times_out(
    runtime: Runtime, tmp_path: Path, users
) -> None:
    alice, _ = users
    off = McpService(runtime.db, secrets=runtime.secrets, policy=OutboundPolicy())
    with pytest.raises(PermissionDenied, match="mcp_stdio_commands"):
        off.add(alice, stdio_server())
    for bad in (
        {"name": "x"},
        {"name": "1x", "command": "a"},
        {"name": "x", "command": "a", "url": "http://h/mcp"},
        {"name": "x", "url": "ftp://h"},
        {"name": "x", "command": "a", "env": {"A": 1}},
    ):
        with pytest.raises(InvalidParameter):
            off.add(alice, bad)
    mcp = service(runtime, tmp_path, timeout_s=1.0)
    server = mcp.add(alice, stdio_server("slow", args=["-c", "import time; time.sleep(60)"]))
    try:
        result = await mcp.call(alice, server.id, "add", {"a": 1, "b": 2})
        assert not result.ok and "did not answer within 1 s" in result.output
    finally:
        await mcp.close()


@pytest.mark.asyncio
async def test_an_http_server_is_reached_through_the_guard_with_the_users_headers(
    runtime: Runtime, tmp_path: Path, users
) -> None:
    alice, bob = users
    with HttpCalcServer(token="calc-secret") as remote:
        blocked = service(runtime, tmp_path)
        server = blocked.add(alice, {"name": "remote", "url": remote.url})
        refused = await blocked.call(alice, server.id, "add", {"a": 1, "b": 2})
        assert not refused.ok and "loopback" in refused.output

        mcp = service(runtime, tmp_path, loopback=True)
        unauthorized = await mcp.call(alice, server.id, "add", {"a": 1, "b": 2})
        assert not unauthorized.ok
        assert mcp.set_credentials(alice, server.id, {"Authorization": "Bearer calc-secret"}) == [
            "Authorization"
        ]
        assert mcp.get(alice, server.id).has_credentials
        assert [t.name for t in await mcp.tools(alice, server.id)][:1] == ["add"]
        added = await mcp.call(alice, server.id, "add", {"a": 20, "b": 22})
        assert (added.ok, added.output) == (True, "42")
        unknown = await mcp.call(alice, server.id, "nope", {})
        assert not unknown.ok and "nope" in unknown.output and "reach" not in unknown.output
        # the headers are alice's own: bob (no member of her space) cannot even see it
        with pytest.raises(NotFound):
            mcp.set_credentials(bob, server.id, {"Authorization": "Bearer x"})
        with runtime.db.reading() as session:
            assert "calc-secret" not in session.scalars(select(McpCredential.secret)).one()
        with pytest.raises(InvalidParameter):
            mcp.set_credentials(alice, server.id, {"Bad Header": "x"})
        mcp.delete(alice, server.id)
        with pytest.raises(NotFound):
            await mcp.call(alice, server.id, "add", {"a": 1, "b": 2})


def test_the_mcp_node_needs_a_server_id_and_a_tool() -> None:
    from coze_lab.core.workflows.nodes import NODE_TYPES
    from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError

    node = NODE_TYPES["mcp"]
    node.check(NodeSpec(id="n", type="mcp", config={"server_id": "7", "tool": "add"}))
    for config in ({"tool": "add"}, {"server_id": "x", "tool": "add"}, {"server_id": "7"}):
        with pytest.raises(WorkflowDefinitionError):
            node.check(NodeSpec(id="n", type="mcp", config=config))
