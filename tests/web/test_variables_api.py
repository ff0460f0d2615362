"""Coze's ``/v1/variables`` through cozepy against a real ``coze-lab serve``: values per
connector and end user, the chat prompt using them, isolation between users, bad input."""

from __future__ import annotations

import json

import pytest
from cozepy import ChatStatus, CozeAPIError, VariableValue

import coze_lab as cl
from coze_lab.testing import ModelServer, ScriptedToolCall, TextReply, ToolCallsReply
from tests.web.test_chat_api import Lab, ask, lab, make_bot, publish

__all__ = ["lab"]  # fixtures imported for this module's tests

VARIABLES = [
    {"keyword": "name", "default_value": "friend", "description": "what to call the user"},
    {"keyword": "city", "default_value": "", "enable": True},
    {"keyword": "secret", "default_value": "off", "enable": False},
]


def variable_bot(lab: Lab, who: str = "alice", **extra: object) -> str:
    bot_id = make_bot(lab, who, prompt="Call the user {{name}}; they live in {{city}}.")
    body = {"bot_id": bot_id, "variables": VARIABLES, **extra}
    response = lab.post("/v1/bot/update", who, json=body)
    assert response.json()["code"] == 0, response.text
    publish(lab, bot_id, who)
    return bot_id


def values(
    lab: Lab,
    who: str,
    bot_id: str,
    uid: str,
    connector: str | None = "1024",
    keywords: list[str] | None = None,
) -> dict[str, str]:
    items = (
        lab.coze(who)
        .variables.retrieve(
            bot_id=bot_id, connector_id=connector, connector_uid=uid, keywords=keywords or []
        )
        .data
    )
    return {v.keyword: v.value for v in items}


def set_values(
    lab: Lab, who: str, bot_id: str, uid: str, connector: str | None = "1024", **pairs: str
) -> None:
    lab.coze(who).variables.update(
        bot_id=bot_id,
        connector_id=connector,
        connector_uid=uid,
        data=[VariableValue(keyword=k, value=v) for k, v in pairs.items()],
    )


def test_round_trip_per_connector_and_end_user(lab: Lab) -> None:
    bot_id = variable_bot(lab)
    # never set: the defaults, with no times; no keywords: every enabled variable
    assert values(lab, "alice", bot_id, "u1") == {"name": "friend", "city": ""}
    set_values(lab, "alice", bot_id, "u1", name="Ada", city="Oslo")
    set_values(lab, "alice", bot_id, "u2", name="Grace")
    set_values(lab, "alice", bot_id, "u1", "999", name="Web Ada")
    items = (
        lab.coze()
        .variables.retrieve(
            bot_id=bot_id, connector_id="1024", connector_uid="u1", keywords=["name"]
        )
        .data
    )
    assert [(v.keyword, v.value) for v in items] == [("name", "Ada")]
    assert items[0].create_time > 0 and items[0].update_time >= items[0].create_time
    assert values(lab, "alice", bot_id, "u1") == {"name": "Ada", "city": "Oslo"}
    assert values(lab, "alice", bot_id, "u2") == {"name": "Grace", "city": ""}
    assert values(lab, "alice", bot_id, "u1", "999") == {"name": "Web Ada", "city": ""}
    # an update replaces the value; the others stay
    set_values(lab, "alice", bot_id, "u1", city="Bergen")
    assert values(lab, "alice", bot_id, "u1") == {"name": "Ada", "city": "Bergen"}
    # a token bound to the Web SDK connector reads that connector's values by default,
    # and may not name another one
    assert values(lab, "alice_web", bot_id, "u1", None) == {"name": "Web Ada", "city": ""}
    with pytest.raises(CozeAPIError) as refused:
        values(lab, "alice_web", bot_id, "u1", "1024")
    assert refused.value.code == 4000 and "999" in refused.value.msg
    # the Playground's values use the draft's variables
    set_values(lab, "alice", bot_id, "u1", "10000010", name="Draft Ada")
    assert values(lab, "alice", bot_id, "u1", "10000010")["name"] == "Draft Ada"
    assert values(lab, "alice", bot_id, "u1")["name"] == "Ada"


