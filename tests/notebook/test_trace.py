"""Costs and traces as data: per-node tokens, cost (registry prices), latency and attempts;
``run.trace.to_pandas()`` and ``cl.runs.table()``; usage on workflow ``Message`` events.
Written with the project's own pytest plugin fixtures (``coze_studio``, ``coze_model``)."""

from __future__ import annotations

import builtins
from datetime import datetime, timedelta, timezone

import pytest

import coze_lab as cl
from coze_lab.core.models import InvalidModelRegistry, ModelSpec
from coze_lab.notebook.trace import NODE_COLUMNS, RUN_COLUMNS
from coze_lab.web import serialize


def two_llms() -> cl.Workflow:
    wf = cl.Workflow("costly")
    wf.inputs(doc=str)
    wf.llm("summarize", prompt="Summarize {{start.doc}}")
    wf.text("glue", template="S: {{summarize.output}}")
    wf.llm("title", prompt="Title for {{glue.output}}")
    wf.end(title="{{title.output}}")
    return wf


def test_prices_in_the_registry_are_validated() -> None:
    entry = {"id": "m", "base_url": "http://x/v1", "model": "m"}
    assert ModelSpec.from_dict(entry).prices is None
    spec = ModelSpec.from_dict({**entry, "prices": {"input": 2, "output": 8.5}})
    assert (spec.prices.input, spec.prices.output) == (2.0, 8.5)
    assert spec.to_dict()["prices"] == {"input": 2.0, "output": 8.5}
    assert spec.prices.cost({"input_tokens": 1_000_000, "output_tokens": 2_000_000}) == 19.0
    with pytest.raises(InvalidModelRegistry, match=r"model\.prices\.output: must be a non-neg"):
        ModelSpec.from_dict({**entry, "prices": {"input": 1, "output": -1}})
    with pytest.raises(InvalidModelRegistry, match="unknown field"):
        ModelSpec.from_dict({**entry, "prices": {"cached": 1}})


def test_a_run_reports_tokens_cost_latency_and_attempts_per_node(coze_studio, coze_model) -> None:
    coze_studio.set_prices(input=1_000_000, output=2_000_000)  # a token costs 1 and 2
    coze_model.reply("one two three", "A title")
    run = coze_studio.run(two_llms(), doc="rockets")
    assert run.status == "succeeded", run.error
    summarize = run.node("summarize").usage
    assert summarize["model"] == "default"
    assert summarize["output_tokens"] == 3
    assert summarize["cost"] == summarize["input_tokens"] * 1 + 3 * 2
    assert run.node("glue").usage is None
    frame = run.trace.to_pandas()
    assert list(frame.columns) == list(NODE_COLUMNS)
    rows = frame.set_index("node_id")
    assert rows.loc["summarize", "cost"] == summarize["cost"]
    assert rows.loc["title", "output_tokens"] == 2
    assert rows.loc["summarize", "attempts"] == 1 and rows.loc["summarize", "latency_ms"] >= 0
    assert rows["cost"].sum() == run.trace.cost == run.local.info.usage["cost"]
    assert run.trace.tokens == run.local.info.usage["total_tokens"]


def test_runs_table_across_runs(coze_studio, coze_model) -> None:
    coze_studio.set_prices(input=3.0, output=15.0)
    wf = two_llms()
    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    runs = [coze_studio.run(wf, doc=f"doc {i}") for i in range(3)]
    other = cl.Workflow("cheap")
    other.inputs(x=str)
    other.end(x="{{start.x}}")
    coze_studio.run(other, x="y")
    # the notebook's cl.connect() is the studio under test; it lists run_local runs too
    table = cl.runs.table(workflow="costly", since=before)
    assert list(table.columns) == list(RUN_COLUMNS)
    assert set(table["run_id"]) == {str(r.id) for r in runs}
    assert (table["nodes"] == 5).all() and (table["status"] == "succeeded").all()
    assert table["cost"].round(10).tolist() == [round(r.trace.cost, 10) for r in runs[::-1]]
    assert (table["cost"] > 0).all()
    nodes = cl.runs.table(workflow="costly", by="node")
    assert len(nodes) == 15 and set(nodes["node_id"]) >= {"summarize", "title"}
    assert cl.runs.table(workflow="costly", since=timedelta(seconds=-60)).empty
    assert cl.runs.table(workflow="nope").empty
    assert len(cl.runs.table()) == 4 and len(cl.runs.table(workflow=other)) == 1


