"""The llm node against the local model server: streamed answers as partial message events,
and the conversation's history in the prompt."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cozepy import WorkflowEventMessage

import coze_lab as cl
from coze_lab.core.workflows.spec import WorkflowDefinitionError
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.testing import ModelServer
from coze_lab.web import serialize


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelServer]:
    with ModelServer(chunk_delay=0.01) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("COZE_LAB_DEFAULT_MODEL", "coze-lab-demo")
        yield server


def events(host: InProcessHost, run_id: int) -> list[tuple[str, dict[str, Any]]]:
    async def read() -> list[tuple[str, dict[str, Any]]]:
        runs = host.runtime.runs
        return [(name, data) async for _, name, data in runs.events(host.user.id, run_id)]

    return host.call(read())


def test_a_streaming_llm_node_sends_its_answer_piece_by_piece(
    host: InProcessHost, model_server: ModelServer
) -> None:
    wf = cl.Workflow("streamed")
    wf.inputs(topic=str)
    wf.llm("write", prompt="Write about {{start.topic}}", stream=True)
    wf.end(text="{{write.output}}", answer_template="{{write.output}}")
    answer = "one two three four five six seven eight"
    model_server.script([answer])
    run = host.run(wf.validate(), {"topic": "tea"})
    assert run.status == "succeeded", run.error
    assert model_server.requests[0]["stream"] is True
    messages = [d for name, d in events(host, run.id) if name == "message"]
    from_llm = [m for m in messages if m["node_id"] == "write"]
    pieces = [m for m in from_llm if not m["node_is_finish"]]
    assert len(pieces) >= 2 and "".join(m["content"] for m in pieces) == answer
    last = from_llm[-1]
    assert last["node_is_finish"] is True and last["content"] == ""
    assert last["usage"]["output_tokens"] > 0
    assert messages[-1]["node_id"] == "end" and messages[-1]["content"] == answer
    assert run.nodes["write"].usage["output_tokens"] == last["usage"]["output_tokens"]
    # on the Coze API they are Message events, as cozepy reads them
    coze = [serialize.coze_workflow_events("message", m, i)[0] for i, m in enumerate(from_llm)]
    parsed = [WorkflowEventMessage.model_validate(data) for _, data in coze]
    assert [p.node_is_finish for p in parsed] == [False] * len(pieces) + [True]
    assert "".join(p.content for p in parsed) == answer
    assert parsed[-1].usage is not None and parsed[-1].usage.output_count > 0


def test_chat_history_puts_the_last_rounds_before_the_prompt(
    host: InProcessHost, model_server: ModelServer
) -> None:
    wf = cl.Workflow("remembers")
    wf.inputs(USER_INPUT=str)
    wf.llm("reply", prompt="{{start.USER_INPUT}}", system="Be brief.", chat_history=True,
           history_rounds=2)
    wf.llm("fresh", prompt="{{start.USER_INPUT}}")
    wf.end(output="{{reply.output}}")
    said = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "a2"},
        {"role": "user", "content": "q3"},
        {"role": "assistant", "content": "a3"},
    ]

    async def start() -> Any:
        runs = host.runtime.runs
        run_id = await runs.start(host.user.id, None, {"USER_INPUT": "q4"}, spec=wf.validate(),
                                  history=said)
        return await runs.wait(run_id)

    info = host.call(start())
    assert info.status == "succeeded", info.error
    first, second = model_server.requests
    assert [(m["role"], m["content"]) for m in first["messages"]] == [
        ("system", "Be brief."),
        ("user", "q2"), ("assistant", "a2"), ("user", "q3"), ("assistant", "a3"),
        ("user", "q4"),
    ]
    assert [m["content"] for m in second["messages"]] == ["q4"]  # no chat_history: none
    # a run started elsewhere has no conversation: only the prompt
    model_server.reset()
    run = host.run(wf.validate(), {"USER_INPUT": "alone"})
    assert run.status == "succeeded", run.error
    assert [m["content"] for m in model_server.requests[0]["messages"]] == ["Be brief.", "alone"]
    bad = cl.Workflow("bad")
    bad.inputs(x=str)
    with pytest.raises(WorkflowDefinitionError, match="history_rounds"):
        bad.llm("r", prompt="{{start.x}}", chat_history=True, history_rounds=0)