def test_chat_prompt_uses_the_end_users_values(lab: Lab, model_server: ModelServer) -> None:
    bot_id = variable_bot(lab)
    set_values(lab, "alice", bot_id, "u1", name="Ada", city="Oslo")
    model_server.script([TextReply("Hi Ada."), TextReply("Hi."), TextReply("Hi.")])

    def prompt(uid: str, **extra: object) -> str:
        list(
            lab.coze().chat.stream(
                bot_id=bot_id, user_id=uid, additional_messages=ask("Hi"), **extra
            )
        )
        return model_server.requests[-1]["messages"][0]["content"]

    assert prompt("u1") == "Call the user Ada; they live in Oslo."
    assert prompt("u2") == "Call the user friend; they live in ."  # another end user: defaults
    # the request's custom_variables win over the stored values
    assert prompt("u1", custom_variables={"name": "Captain"}) == (
        "Call the user Captain; they live in Oslo."
    )


def test_bob_never_sees_alices_variables(lab: Lab) -> None:
    bot_id = variable_bot(lab)
    set_values(lab, "alice", bot_id, "u1", name="Ada")
    for call in (
        lambda: values(lab, "bob", bot_id, "u1"),
        lambda: set_values(lab, "bob", bot_id, "u1", name="Mallory"),
    ):
        with pytest.raises(CozeAPIError) as hidden:
            call()
        assert hidden.value.code == 4200  # the bot does not exist for bob
    assert values(lab, "alice", bot_id, "u1")["name"] == "Ada"
    # bob's own bot with the same keywords and end user id starts from the defaults
    bobs = variable_bot(lab, "bob")
    assert values(lab, "bob", bobs, "u1") == {"name": "friend", "city": ""}


def test_bad_input_is_a_400_naming_it(lab: Lab) -> None:
    bot_id = variable_bot(lab)
    set_values(lab, "alice", bot_id, "u1", name="Ada")

    def refused(call) -> str:  # type: ignore[no-untyped-def]
        with pytest.raises(CozeAPIError) as error:
            call()
        assert error.value.code == 4000, error.value
        return str(error.value.msg)

    msg = refused(lambda: set_values(lab, "alice", bot_id, "u1", name="Eve", nickname="x"))
    assert "nickname" in msg and "name" in msg
    assert "secret" in refused(lambda: set_values(lab, "alice", bot_id, "u1", secret="on"))
    assert "colour" in refused(lambda: values(lab, "alice", bot_id, "u1", keywords=["colour"]))
    msg = refused(lambda: set_values(lab, "alice", bot_id, "u1", name="x" * 10_001))
    assert "10000" in msg and "name" in msg
    assert "connector_uid" in refused(lambda: values(lab, "alice", bot_id, ""))
    assert "connector_id" in refused(lambda: values(lab, "alice", bot_id, "u1", "42"))
    # nothing of a refused update was written
    assert values(lab, "alice", bot_id, "u1")["name"] == "Ada"
    # exactly at the limit is fine
    set_values(lab, "alice", bot_id, "u1", name="x" * 10_000)
    assert values(lab, "alice", bot_id, "u1")["name"] == "x" * 10_000
    # not published to a connector: Coze's 4015
    draft_only = make_bot(lab)
    lab.post("/v1/bot/update", json={"bot_id": draft_only, "variables": VARIABLES})
    with pytest.raises(CozeAPIError) as unpublished:
        values(lab, "alice", draft_only, "u1")
    assert unpublished.value.code == 4015