def test_without_pandas_the_error_says_what_to_install(
    coze_studio, coze_model, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = coze_studio.run(two_llms(), doc="x")
    real_import = builtins.__import__

    def no_pandas(name: str, *args, **kwargs):
        if name == "pandas":
            raise ImportError("No module named 'pandas'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(ImportError, match="pip install pandas"):
        run.trace.to_pandas()
    with pytest.raises(ImportError, match="pip install pandas"):
        cl.runs.table()
    assert run.trace.rows[0]["run_id"] == str(run.id)  # the rows need no pandas
    assert run.trace.cost is None  # no prices configured: no cost


def test_message_events_carry_the_usage_so_far() -> None:
    usage = {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10, "cost": 0.1}
    data = {"node_id": "out", "node_title": "out", "content": "hi", "node_is_finish": True}
    [(name, message)] = serialize.coze_workflow_events("message", {**data, "usage": usage}, 4)
    assert name == "Message"
    assert message["usage"] == {"token_count": 10, "output_count": 3, "input_count": 7}
    [(_, bare)] = serialize.coze_workflow_events("message", data, 5)
    assert bare["usage"] is None


def test_a_message_node_streams_the_runs_usage(coze_studio, coze_model) -> None:
    wf = cl.Workflow("says")
    wf.inputs(doc=str)
    wf.llm("summarize", prompt="Summarize {{start.doc}}")
    wf.message("say", content="{{summarize.output}}")
    wf.end(said="{{say.output}}")
    coze_model.reply("four words right here")
    run = coze_studio.run(wf, doc="x")
    assert run.status == "succeeded", run.error
    events = list(coze_studio.studio.events(run.id))
    said, ended = [e.data for e in events if e.event == "message"]
    assert said["node_id"] == "say" and ended["node_id"] == "end"
    assert said["usage"] == ended["usage"]
    message = said
    assert message["content"] == "four words right here"
    assert message["usage"]["output_tokens"] == 4
    assert message["usage"]["total_tokens"] == run.node("summarize").usage["total_tokens"]


def test_a_served_runs_widget_gives_its_trace(coze_studio, coze_model) -> None:
    coze_studio.set_prices(input=1.0, output=1.0)
    coze_model.reply("served words", "title")
    widget = two_llms().run(doc="served")  # on the server cl.connect() gives: the studio
    try:
        widget.wait(60)
        assert widget.status == "succeeded"
        frame = widget.trace.to_pandas()
    finally:
        widget.close()
    assert frame.set_index("node_id").loc["summarize", "output_tokens"] == 2
    assert frame["cost"].notna().sum() == 2
    [row] = cl.runs.table(workflow="costly").to_dict("records")
    assert row["run_id"] == widget.id and row["cost"] == widget.trace.cost


def test_chat_answers_carry_their_usage_and_cost(coze_studio, coze_model) -> None:
    """Per-message usage through real HTTP (the studio served on loopback): a bot's answer
    and a chat-flow's, whose llm node streams and reads the conversation's last round."""
    import httpx
    from cozepy import ChatEventType, Coze, Message, TokenAuth

    coze_studio.set_prices(input=1_000_000, output=2_000_000)  # a token costs 1 and 2
    studio = coze_studio.studio
    bot = studio.create_bot(name="priced", prompt_info={"prompt": "Be terse."},
                            model_info_config={"model_id": "default"},
                            suggest_reply_info={"reply_mode": "disable"})
    coze_model.reply("three short words")
    chat = studio.chat(bot.get("bot_id") or bot["id"])
    try:
        chat.send("hi").wait(60)
        assert chat.status == "completed", chat.error
        answer = chat.messages[-1]
    finally:
        chat.close()
    usage = answer["usage"]
    assert usage["output_count"] == 3 and usage["cost"] == usage["input_count"] + 3 * 2
    assert [m.get("usage") for m in studio.messages(chat.conversation_id)] == [None, usage]

    flow = cl.Workflow("remembering")
    flow.inputs(USER_INPUT=str)
    flow.llm("reply", prompt="{{start.USER_INPUT}}", stream=True, chat_history=True,
             history_rounds=1)
    flow.end(output="{{reply.output}}")
    workflow_id = studio.save_workflow(flow.to_json(), publish=True)["id"]
    coze = Coze(auth=TokenAuth(studio.token), base_url=studio.url.rstrip("/"))
    conversation = None
    for question, said in (("first?", "one"), ("second?", "two words"), ("third?", "ok")):
        coze_model.reply(said)
        events = list(coze.workflows.chat.stream(
            workflow_id=workflow_id, conversation_id=conversation,
            additional_messages=[Message.build_user_question_text(question)]))
        assert events[-1].event == ChatEventType.CONVERSATION_CHAT_COMPLETED
        conversation = events[-1].chat.conversation_id
    sent = [(m["role"], m["content"]) for m in coze_model.requests[-1]["messages"]]
    assert sent == [("user", "second?"), ("assistant", "two words"), ("user", "third?")]
    assert coze_model.requests[-1]["stream"] is True
    listed = httpx.post(
        studio.url + "v1/conversation/message/list",
        params={"conversation_id": conversation},
        headers={"Authorization": f"Bearer {studio.token}"},
        json={"order": "asc"},
    ).json()["data"]
    answers = [m for m in listed if m["type"] == "answer"]
    assert [m["content"] for m in answers] == ["one", "two words", "ok"]
    assert answers[1]["usage"]["output_count"] == 2
    assert answers[1]["usage"]["cost"] == answers[1]["usage"]["input_count"] + 2 * 2
