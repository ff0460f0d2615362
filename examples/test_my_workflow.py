"""Test your own workflows and bots with plain pytest: copy this file next to your code.

The fixtures come from coze_lab's pytest plugin (installed with coze_lab, nothing to
configure): ``coze_model`` is a scripted model, ``coze_studio`` an isolated studio in this
process. Run it with ``pytest test_my_workflow.py``. See docs/guides/testing.md.
"""

from __future__ import annotations

import coze_lab as cl


def summarizer() -> cl.Workflow:
    """The workflow under test (in your project you would import it)."""
    wf = cl.Workflow("summarizer")
    wf.inputs(doc=str)
    wf.llm("summarize", prompt="Summarize in one sentence: {{start.doc}}")
    wf.question("approve", question="Publish '{{summarize.output}}'?", choices=["yes", "no"])
    wf.end(summary="{{summarize.output}}", approved="{{approve.answer}}")
    return wf


def test_the_summary_is_asked_about_and_published(coze_studio, coze_model) -> None:
    coze_model.reply("Rockets are fast.")
    run = coze_studio.run(summarizer(), doc="A long text about rockets ...")
    # the model was asked once, with the document in its prompt
    assert coze_model.calls == 1
    assert "A long text about rockets" in coze_model.prompts[0]
    assert run.node("summarize").output == "Rockets are fast."
    # the run waits for a person: answer the question it asks
    assert run.questions == ["Publish 'Rockets are fast.'?"]
    run.answer("yes")
    assert run.status == "succeeded"
    assert run.outputs == {"summary": "Rockets are fast.", "approved": "yes"}


def test_a_model_failure_fails_the_run_at_its_node(coze_studio, coze_model) -> None:
    coze_model.fail(503, "overloaded")
    run = coze_studio.run(summarizer(), doc="text")
    assert run.status == "failed"
    assert run.error["node_id"] == "summarize" and "overloaded" in run.error["msg"]
    assert "approve" not in run.nodes  # nothing after the failed node ran


def test_a_bot_calls_its_tool(coze_studio, coze_model) -> None:
    weather = {"name": "weather", "parameters": {"type": "object", "properties": {}}}
    bot = cl.Bot("forecaster", prompt="You tell the weather.", functions=[weather])
    coze_model.tool_call("weather", city="Rome")
    reply = bot.chat("Weather in Rome?")
    assert reply.status == "requires_action"  # a client function: the test answers it
    call = reply.required_action["submit_tool_outputs"]["tool_calls"][0]
    coze_model.reply("It is sunny in Rome.")
    after = reply.submit_tool_outputs({call["id"]: {"sky": "sunny"}})
    assert after.text == "It is sunny in Rome."
    assert coze_model.tools_called == ["weather"]
