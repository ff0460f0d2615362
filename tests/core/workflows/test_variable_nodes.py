"""The variable node reads and the assign node (``mode="bot_variables"``) writes a bot's
variables for the run's end user, through the VariableService, as the bot
(``agent_can_set``); a run without a bot fails the node, saying so."""

from __future__ import annotations

import pytest

import coze_lab as cl
from coze_lab.core import connectors
from coze_lab.core.memory.variables import bot_context
from coze_lab.core.workflows import WorkflowDefinitionError
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.web.requests import parse_bot_edit

VARIABLES = [
    {"keyword": "city", "default_value": "Paris"},
    {"keyword": "plan", "default_value": "free", "agent_can_set": False},
]


def remember_city() -> cl.Workflow:
    wf = cl.Workflow("remember_city")
    wf.inputs(city=str)
    wf.node("variable", "before", keywords=["city", "plan"])
    wf.node(
        "assign",
        "remember",
        mode="bot_variables",
        inputs={"city": "{{start.city}}"},
        after="before",
    )
    wf.node("variable", "after", keywords=["city"], after="remember")
    wf.end(was="{{before.city}}", plan="{{before.plan}}", now="{{after.city}}")
    return wf


def test_a_run_with_a_bot_reads_and_writes_its_variables(host: InProcessHost) -> None:
    runtime, user = host.runtime, host.user
    edit = parse_bot_edit({"name": "B", "variables": VARIABLES}, create=True)
    bot = runtime.bots.create(user.id, user.workspace_id, edit)
    variables = runtime.variables
    scope, config = variables.scope(user.id, bot.id, connectors.PLAYGROUND, "u1")

    def run(wf: cl.Workflow, inputs: dict, context: dict | None):  # type: ignore[no-untyped-def]
        async def go():  # type: ignore[no-untyped-def]
            run_id = await runtime.runs.start(
                user.id, None, inputs, spec=wf.validate(), bot_context=context
            )
            return await runtime.runs.wait(run_id)

        return host.call(go())

    done = run(remember_city(), {"city": "Oslo"}, bot_context(scope))
    assert done.status == "succeeded", done.error
    assert done.outputs == {"was": "Paris", "plan": "free", "now": "Oslo"}
    assert variables.values(scope, config) == {"city": "Oslo", "plan": "free"}
    other, _ = variables.scope(user.id, bot.id, connectors.PLAYGROUND, "u2")
    assert variables.values(other, config)["city"] == "Paris"  # another end user: untouched

    # no bot: the node says why; nothing is written
    lost = run(remember_city(), {"city": "Rome"}, None)
    assert lost.status == "failed"
    assert "this run has no bot" in lost.error["msg"] and "bot_id" in lost.error["msg"]

    # the bot may not set plan: the node fails naming it, and writes none of its values
    wf = cl.Workflow("upgrade")
    wf.inputs(city=str)
    wf.node("assign", "set", mode="bot_variables", inputs={"city": "x", "plan": "pro"})
    wf.end(plan="{{set.plan}}")
    refused = run(wf, {"city": "x"}, bot_context(scope))
    assert refused.status == "failed"
    assert "may not set" in refused.error["msg"] and "plan" in refused.error["msg"]
    assert variables.values(scope, config) == {"city": "Oslo", "plan": "free"}

    # an unknown keyword is the node's error, naming it
    wf = cl.Workflow("unknown")
    wf.inputs(city=str)
    wf.node("variable", "read", keywords=["colour"])
    wf.end(c="{{read.colour}}")
    unknown = run(wf, {"city": "x"}, bot_context(scope))
    assert unknown.status == "failed" and "colour" in unknown.error["msg"]


def test_definition_errors_name_the_node() -> None:
    wf = cl.Workflow("bad")
    wf.inputs(x=str)
    with pytest.raises(WorkflowDefinitionError, match="keywords"):
        wf.node("variable", "read", keywords=[])
    with pytest.raises(WorkflowDefinitionError, match="keywords"):
        wf.node("variable", "read2", keywords=["not a name"])
    with pytest.raises(WorkflowDefinitionError, match="assign mode"):
        wf.node("assign", "set", mode="database", inputs={"a": "1"})
