"""``cl.mcp`` from a notebook: add a stdio MCP server, list its tools, a ``cl.Bot`` using one."""

from __future__ import annotations

import sys

import coze_lab as cl
from coze_lab.notebook import in_process as local
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer, ScriptedToolCall, TextReply, ToolCallsReply
from tests.core.mcp.servers import CALC_SERVER


def test_mcp_servers_from_a_notebook_and_a_bot_that_uses_one(
    runtime: Runtime, model_env: ModelServer
) -> None:
    runtime.config.mcp_stdio_commands = [sys.executable]
    host = local.use_runtime(runtime, "alice")
    try:
        calc = cl.mcp.add("calc", command=sys.executable, args=[str(CALC_SERVER)])
        assert [s.name for s in cl.mcp.servers()] == ["calc"]
        assert "add" in {t["name"] for t in calc.tools()}
        bot = cl.Bot("Adder", prompt="Add with your tool.", mcp_servers=[(calc, ["add"])])
        model_env.script([
            ToolCallsReply([ScriptedToolCall("add", {"a": 1, "b": 2}, id="c1")]),
            TextReply("It is 3."),
        ])
        reply = bot.chat("1 + 2?")
        assert reply.text == "It is 3." and reply.status == "completed"
        assert [t["function"]["name"] for t in model_env.requests[0]["tools"]] == ["add"]
        assert model_env.requests[1]["messages"][-1]["content"] == "3"
        calc.delete()
        assert cl.mcp.servers() == []
    finally:
        host.close()
        local._default = None