def test_the_agent_saves_a_variable_with_the_built_in_tool(
    lab: Lab, model_server: ModelServer
) -> None:
    bot_id = variable_bot(lab, save_variables=True)
    shown = lab.get(f"/v1/bots/{bot_id}", params={"is_published": "true"}).json()["data"]
    assert shown["save_variables"] is True
    model_server.script(
        [
            ToolCallsReply(
                [ScriptedToolCall("save_variable", {"keyword": "city", "value": "Oslo"}, id="c1")]
            ),
            TextReply("Noted: Oslo."),
            # a keyword the bot does not have: the model is told, nothing is written
            ToolCallsReply(
                [ScriptedToolCall("save_variable", {"keyword": "pet", "value": "cat"}, id="c2")]
            ),
            TextReply("I cannot remember pets."),
            TextReply("Hello."),
        ]
    )
    poll = lab.coze().chat.create_and_poll(
        bot_id=bot_id, user_id="u1", additional_messages=ask("I live in Oslo.")
    )
    assert poll.chat.status == ChatStatus.COMPLETED, poll.chat.last_error
    offered = model_server.requests[0]["tools"][0]["function"]
    assert offered["name"] == "save_variable"
    assert offered["parameters"]["properties"]["keyword"]["enum"] == ["name", "city"]
    assert "what to call the user" in offered["description"]
    assert [m.type for m in poll.messages] == ["function_call", "tool_response", "answer"]
    assert poll.messages[1].content == "saved city"
    assert values(lab, "alice", bot_id, "u1") == {"name": "friend", "city": "Oslo"}
    assert values(lab, "alice", bot_id, "u2")["city"] == ""  # another end user: untouched

    refused = lab.coze().chat.create_and_poll(
        bot_id=bot_id, user_id="u1", additional_messages=ask("I have a cat.")
    )
    assert refused.chat.status == ChatStatus.COMPLETED, refused.chat.last_error
    assert "unknown variable keywords: pet" in refused.messages[1].content
    # the next chat's prompt carries the saved value
    list(lab.coze().chat.stream(bot_id=bot_id, user_id="u1", additional_messages=ask("Hi")))
    assert model_server.requests[-1]["messages"][0]["content"] == (
        "Call the user friend; they live in Oslo."
    )


def test_without_the_switch_no_tool_is_offered(lab: Lab, model_server: ModelServer) -> None:
    bot_id = variable_bot(lab)
    model_server.script([TextReply("Hi.")])
    list(lab.coze().chat.stream(bot_id=bot_id, user_id="u1", additional_messages=ask("Hi")))
    assert "tools" not in model_server.requests[-1] or not model_server.requests[-1]["tools"]
    response = lab.post("/v1/bot/update", json={"bot_id": bot_id, "save_variables": "yes"})
    assert response.json()["code"] == 4000 and "save_variables" in response.json()["msg"]


def test_who_may_set_and_a_workflow_run_with_bot_id(lab: Lab) -> None:
    """``user_can_set`` guards PUT /v1/variables; a workflow run with ``bot_id`` (and
    ``ext.user_id``) assigns a variable that /v1/variables then reads, and its assign node
    honours ``agent_can_set``."""
    bot_id = variable_bot(lab)
    guarded = [
        *VARIABLES,
        {"keyword": "plan", "default_value": "free", "user_can_set": False},
        {"keyword": "mood", "agent_can_set": False},
    ]
    response = lab.post("/v1/bot/update", json={"bot_id": bot_id, "variables": guarded})
    assert response.json()["code"] == 0, response.text
    publish(lab, bot_id)
    shown = lab.get(f"/v1/bots/{bot_id}", params={"is_published": "true"}).json()["data"]
    assert [(v["keyword"], v["user_can_set"]) for v in shown["variables"][-2:]] == [
        ("plan", False),
        ("mood", True),
    ]
    with pytest.raises(CozeAPIError) as refused:
        set_values(lab, "alice", bot_id, "u1", city="Oslo", plan="pro")
    assert refused.value.code == 4000 and "plan" in refused.value.msg
    assert "user_can_set" in refused.value.msg
    assert values(lab, "alice", bot_id, "u1")["city"] == ""  # all or none

    wf = cl.Workflow("upgrade")
    wf.inputs(plan=str)
    wf.node("assign", "set", mode="bot_variables", inputs={"plan": "{{start.plan}}"})
    wf.end(plan="{{set.plan}}")
    saved = lab.post("/coze_lab/api/workflows", json={"definition": wf.to_json(), "publish": True})
    workflow_id = saved.json()["data"]["id"]
    coze = lab.coze()
    result = coze.workflows.runs.create(
        workflow_id=workflow_id, parameters={"plan": "pro"}, bot_id=bot_id, ext={"user_id": "u1"}
    )
    assert json.loads(result.data) == {"plan": "pro"}
    assert values(lab, "alice", bot_id, "u1")["plan"] == "pro"
    assert values(lab, "alice", bot_id, "u2")["plan"] == "free"
    # without bot_id the node says the run has no bot
    with pytest.raises(CozeAPIError) as lost:
        coze.workflows.runs.create(workflow_id=workflow_id, parameters={"plan": "x"})
    assert "no bot" in lost.value.msg
    # bob cannot aim a run at alice's bot
    bobs_run = lab.post(
        "/v1/workflow/run", "bob", json={"workflow_id": workflow_id, "bot_id": bot_id}
    )
    assert bobs_run.json()["code"] != 0
