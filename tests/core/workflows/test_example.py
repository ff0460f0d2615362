"""The issue's example, end to end in-process: sandbox, a real model server, a question."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import coze_lab as cl
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.testing import ModelServer
from tests.core.workflows.examples import DOC_REVIEW


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelServer]:
    with ModelServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("COZE_LAB_DEFAULT_MODEL", "coze-lab-demo")
        yield server


def test_doc_review_runs_pauses_and_finishes(host: InProcessHost, model_server: ModelServer) -> None:
    model_server.script(["The document says hello twice."])
    run = host.run(DOC_REVIEW.validate(), {"doc": "hello   hello\n world"})
    assert run.status == "interrupted", run.error
    prompt = model_server.requests[-1]["messages"][-1]["content"]
    assert prompt == "Summarize in one sentence: hello hello world"
    [question] = run.pending
    assert question.data["question"] == "Approve this summary?\nThe document says hello twice."
    assert run.nodes["summarize"].usage["output_tokens"] > 0

    run.resume(question.event_id, "yes")
    assert run.status == "succeeded"
    assert run.outputs == {
        "summary": "The document says hello twice.",
        "words": 3,
        "approved": "yes",
    }
    assert run.info.usage["total_tokens"] == run.nodes["summarize"].usage["total_tokens"]


def test_model_errors_fail_the_llm_node_clearly(
    host: InProcessHost,
    model_server: ModelServer,
) -> None:
    from coze_lab.testing.model_server import ErrorReply

    model_server.script([ErrorReply(400, "context too long")] * 3)
    run = host.run(DOC_REVIEW.validate(), {"doc": "x"})
    assert run.status == "failed"
    assert run.error["node_id"] == "summarize"
    assert "context too long" in run.error["msg"]


def test_no_model_configured_says_so(host: InProcessHost, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "COZE_LAB_DEFAULT_MODEL",
        "COZE_LAB_MODELS_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    run = host.run(DOC_REVIEW.validate(), {"doc": "x"})
    assert run.status == "failed"
    assert "OPENAI_BASE_URL" in run.error["msg"] or "model" in run.error["msg"].lower()


def support_router() -> cl.Workflow:
    wf = cl.Workflow("router")
    wf.inputs(message=str)
    wf.node("intent", "route", query="{{start.message}}", intents=[
        {"port": "refund", "description": "wants money back"},
        {"port": "order", "description": "asks about an order"}])
    wf.text("refunds", template="refunds desk", after="route:refund")
    wf.text("orders", template="orders desk", after="route:order")
    wf.text("humans", template="a person", after="route:else")
    wf.node("aggregate", "desk", inputs={"a": "{{refunds.output}}", "b": "{{orders.output}}",
                                         "c": "{{humans.output}}"},
            after=["refunds", "orders", "humans"])
    wf.node("assign", "named", inputs={"desk": "{{desk.output}}", "intent": "{{route.intent}}"})
    wf.end(desk="{{named.desk}}", intent="{{named.intent}}")
    return wf


@pytest.mark.parametrize(("reply", "desk", "intent"), [
    ('{"intent": "refund"}', "refunds desk", "refund"),
    ("This is about an ORDER.", "orders desk", "order"),
    ('{"intent": "weather"}', "a person", "else"),
])
def test_intent_node_routes_by_the_models_choice(host: InProcessHost, model_server: ModelServer,
                                                 reply: str, desk: str, intent: str) -> None:
    model_server.script([reply])
    run = host.run(support_router().validate(), {"message": "my parcel never came"})
    assert run.status == "succeeded", run.error
    assert run.outputs == {"desk": desk, "intent": intent}
    system = model_server.requests[-1]["messages"][0]["content"]
    assert "refund: wants money back" in system and "order: asks about an order" in system
