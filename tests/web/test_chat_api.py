"""Bots and chat through cozepy against a real ``coze-lab serve`` and the local model server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cozepy import (
    BotModelInfo,
    BotPromptInfo,
    BotSuggestReplyInfo,
    ChatEventType,
    ChatStatus,
    Coze,
    CozeAPIError,
    FeedbackType,
    Message,
    MessageType,
    PluginIDList,
    SuggestReplyMode,
    TokenAuth,
    ToolOutput,
    WorkflowIDList,
)

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.testing import (
    ErrorReply,
    ModelServer,
    ScriptedToolCall,
    TextReply,
    ToolCallsReply,
)
from tests.support import ServerProcess, read_sse_events


@dataclass
class Lab:
    server: ServerProcess
    tokens: dict[str, str]
    workspaces: dict[str, str]
    data_dir: Path
    db_url: str

    def coze(self, who: str = "alice") -> Coze:
        return Coze(auth=TokenAuth(self.tokens[who]), base_url=self.server.url)

    def post(self, path: str, who: str = "alice", **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return httpx.post(self.server.url + path, headers=headers, timeout=30, **kwargs)

    def put(self, path: str, who: str = "alice", **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return httpx.put(self.server.url + path, headers=headers, timeout=30, **kwargs)

    def get(self, path: str, who: str = "alice", **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return httpx.get(self.server.url + path, headers=headers, timeout=30, **kwargs)


@pytest.fixture
def lab(tmp_path: Path, db_url: str, model_server: ModelServer) -> Iterator[Lab]:
    data_dir = tmp_path / "server-data"
    runtime = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    runtime.start()
    tokens: dict[str, str] = {}
    workspaces: dict[str, str] = {}
    for name, connector in (("alice", None), ("alice_web", "999"), ("bob", None)):
        user = runtime.identity.ensure_user(name.split("_")[0])
        tokens[name] = runtime.tokens.create(user.id, name, connector_id=connector)[1]
        workspaces[name] = str(user.workspace_id)
    runtime.db.dispose()
    env = {
        "OPENAI_BASE_URL": model_server.url,
        "OPENAI_API_KEY": "test-key",
        "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
        "COZE_LAB_CHAT_KEEPALIVE_S": "0.5",
    }
    process = ServerProcess(data_dir, db_url, env=env).start()
    yield Lab(process, tokens, workspaces, data_dir, db_url)
    process.stop()


def make_bot(lab: Lab, who: str = "alice", prompt: str = "You are terse.", **extra) -> str:
    bot = lab.coze(who).bots.create(
        space_id=lab.workspaces[who],
        name="Helper",
        prompt_info=BotPromptInfo(prompt=prompt),
        **{"model_info_config": BotModelInfo(model_id="default", temperature=0.1), **extra},
    )
    return bot.bot_id


def publish(lab: Lab, bot_id: str, who: str = "alice") -> None:
    lab.coze(who).bots.publish(bot_id=bot_id, connector_ids=["1024", "999"])


def ask(text: str) -> list[Message]:
    return [Message.build_user_question_text(text)]


def test_publish_stream_events_and_fields(lab: Lab, model_server: ModelServer) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    model_server.script([TextReply("Paris is the capital of France.")])
    events = list(
        lab.coze().chat.stream(bot_id=bot_id, user_id="u-1", additional_messages=ask("Capital?"))
    )
    names = [e.event for e in events]
    assert names[0] == ChatEventType.CONVERSATION_CHAT_CREATED
    assert names[1] == ChatEventType.CONVERSATION_CHAT_IN_PROGRESS
    assert names[-2:] == [
        ChatEventType.CONVERSATION_MESSAGE_COMPLETED,
        ChatEventType.CONVERSATION_CHAT_COMPLETED,
    ]
    deltas = [e.message for e in events if e.event == ChatEventType.CONVERSATION_MESSAGE_DELTA]
    assert len(deltas) > 1
    answer = events[-2].message
    assert "".join(d.content for d in deltas) == answer.content == "Paris is the capital of France."
    assert {d.id for d in deltas} == {answer.id}
    chat = events[-1].chat
    assert chat.status == ChatStatus.COMPLETED and chat.usage.token_count > 0
    assert chat.usage.token_count == chat.usage.input_count + chat.usage.output_count
    assert answer.chat_id == chat.id and answer.conversation_id == chat.conversation_id
    assert answer.type == MessageType.ANSWER and answer.bot_id == bot_id
    assert events[0].chat.status == ChatStatus.CREATED
    # the model saw the published prompt and the question
    sent = model_server.requests[-1]["messages"]
    assert sent[0] == {"role": "system", "content": "You are terse."}
    assert sent[-1]["content"] == "Capital?"


def test_create_and_poll_runs_in_the_background(lab: Lab, model_server: ModelServer) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    model_server.script([TextReply("Done in the background.", delay=0.3)])
    coze = lab.coze()
    created = coze.chat.create(bot_id=bot_id, user_id="u", additional_messages=ask("Go"))
    assert created.status == ChatStatus.IN_PROGRESS
    # the scripted reply goes to whichever model request comes first: let it be this chat's
    deadline = time.monotonic() + 10
    while not model_server.requests:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    poll = coze.chat.create_and_poll(bot_id=bot_id, user_id="u", additional_messages=ask("Hi"))
    assert poll.chat.status == ChatStatus.COMPLETED
    answers = [m for m in poll.messages if m.type == MessageType.ANSWER]
    assert [a.content for a in answers] == ["[demo model] You said: Hi"]
    # the first chat finished too, without anyone polling it
    deadline = time.monotonic() + 10
    while coze.chat.retrieve(
        conversation_id=created.conversation_id, chat_id=created.id
    ).status != (ChatStatus.COMPLETED):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    listed = coze.chat.messages.list(conversation_id=created.conversation_id, chat_id=created.id)
    assert [m.content for m in listed] == ["Done in the background."]


def test_conversation_and_message_crud_with_pagination(lab: Lab) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    coze = lab.coze()
    conv = coze.conversations.create(
        bot_id=bot_id,
        messages=[Message.build_user_question_text("first"), Message.build_assistant_answer("a1")],
        meta_data={"k": "v"},
    )
    assert conv.meta_data == {"k": "v"} and conv.connector_id == "1024"
    assert (
        coze.conversations.retrieve(conversation_id=conv.id).last_section_id == conv.last_section_id
    )
    made = [
        coze.conversations.messages.create(
            conversation_id=conv.id, role="user", content=f"m{i}", content_type="text"
        )
        for i in range(5)
    ]
    assert made[0].type == MessageType.QUESTION
    everything = [m.content for m in coze.conversations.messages.list(conversation_id=conv.id)]
    assert everything == ["m4", "m3", "m2", "m1", "m0", "a1", "first"]  # newest first
    # pages of 2 forwards (cozepy follows last_id) and backwards (before_id)
    pages = coze.conversations.messages.list(conversation_id=conv.id, limit=2, order="asc")
    assert [[m.content for m in page.items] for page in pages.iter_pages()] == [
        ["first", "a1"],
        ["m0", "m1"],
        ["m2", "m3"],
        ["m4"],
    ]
    back = lab.post(
        "/v1/conversation/message/list",
        params={"conversation_id": conv.id},
        json={"order": "asc", "before_id": made[3].id, "limit": 2},
    ).json()
    assert [m["content"] for m in back["data"]] == ["m1", "m2"] and back["has_more"] is True
    assert back["first_id"] == made[1].id and back["last_id"] == made[2].id
    # retrieve, modify, delete
    got = coze.conversations.messages.retrieve(conversation_id=conv.id, message_id=made[0].id)
    assert got.content == "m0"
    changed = coze.conversations.messages.update(
        conversation_id=conv.id, message_id=made[0].id, content="edited", content_type="text"
    )
    assert changed.content == "edited"
    coze.conversations.messages.delete(conversation_id=conv.id, message_id=made[0].id)
    with pytest.raises(CozeAPIError) as missing:
        coze.conversations.messages.retrieve(conversation_id=conv.id, message_id=made[0].id)
    assert missing.value.code == 4200
    # rename, list, delete the conversation
    assert coze.conversations.update(conversation_id=conv.id, name="renamed").name == "renamed"
    assert [c.id for c in coze.conversations.list(bot_id=bot_id)] == [conv.id]
    coze.conversations.delete(conversation_id=conv.id)
    assert list(coze.conversations.list(bot_id=bot_id)) == []


def test_clear_context_starts_a_new_section(lab: Lab, model_server: ModelServer) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    coze = lab.coze()
    first = coze.chat.create_and_poll(
        bot_id=bot_id, user_id="u", additional_messages=ask("remember the word banana")
    )
    conv_id = first.chat.conversation_id
    coze.chat.create_and_poll(
        bot_id=bot_id, user_id="u", conversation_id=conv_id, additional_messages=ask("and?")
    )
    seen = json.dumps(model_server.requests[-1]["messages"])
    assert "banana" in seen  # history of the section goes to the model
    section = coze.conversations.clear(conversation_id=conv_id)
    assert section.conversation_id == conv_id
    coze.chat.create_and_poll(
        bot_id=bot_id, user_id="u", conversation_id=conv_id, additional_messages=ask("what word?")
    )
    after = model_server.requests[-1]["messages"]
    assert "banana" not in json.dumps(after)
    assert [m["role"] for m in after] == ["system", "user"]
    # nothing was deleted
    contents = [m.content for m in coze.conversations.messages.list(conversation_id=conv_id)]
    assert "remember the word banana" in contents


def test_cancel_mid_stream_stops_the_model_stream(lab: Lab, model_server: ModelServer) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    model_server.chunk_delay = 0.05
    model_server.script([TextReply(" ".join(f"word{i}" for i in range(200)))])
    coze = lab.coze()
    stream = coze.chat.stream(bot_id=bot_id, user_id="u", additional_messages=ask("long"))
    chat = None
    names = []
    for event in stream:
        names.append(event.event)
        if event.event == ChatEventType.CONVERSATION_CHAT_CREATED:
            chat = event.chat
        if event.event == ChatEventType.CONVERSATION_MESSAGE_DELTA and chat is not None:
            canceled = coze.chat.cancel(conversation_id=chat.conversation_id, chat_id=chat.id)
            assert canceled.status == ChatStatus.CANCELED
            chat = None
    assert names[-1] != ChatEventType.CONVERSATION_CHAT_COMPLETED
    assert model_server.wait_for("disconnects", 1, timeout=10)
    assert model_server.completed == 0
    retrieved = coze.chat.retrieve(conversation_id=events_conv(coze, bot_id), chat_id=canceled.id)
    assert retrieved.status == ChatStatus.CANCELED
    with pytest.raises(CozeAPIError) as again:
        coze.chat.cancel(conversation_id=canceled.conversation_id, chat_id=canceled.id)
    assert again.value.code == 4104


def events_conv(coze: Coze, bot_id: str) -> str:
    return next(iter(coze.conversations.list(bot_id=bot_id))).id


def test_requires_action_and_submit_tool_outputs(lab: Lab, model_server: ModelServer) -> None:
    weather = {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    created = lab.post(
        "/v1/bot/create",
        json={"name": "Weather", "space_id": lab.workspaces["alice"], "functions": [weather]},
    ).json()
    bot_id = created["data"]["bot_id"]
    publish(lab, bot_id)
    model_server.script(
        [
            ToolCallsReply([ScriptedToolCall("get_weather", {"city": "Paris"}, id="call_w")]),
            TextReply("It is sunny in Paris."),
        ]
    )
    coze = lab.coze()
    events = list(coze.chat.stream(bot_id=bot_id, user_id="u", additional_messages=ask("Paris?")))
    assert events[-1].event == ChatEventType.CONVERSATION_CHAT_REQUIRES_ACTION
    chat = events[-1].chat
    call = chat.required_action.submit_tool_outputs.tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call_w",
        "get_weather",
        {"city": "Paris"},
    )
    function_calls = [m for m in events if m.message and m.message.type == "function_call"]
    assert json.loads(function_calls[0].message.content)["name"] == "get_weather"
    with pytest.raises(CozeAPIError) as wrong:
        coze.chat.submit_tool_outputs(
            conversation_id=chat.conversation_id,
            chat_id=chat.id,
            tool_outputs=[ToolOutput(tool_call_id="nope", output="x")],
            stream=False,
        )
    assert wrong.value.code == 4000
    resumed = list(
        coze.chat.submit_tool_outputs(
            conversation_id=chat.conversation_id,
            chat_id=chat.id,
            tool_outputs=[ToolOutput(tool_call_id="call_w", output="sunny, 24C")],
            stream=True,
        )
    )
    assert resumed[-1].event == ChatEventType.CONVERSATION_CHAT_COMPLETED
    assert resumed[-2].message.content == "It is sunny in Paris."
    sent = model_server.requests[-1]["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_w", "content": "sunny, 24C"}
    assert sent[-2]["tool_calls"][0]["id"] == "call_w"
    with pytest.raises(CozeAPIError) as twice:
        coze.chat.submit_tool_outputs(
            conversation_id=chat.conversation_id,
            chat_id=chat.id,
            tool_outputs=[ToolOutput(tool_call_id="call_w", output="again")],
            stream=False,
        )
    assert twice.value.code == 4090


def test_workflow_used_as_a_tool(lab: Lab, model_server: ModelServer) -> None:
    import coze_lab as cl

    wf = cl.Workflow("trip_days", description="How many days a trip to a city takes")
    wf.inputs(city=str)
    wf.text("plan", template="{{start.city}}: 3 days")
    wf.end(plan="{{plan.output}}")
    saved = lab.post("/coze_lab/api/workflows", json={"definition": wf.to_json(), "publish": True})
    assert saved.status_code == 201, saved.text
    workflow_id = saved.json()["data"]["id"]
    bot_id = make_bot(lab, workflow_id_list=WorkflowIDList(ids=[{"id": workflow_id}]))
    publish(lab, bot_id)
    model_server.script(
        [
            ToolCallsReply([ScriptedToolCall("trip_days", {"city": "Rome"}, id="call_t")]),
            TextReply("Plan three days for Rome."),
        ]
    )
    poll = lab.coze().chat.create_and_poll(
        bot_id=bot_id, user_id="u", additional_messages=ask("Rome trip?")
    )
    assert poll.chat.status == ChatStatus.COMPLETED, poll.chat.last_error
    kinds = [m.type for m in poll.messages]
    assert kinds == ["function_call", "tool_response", "answer"]
    assert json.loads(poll.messages[1].content) == {"plan": "Rome: 3 days"}
    assert poll.messages[1].meta_data["execute_id"]
    offered = model_server.requests[0]["tools"][0]["function"]
    assert offered["name"] == "trip_days"
    assert offered["parameters"]["required"] == ["city"]


def test_draft_on_playground_published_on_api(lab: Lab, model_server: ModelServer) -> None:
    bot_id = make_bot(lab, prompt="v1 prompt")
    coze = lab.coze()
    with pytest.raises(CozeAPIError) as unpublished:
        coze.chat.create(bot_id=bot_id, user_id="u", additional_messages=ask("hi"))
    assert unpublished.value.code == 4015 and "publish" in unpublished.value.msg
    publish(lab, bot_id)
    coze.bots.update(bot_id=bot_id, prompt_info=BotPromptInfo(prompt="v2 draft prompt"))
    coze.chat.create_and_poll(bot_id=bot_id, user_id="u", additional_messages=ask("hi"))
    assert model_server.requests[-1]["messages"][0]["content"] == "v1 prompt"
    studio = lab.post(f"/coze_lab/api/bots/{bot_id}/chat", json={"message": "hi"})
    assert studio.status_code == 200 and "conversation.chat.completed" in studio.text
    assert model_server.requests[-1]["messages"][0]["content"] == "v2 draft prompt"
    assert coze.bots.retrieve(bot_id=bot_id, use_api_version=2).prompt_info.prompt == "v1 prompt"
    online = lab.get("/v1/bot/get_online_info", params={"bot_id": bot_id}).json()["data"]
    assert online["version"] == "1"
    draft = lab.get(f"/v1/bots/{bot_id}", params={"is_published": "false"}).json()["data"]
    assert draft["prompt_info"]["prompt"] == "v2 draft prompt"
    listed = lab.get("/v1/bots", params={"workspace_id": lab.workspaces["alice"]}).json()
    assert [b["id"] for b in listed["data"]["items"]] == [bot_id]
    assert listed["data"]["items"][0]["is_published"] is True
    # the studio's publish answers with the version it made, not the draft ('')
    again = lab.post(f"/coze_lab/api/bots/{bot_id}/publish", json={"connector_ids": ["1024"]})
    assert again.json()["data"]["version"] == "2"
    assert again.json()["data"]["prompt_info"]["prompt"] == "v2 draft prompt"


def test_connectors_and_users_are_isolated(lab: Lab, model_server: ModelServer) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    api, web, bob = lab.coze("alice"), lab.coze("alice_web"), lab.coze("bob")
    on_api = api.chat.create_and_poll(bot_id=bot_id, user_id="u", additional_messages=ask("api"))
    conv_id, chat_id = on_api.chat.conversation_id, on_api.chat.id
    on_web = web.chat.create_and_poll(bot_id=bot_id, user_id="u", additional_messages=ask("web"))
    assert on_web.chat.status == ChatStatus.COMPLETED
    assert [c.id for c in web.conversations.list(bot_id=bot_id)] == [on_web.chat.conversation_id]
    assert [c.id for c in api.conversations.list(bot_id=bot_id)] == [conv_id]
    for who in (web, bob):
        for call in (
            lambda c: c.conversations.retrieve(conversation_id=conv_id),
            lambda c: list(c.conversations.messages.list(conversation_id=conv_id)),
            lambda c: c.chat.retrieve(conversation_id=conv_id, chat_id=chat_id),
            lambda c: c.chat.messages.list(conversation_id=conv_id, chat_id=chat_id),
            lambda c: c.conversations.clear(conversation_id=conv_id),
            lambda c: c.chat.create(
                bot_id=bot_id, user_id="u", conversation_id=conv_id, additional_messages=ask("x")
            ),
        ):
            with pytest.raises(CozeAPIError) as denied:
                call(who)
            assert denied.value.code == 4200
    for call in (
        lambda: bob.bots.retrieve(bot_id=bot_id, use_api_version=2),
        lambda: bob.bots.update(bot_id=bot_id, name="mine"),
        lambda: bob.bots.publish(bot_id=bot_id),
        lambda: bob.chat.create(bot_id=bot_id, user_id="u", additional_messages=ask("x")),
    ):
        with pytest.raises(CozeAPIError) as denied:
            call()
        assert denied.value.code == 4200
    assert lab.get("/v1/bots", "bob").json()["data"]["items"] == []


def test_bad_input_gets_clear_errors(lab: Lab) -> None:
    bot_id = make_bot(lab)
    cases = [
        ("/v3/chat", {"content": b"{not json"}),
        ("/v3/chat", {"json": {"bot_id": True}}),
        ("/v3/chat", {"json": {"bot_id": bot_id, "additional_messages": "hi"}}),
        (
            "/v3/chat",
            {
                "json": {
                    "bot_id": bot_id,
                    "additional_messages": [{"role": "system", "content": "x"}],
                }
            },
        ),
        ("/v3/chat", {"json": {"bot_id": bot_id, "custom_variables": {"a": 1}}}),
        ("/v1/bot/create", {"json": {"name": ""}}),
        ("/v1/bot/create", {"json": {"name": "x", "model_info_config": {"temperature": 9}}}),
        ("/v1/bot/publish", {"json": {"bot_id": bot_id, "connector_ids": ["42"]}}),
        (
            "/v1/conversation/create",
            {
                "json": {
                    "messages": [{"role": "user", "content": "x", "content_type": "object_string"}]
                }
            },
        ),
    ]
    for path, kwargs in cases:
        response = lab.post(path, **kwargs)
        assert response.status_code == 400, (path, kwargs, response.text)
        assert response.json()["code"] == 4000 and response.json()["msg"]
    unknown = lab.post("/v3/chat", json={"bot_id": "7999999999999999999"})
    assert unknown.status_code == 404 and unknown.json()["code"] == 4200
    assert lab.get("/v1/conversations", params={"bot_id": bot_id}).json()["data"] == {
        "conversations": [],
        "has_more": False,
    }


def test_no_model_configured_fails_the_chat_clearly(
    tmp_path: Path, db_url: str, model_server: ModelServer
) -> None:
    data_dir = tmp_path / "bare"
    runtime = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    runtime.start()
    user = runtime.identity.ensure_user("carol")
    token = runtime.tokens.create(user.id, "t")[1]
    runtime.db.dispose()
    env = {"OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", "COZE_LAB_DEFAULT_MODEL": ""}
    process = ServerProcess(data_dir, db_url, env=env).start()
    try:
        coze = Coze(auth=TokenAuth(token), base_url=process.url)
        bot = coze.bots.create(space_id=str(user.workspace_id), name="B")
        coze.bots.publish(bot_id=bot.bot_id)
        with pytest.raises(CozeAPIError) as refused:
            coze.chat.create(bot_id=bot.bot_id, user_id="u", additional_messages=ask("x"))
        assert refused.value.code == 4012 and "no model is configured" in refused.value.msg
        assert "OPENAI_API_KEY" in refused.value.msg
        # refused before anything was written
        assert list(coze.conversations.list(bot_id=bot.bot_id)) == []
    finally:
        process.stop()


def test_a_client_that_disconnects_loses_nothing(lab: Lab, model_server: ModelServer) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    model_server.chunk_delay = 0.02
    model_server.script([TextReply(" ".join(f"w{i}" for i in range(40)))])
    headers = {"Authorization": f"Bearer {lab.tokens['alice']}"}
    body = {
        "bot_id": bot_id,
        "user_id": "u",
        "stream": True,
        "additional_messages": [{"role": "user", "content": "go", "content_type": "text"}],
    }
    chat = None
    with httpx.stream("POST", lab.server.url + "/v3/chat", json=body, headers=headers) as response:
        assert response.headers["x-accel-buffering"] == "no"
        for line in response.iter_lines():
            if line.startswith("data:") and chat is None:
                chat = json.loads(line[5:])
                break
    coze = lab.coze()
    deadline = time.monotonic() + 15
    while coze.chat.retrieve(
        conversation_id=chat["conversation_id"], chat_id=chat["id"]
    ).status != (ChatStatus.COMPLETED):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    answer = coze.chat.messages.list(conversation_id=chat["conversation_id"], chat_id=chat["id"])
    assert answer[0].content.endswith("w39")


def test_concurrent_streams_all_complete(lab: Lab, model_server: ModelServer) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    results: list[str] = []

    def one(i: int) -> None:
        events = list(
            lab.coze().chat.stream(bot_id=bot_id, user_id=f"u{i}", additional_messages=ask(f"q{i}"))
        )
        results.append(events[-2].message.content)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == sorted(f"[demo model] You said: q{i}" for i in range(20))


def test_a_quiet_stream_gets_keepalives_cozepy_understands(lab: Lab, model_server) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    model_server.script([TextReply("slow thinker", delay=1.6)])
    events = list(lab.coze().chat.stream(bot_id=bot_id, user_id="u", additional_messages=ask("?")))
    names = [e.event for e in events]
    first_delta = names.index(ChatEventType.CONVERSATION_MESSAGE_DELTA)
    assert names[:first_delta].count(ChatEventType.CONVERSATION_CHAT_IN_PROGRESS) >= 3
    assert names[-1] == ChatEventType.CONVERSATION_CHAT_COMPLETED


def test_another_user_reaches_nothing(lab: Lab, model_server) -> None:
    """Every chat, conversation and bot endpoint, with bob's token on alice's ids."""
    weather = {"name": "f", "parameters": {"type": "object", "properties": {}}}
    bot_id = lab.post("/v1/bot/create", json={"name": "A", "functions": [weather]}).json()["data"][
        "bot_id"
    ]
    publish(lab, bot_id)
    model_server.script([ToolCallsReply([ScriptedToolCall("f", {}, id="c")])])
    chat = lab.coze().chat.create_and_poll(bot_id=bot_id, user_id="u", additional_messages=ask("x"))
    assert chat.chat.status == ChatStatus.REQUIRES_ACTION
    conv, chat_id = chat.chat.conversation_id, chat.chat.id
    message_id = chat.messages[0].id
    q = {"conversation_id": conv}
    qc = {"conversation_id": conv, "chat_id": chat_id}
    qm = {"conversation_id": conv, "message_id": message_id}
    calls = [
        ("GET", "/v1/bot/get_online_info", {"params": {"bot_id": bot_id}}),
        ("GET", f"/v1/bots/{bot_id}", {}),
        ("POST", "/v1/bot/update", {"json": {"bot_id": bot_id, "name": "B"}}),
        ("POST", "/v1/bot/publish", {"json": {"bot_id": bot_id, "connector_ids": ["1024"]}}),
        ("POST", f"/v1/bots/{bot_id}/unpublish", {"json": {"connector_id": "1024"}}),
        ("POST", "/v1/conversation/create", {"json": {"bot_id": bot_id}}),
        ("GET", "/v1/conversation/retrieve", {"params": q}),
        ("PUT", f"/v1/conversations/{conv}", {"json": {"name": "x"}}),
        ("POST", f"/v1/conversations/{conv}/clear", {}),
        (
            "POST",
            "/v1/conversation/message/create",
            {"params": q, "json": {"role": "user", "content": "x"}},
        ),
        ("POST", "/v1/conversation/message/list", {"params": q, "json": {}}),
        ("GET", "/v1/conversation/message/retrieve", {"params": qm}),
        ("POST", "/v1/conversation/message/modify", {"params": qm, "json": {"content": "x"}}),
        ("POST", "/v1/conversation/message/delete", {"params": qm}),
        ("POST", "/v3/chat", {"params": q, "json": {"bot_id": bot_id}}),
        ("POST", "/v3/chat/retrieve", {"params": qc}),
        ("GET", "/v3/chat/message/list", {"params": qc}),
        (
            "POST",
            "/v3/chat/submit_tool_outputs",
            {"params": qc, "json": {"tool_outputs": [{"tool_call_id": "c", "output": "stolen"}]}},
        ),
        ("POST", "/v3/chat/cancel", {"json": {"conversation_id": conv, "chat_id": chat_id}}),
        ("DELETE", f"/v1/conversations/{conv}", {}),
        ("GET", f"/coze_lab/api/bots/{bot_id}", {}),
        ("POST", f"/coze_lab/api/bots/{bot_id}/chat", {"json": {"message": "x"}}),
        ("GET", f"/coze_lab/api/bots/{bot_id}/conversations", {}),
        ("GET", f"/coze_lab/api/conversations/{conv}/messages", {}),
        ("POST", f"/coze_lab/api/chats/{chat_id}/cancel", {"json": {}}),
        ("DELETE", f"/coze_lab/api/bots/{bot_id}", {}),
    ]
    headers = {"Authorization": f"Bearer {lab.tokens['bob']}"}
    for method, path, kwargs in calls:
        response = httpx.request(
            method, lab.server.url + path, headers=headers, timeout=30, **kwargs
        )
        body = response.json()
        if path.endswith("/conversations") and method == "GET":  # an empty list of bob's
            assert body["data"]["conversations"] == [], path
            continue
        assert response.status_code == 404 and body["code"] == 4200, (method, path, body)
    # alice's things are untouched
    coze = lab.coze()
    assert coze.chat.retrieve(conversation_id=conv, chat_id=chat_id).status == (
        ChatStatus.REQUIRES_ACTION
    )
    assert coze.bots.retrieve(bot_id=bot_id, use_api_version=2).name == "A"
    assert len(list(coze.conversations.messages.list(conversation_id=conv))) == 2


def test_a_broken_model_registry_stops_the_server_with_the_reason(tmp_path: Path) -> None:
    from coze_lab.store import sqlite_url

    data_dir = tmp_path / "broken"
    models = tmp_path / "models.yaml"
    models.write_text("models:\n  - id: x\n    base_url: 42\n")
    env = {"COZE_LAB_MODELS_FILE": str(models), "OPENAI_API_KEY": ""}
    process = ServerProcess(data_dir, sqlite_url(data_dir / "coze_lab.db"), env=env)
    with pytest.raises(RuntimeError) as stopped:
        process.start()
    assert "error 4051" in str(stopped.value) and "models[0].base_url" in str(stopped.value)


def test_history_in_additional_messages_is_context_not_the_bots_answer(
    lab: Lab, model_server: ModelServer
) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    model_server.script([TextReply("Your name is Ann.")])
    history = [
        Message.build_user_question_text("My name is Ann."),
        Message.build_assistant_answer("Hello Ann!"),
        Message.build_user_question_text("What is my name?"),
    ]
    coze = lab.coze()
    poll = coze.chat.create_and_poll(bot_id=bot_id, user_id="u", additional_messages=history)
    # /v3/chat/message/list: what the chat wrote, as on Coze ("everything but the query")
    assert [(m.type, m.content) for m in poll.messages] == [
        (MessageType.ANSWER, "Your name is Ann.")
    ]
    # the model saw the supplied history as context
    sent = model_server.requests[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["My name is Ann.", "Hello Ann!", "What is my name?"]
    # the conversation keeps all of it, in order, all of it in the chat
    conversation_id = poll.chat.conversation_id
    listed = list(coze.conversations.messages.list(conversation_id=conversation_id, order="asc"))
    assert [(m.role, m.content) for m in listed] == [
        ("user", "My name is Ann."),
        ("assistant", "Hello Ann!"),
        ("user", "What is my name?"),
        ("assistant", "Your name is Ann."),
    ]
    assert {m.chat_id for m in listed} == {poll.chat.id}


def test_a_web_sdk_token_cannot_open_a_conversation_for_an_api_only_bot(lab: Lab) -> None:
    bot_id = make_bot(lab)
    lab.coze().bots.publish(bot_id=bot_id, connector_ids=["1024"])
    web = lab.coze("alice_web")
    with pytest.raises(CozeAPIError) as chat:
        web.chat.create(bot_id=bot_id, user_id="u", additional_messages=ask("hi"))
    with pytest.raises(CozeAPIError) as conversation:
        web.conversations.create(bot_id=bot_id)
    assert conversation.value.code == chat.value.code == 4015  # Coze's code
    assert conversation.value.msg == chat.value.msg
    assert "not published to the Web SDK connector (999)" in conversation.value.msg
    assert web.conversations.create().id  # no bot named: nothing to refuse
    assert lab.coze().conversations.create(bot_id=bot_id).id  # the API token may


def test_suggested_follow_up_questions(lab: Lab, model_server: ModelServer) -> None:
    bot_id = make_bot(
        lab, suggest_reply_info=BotSuggestReplyInfo(reply_mode=SuggestReplyMode.ENABLE)
    )
    publish(lab, bot_id)
    coze = lab.coze()
    assert coze.bots.retrieve(bot_id=bot_id).suggest_reply_info.reply_mode == "enable"
    model_server.script(["Paris.", "1. And Rome?\n- How far is it?\n\nWhat to eat?\nOne more?"])
    events = list(coze.chat.stream(bot_id=bot_id, user_id="u", additional_messages=ask("Capital?")))
    completed = [
        e.message for e in events if e.event == ChatEventType.CONVERSATION_MESSAGE_COMPLETED
    ]
    assert [(m.type, m.content) for m in completed] == [
        (MessageType.ANSWER, "Paris."),
        (MessageType.FOLLOW_UP, "And Rome?"),
        (MessageType.FOLLOW_UP, "How far is it?"),
        (MessageType.FOLLOW_UP, "What to eat?"),
    ]
    assert events[-1].event == ChatEventType.CONVERSATION_CHAT_COMPLETED
    chat = events[-1].chat
    asked = model_server.requests[-1]["messages"]
    assert asked[-2] == {"role": "assistant", "content": "Paris."}
    assert asked[-1]["content"].startswith("Suggest up to 3 short questions")
    listed = coze.chat.messages.list(conversation_id=chat.conversation_id, chat_id=chat.id)
    assert [m.type for m in listed] == ["answer", "follow_up", "follow_up", "follow_up"]
    # suggestions are not history: the next chat's model sees the question and the answer
    coze.bots.update(
        bot_id=bot_id,
        suggest_reply_info=BotSuggestReplyInfo(
            reply_mode=SuggestReplyMode.CUSTOMIZED, customized_prompt="Two questions, please."
        ),
    )
    publish(lab, bot_id)
    model_server.script(["Lyon.", "Why Lyon?"])
    poll = coze.chat.create_and_poll(
        conversation_id=chat.conversation_id,
        bot_id=bot_id,
        user_id="u",
        additional_messages=ask("Second city?"),
    )
    assert [(m.type, m.content) for m in poll.messages] == [
        ("answer", "Lyon."),
        ("follow_up", "Why Lyon?"),
    ]
    answered, suggested = model_server.requests[-2:]
    assert "And Rome?" not in json.dumps(answered["messages"])
    assert [m["content"] for m in answered["messages"][1:]] == [
        "Capital?",
        "Paris.",
        "Second city?",
    ]
    assert suggested["messages"][-1]["content"] == "Two questions, please."
    # a failing suggestion call leaves the answer alone
    model_server.script(["Marseille.", ErrorReply(500, "suggestions are down")])
    poll = coze.chat.create_and_poll(
        conversation_id=chat.conversation_id,
        bot_id=bot_id,
        user_id="u",
        additional_messages=ask("Third city?"),
    )
    assert poll.chat.status == ChatStatus.COMPLETED
    assert [(m.type, m.content) for m in poll.messages] == [("answer", "Marseille.")]
    # customized without its prompt is refused by name
    bad = lab.post(
        "/v1/bot/update",
        json={"bot_id": bot_id, "suggest_reply_info": {"reply_mode": "customized"}},
    ).json()
    assert bad["code"] == 4000 and "customized_prompt" in bad["msg"]


def test_response_format_json(lab: Lab, model_server: ModelServer) -> None:
    bot_id = make_bot(
        lab, model_info_config=BotModelInfo(model_id="default", response_format="json")
    )
    publish(lab, bot_id)
    coze = lab.coze()
    assert coze.bots.retrieve(bot_id=bot_id).model_info.response_format == "json"
    poll = coze.chat.create_and_poll(bot_id=bot_id, user_id="u", additional_messages=ask("Hi"))
    assert json.loads(poll.messages[-1].content) == {"answer": "[demo model] You said: Hi"}
    sent = model_server.requests[-1]
    assert sent["response_format"] == {"type": "json_object"}
    assert sent["messages"][0]["content"].endswith("Answer with one JSON object and nothing else.")
    refused = lab.post(
        "/v1/bot/update",
        json={
            "bot_id": bot_id,
            "model_info_config": {"model_id": "default", "response_format": "yaml"},
        },
    ).json()
    assert refused["code"] == 4000 and "response_format" in refused["msg"]


def test_unsupported_or_unknown_bot_fields_are_refused_by_name(lab: Lab) -> None:
    coze = lab.coze()
    bot_id = make_bot(lab)
    for call in (
        lambda: make_bot(lab, icon_file_id="7000000000000000001"),
        lambda: coze.bots.update(bot_id=bot_id, icon_file_id="7000000000000000001"),
    ):
        with pytest.raises(CozeAPIError) as err:
            call()
        assert err.value.code == 4000 and "icon_file_id" in err.value.msg
    with pytest.raises(CozeAPIError) as model:
        coze.bots.update(bot_id=bot_id, model_info_config=BotModelInfo(model_id="gpt-nope"))
    assert model.value.code == 4000 and "'gpt-nope'" in model.value.msg
    with pytest.raises(CozeAPIError) as plugin:
        make_bot(
            lab,
            plugin_id_list=PluginIDList(
                id_list=[{"plugin_id": "7000000000000000002", "api_id": "7000000000000000003"}]
            ),
        )
    assert plugin.value.code == 4000 and "plugin_id 7000000000000000002" in plugin.value.msg
    # nothing was written
    draft = lab.get(f"/v1/bots/{bot_id}", params={"is_published": "false"}).json()["data"]
    assert draft["model_info"]["model_id"] == "default"
    listed = lab.get("/v1/bots", params={"workspace_id": lab.workspaces["alice"]}).json()
    assert [b["id"] for b in listed["data"]["items"]] == [bot_id]


def test_a_published_bot_keeps_the_workflow_versions_it_was_published_with(
    lab: Lab, model_server: ModelServer
) -> None:
    import coze_lab as cl

    def save(text: str) -> str:
        wf = cl.Workflow("trip_days", description="How many days a trip to a city takes")
        wf.inputs(city=str)
        wf.text("plan", template="{{start.city}}: " + text)
        wf.end(plan="{{plan.output}}")
        saved = lab.post(
            "/coze_lab/api/workflows", json={"definition": wf.to_json(), "publish": True}
        )
        assert saved.status_code == 201, saved.text
        return saved.json()["data"]["id"]

    def plan(bot: str, studio: bool = False) -> str:
        call = ToolCallsReply([ScriptedToolCall("trip_days", {"city": "Rome"}, id="c1")])
        model_server.script([call, TextReply("ok")])
        if studio:
            lab.post(f"/coze_lab/api/bots/{bot}/chat", json={"message": "Rome?"})
        else:
            lab.coze().chat.create_and_poll(
                bot_id=bot, user_id="u", additional_messages=ask("Rome?")
            )
        tool = next(m for m in model_server.requests[-1]["messages"] if m["role"] == "tool")
        return json.loads(tool["content"])["plan"]

    workflow_id = save("3 days")
    bot_id = make_bot(lab, workflow_id_list=WorkflowIDList(ids=[{"id": workflow_id}]))
    publish(lab, bot_id)
    assert save("5 days") == workflow_id  # version 2 of the same workflow
    assert plan(bot_id) == "Rome: 3 days"  # the published bot: version 1
    assert plan(bot_id, studio=True) == "Rome: 5 days"  # the draft on the Playground
    publish(lab, bot_id)
    assert plan(bot_id) == "Rome: 5 days"
    # a workflow never published cannot be frozen into a published bot
    wf = cl.Workflow("sketch")
    wf.inputs(city=str)
    wf.end(city="{{start.city}}")
    draft_only = lab.post("/coze_lab/api/workflows", json={"definition": wf.to_json()})
    sketch = draft_only.json()["data"]["id"]
    updated = lab.post(
        "/v1/bot/update",
        json={"bot_id": bot_id, "workflow_id_list": {"ids": [{"id": workflow_id}, {"id": sketch}]}},
    ).json()
    assert updated["code"] == 0
    refused = lab.post("/v1/bot/publish", json={"bot_id": bot_id, "connector_ids": ["1024"]}).json()
    assert refused["code"] == 4200 and sketch in refused["msg"] and "publish" in refused["msg"]


def test_conversation_meta_data_update(lab: Lab) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    coze = lab.coze()
    conv = coze.conversations.create(bot_id=bot_id, meta_data={"k": "v"})
    changed = lab.put(
        f"/v1/conversations/{conv.id}", json={"meta_data": {"topic": "trips", "n": "2"}}
    ).json()
    assert changed["code"] == 0 and changed["data"]["meta_data"] == {"topic": "trips", "n": "2"}
    assert coze.conversations.retrieve(conversation_id=conv.id).meta_data == {
        "topic": "trips",
        "n": "2",
    }
    # a rename (cozepy sends only the name) keeps the meta_data; bad meta_data changes nothing
    assert coze.conversations.update(conversation_id=conv.id, name="Trips").meta_data == {
        "topic": "trips",
        "n": "2",
    }
    bad = lab.put(
        f"/v1/conversations/{conv.id}", json={"name": "lost", "meta_data": {"n": 2}}
    ).json()
    assert bad["code"] == 4000 and "meta_data" in bad["msg"]
    kept = coze.conversations.retrieve(conversation_id=conv.id)
    assert kept.name == "Trips" and kept.meta_data["n"] == "2"
    other = lab.put(f"/v1/conversations/{conv.id}", who="bob", json={"meta_data": {}}).json()
    assert other["code"] == 4200


def test_message_feedback(lab: Lab, model_server: ModelServer) -> None:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    coze = lab.coze()
    model_server.script(["Paris."])
    poll = coze.chat.create_and_poll(
        bot_id=bot_id, user_id="u", additional_messages=ask("Capital?")
    )
    conv, answer = poll.chat.conversation_id, poll.messages[-1]
    feedback = coze.conversations.messages.feedback
    feedback.create(
        conversation_id=conv,
        message_id=answer.id,
        feedback_type=FeedbackType.UNLIKE,
        reason_types=["too short", "too short"],
        comment="say more",
    )
    path = "/v1/conversation/message/retrieve"
    got = lab.get(path, params={"conversation_id": conv, "message_id": answer.id}).json()["data"]
    assert got["feedback"]["feedback_type"] == "unlike"
    assert got["feedback"]["reason_types"] == ["too short"]
    assert got["feedback"]["comment"] == "say more"
    feedback.create(conversation_id=conv, message_id=answer.id, feedback_type=FeedbackType.LIKE)
    got = lab.get(path, params={"conversation_id": conv, "message_id": answer.id}).json()["data"]
    assert got["feedback"]["feedback_type"] == "like" and got["feedback"]["reason_types"] == []
    question = [m for m in coze.conversations.messages.list(conversation_id=conv)][-1]
    assert question.type == MessageType.QUESTION
    with pytest.raises(CozeAPIError) as not_an_answer:
        feedback.create(conversation_id=conv, message_id=question.id, feedback_type="like")
    assert not_an_answer.value.code == 4000 and "answer" in not_an_answer.value.msg
    bad = lab.post(
        f"/v1/conversations/{conv}/messages/{answer.id}/feedback", json={"feedback_type": "meh"}
    ).json()
    assert bad["code"] == 4000 and "feedback_type" in bad["msg"]
    with pytest.raises(CozeAPIError) as bobs:
        lab.coze("bob").conversations.messages.feedback.create(
            conversation_id=conv, message_id=answer.id, feedback_type=FeedbackType.LIKE
        )
    assert bobs.value.code == 4200
    feedback.delete(conversation_id=conv, message_id=answer.id)
    got = lab.get(path, params={"conversation_id": conv, "message_id": answer.id}).json()["data"]
    assert "feedback" not in got
    with pytest.raises(CozeAPIError) as gone:
        feedback.delete(conversation_id=conv, message_id=answer.id)
    assert gone.value.code == 4200


def test_a_connectors_review_of_a_published_bot(lab: Lab, model_server: ModelServer) -> None:
    from cozepy.connectors.bots import AuditStatus

    bot_id = make_bot(lab)
    reviews = lab.coze().connectors.bots
    with pytest.raises(CozeAPIError) as unpublished:
        reviews.update(bot_id=bot_id, connector_id="999", audit_status=AuditStatus.APPROVED)
    assert unpublished.value.code == 4015
    publish(lab, bot_id)
    reviews.update(bot_id=bot_id, connector_id="999", audit_status=AuditStatus.APPROVED)
    for status, reason, word in (
        (AuditStatus.REJECTED, None, "reason"),
        (AuditStatus.PENDING, None, "pending"),
    ):
        with pytest.raises(CozeAPIError) as err:
            reviews.update(bot_id=bot_id, connector_id="999", audit_status=status, reason=reason)
        assert err.value.code == 4000 and word in err.value.msg
    with pytest.raises(CozeAPIError) as unknown:
        reviews.update(bot_id=bot_id, connector_id="777", audit_status=AuditStatus.APPROVED)
    assert unknown.value.code == 4000 and "connector_id" in unknown.value.msg
    with pytest.raises(CozeAPIError) as bobs:
        lab.coze("bob").connectors.bots.update(
            bot_id=bot_id, connector_id="999", audit_status=AuditStatus.REJECTED, reason="no"
        )
    assert bobs.value.code == 4200
    reviews.update(
        bot_id=bot_id, connector_id="999", audit_status=AuditStatus.REJECTED, reason="off-topic"
    )
    # no longer served on the Web SDK connector; still on the API
    with pytest.raises(CozeAPIError) as refused:
        lab.coze("alice_web").chat.create(bot_id=bot_id, user_id="u", additional_messages=ask("hi"))
    assert refused.value.code == 4015
    poll = lab.coze().chat.create_and_poll(
        bot_id=bot_id, user_id="u", additional_messages=ask("hi")
    )
    assert poll.chat.status == ChatStatus.COMPLETED


def test_template_duplicate_copies_a_bot_and_apps_are_none(lab: Lab) -> None:
    coze = lab.coze()
    bot_id = make_bot(lab, prompt="published prompt")
    publish(lab, bot_id)
    coze.bots.update(bot_id=bot_id, prompt_info=BotPromptInfo(prompt="draft prompt"))
    copy = coze.templates.duplicate(
        template_id=bot_id, workspace_id=lab.workspaces["alice"], name="Copy"
    )
    assert copy.entity_type == "agent" and copy.entity_id != bot_id
    made = coze.bots.retrieve(bot_id=copy.entity_id, is_published=False, use_api_version=2)
    assert made.name == "Copy" and made.prompt_info.prompt == "published prompt"
    unpublished = lab.get(f"/v1/bots/{copy.entity_id}").json()
    assert unpublished["code"] == 4015  # a copy is a draft
    same_name = coze.templates.duplicate(
        template_id=copy.entity_id, workspace_id=lab.workspaces["alice"]
    )
    assert (
        coze.bots.retrieve(bot_id=same_name.entity_id, is_published=False, use_api_version=2).name
        == "Copy"
    )
    with pytest.raises(CozeAPIError) as hidden:
        lab.coze("bob").templates.duplicate(template_id=bot_id, workspace_id=lab.workspaces["bob"])
    assert hidden.value.code == 4200 and "template" in hidden.value.msg
    with pytest.raises(CozeAPIError) as elsewhere:
        coze.templates.duplicate(template_id=bot_id, workspace_id=lab.workspaces["bob"])
    assert elsewhere.value.code in (4101, 4200)

    assert list(coze.apps.list(workspace_id=lab.workspaces["alice"])) == []
    with pytest.raises(CozeAPIError) as not_yours:
        list(lab.coze("bob").apps.list(workspace_id=lab.workspaces["alice"]))
    assert not_yours.value.code == 4200


def save_workflow(lab: Lab, wf) -> str:
    saved = lab.post("/coze_lab/api/workflows", json={"definition": wf.to_json(), "publish": True})
    assert saved.status_code == 201, saved.text
    return saved.json()["data"]["id"]


def test_a_chat_flow_runs_in_a_conversation(lab: Lab) -> None:
    import coze_lab as cl

    echo = cl.Workflow("echo")
    echo.inputs(USER_INPUT=str, CONVERSATION_HISTORY=(list, []))
    echo.text("say", template="{{start.USER_INPUT}} after {{start.CONVERSATION_HISTORY}}")
    echo.end(output="{{say.output}}")
    workflow_id = save_workflow(lab, echo)
    coze = lab.coze()
    events = list(
        coze.workflows.chat.stream(workflow_id=workflow_id, additional_messages=ask("Hi"))
    )
    names = [e.event for e in events]
    assert names == [
        ChatEventType.CONVERSATION_CHAT_CREATED,
        ChatEventType.CONVERSATION_CHAT_IN_PROGRESS,
        ChatEventType.CONVERSATION_MESSAGE_DELTA,
        ChatEventType.CONVERSATION_MESSAGE_COMPLETED,
        ChatEventType.CONVERSATION_CHAT_COMPLETED,
    ]
    answer, chat = events[3].message, events[-1].chat
    assert answer.content == "Hi after []" and answer.type == MessageType.ANSWER
    assert chat.status == ChatStatus.COMPLETED and answer.chat_id == chat.id
    conversation = chat.conversation_id
    again = list(
        coze.workflows.chat.stream(
            workflow_id=workflow_id, conversation_id=conversation, additional_messages=ask("More")
        )
    )
    second = again[3].message.content
    assert second.startswith("More after ") and '"content": "Hi"' in second.replace('":"', '": "')
    saved = coze.conversations.messages.list(conversation_id=conversation, order="asc")
    assert [(m.role, m.content) for m in saved][::2] == [("user", "Hi"), ("user", "More")]
    assert [m.content for m in saved][1] == "Hi after []"

    # a question is the chat's answer; the next message in the conversation answers it
    trip = cl.Workflow("trip")
    trip.inputs(USER_INPUT=str)
    trip.question("where", question="Where to, {{start.USER_INPUT}}?", choices=["Rome", "Paris"])
    trip.end(output="{{start.USER_INPUT}} goes to {{where.answer}}")
    trip_id = save_workflow(lab, trip)
    asked = list(coze.workflows.chat.stream(workflow_id=trip_id, additional_messages=ask("Ann")))
    question = asked[3].message
    assert question.content == "Where to, Ann?\n1. Rome\n2. Paris"
    assert asked[-1].event == ChatEventType.CONVERSATION_CHAT_COMPLETED
    answered = list(
        coze.workflows.chat.stream(
            workflow_id=trip_id,
            conversation_id=asked[-1].chat.conversation_id,
            additional_messages=ask("Rome"),
        )
    )
    assert answered[3].message.content == "Ann goes to Rome"

    # refused before anything is written
    with pytest.raises(CozeAPIError) as not_a_flow:
        list(
            coze.workflows.chat.stream(
                workflow_id=save_workflow(lab, plain_workflow()), additional_messages=ask("x")
            )
        )
    assert not_a_flow.value.code == 4000 and "USER_INPUT" in not_a_flow.value.msg
    bot_conversation = coze.conversations.create(bot_id=publish_new_bot(lab)).id
    with pytest.raises(CozeAPIError) as bots:
        list(
            coze.workflows.chat.stream(
                workflow_id=workflow_id,
                conversation_id=bot_conversation,
                additional_messages=ask("x"),
            )
        )
    assert bots.value.code == 4000 and "belongs to bot" in bots.value.msg
    with pytest.raises(CozeAPIError) as other:
        list(
            lab.coze("bob").workflows.chat.stream(
                workflow_id=workflow_id, additional_messages=ask("x")
            )
        )
    assert other.value.code == 4200


def plain_workflow() -> object:
    import coze_lab as cl

    plain = cl.Workflow("plain")
    plain.inputs(city=str)
    plain.end(city="{{start.city}}")
    return plain


def publish_new_bot(lab: Lab) -> str:
    bot_id = make_bot(lab)
    publish(lab, bot_id)
    return bot_id


def test_a_chat_flow_whose_run_fails_fails_the_chat(lab: Lab, model_server: ModelServer) -> None:
    import coze_lab as cl

    flow = cl.Workflow("ask_model")
    flow.inputs(USER_INPUT=str)
    flow.llm("reply", prompt="{{start.USER_INPUT}}")
    flow.end(output="{{reply.output}}")
    workflow_id = save_workflow(lab, flow)
    coze = lab.coze()
    model_server.script([ErrorReply(400, "the model refused")])
    events = list(
        coze.workflows.chat.stream(workflow_id=workflow_id, additional_messages=ask("Hi"))
    )
    assert [e.event for e in events][-1] == ChatEventType.CONVERSATION_CHAT_FAILED
    failed = events[-1].chat
    assert failed.status == ChatStatus.FAILED and "the model refused" in failed.last_error.msg
    model_server.script(["Hello there."])
    events = list(
        coze.workflows.chat.stream(
            workflow_id=workflow_id,
            conversation_id=failed.conversation_id,
            additional_messages=ask("Hi again"),
        )
    )
    assert events[3].message.content == "Hello there."
    assert events[-1].chat.usage.token_count > 0
    saved = coze.conversations.messages.list(conversation_id=failed.conversation_id, order="asc")
    assert [m.content for m in saved] == ["Hi", "Hi again", "Hello there."]


def chat_events(lab: Lab, chat: object, after: int) -> list[tuple[int, str, dict]]:
    """GET /v3/chat/events read to its end (``Last-Event-ID: after``): (id, event, data)."""
    headers = {"Authorization": f"Bearer {lab.tokens['alice']}", "Last-Event-ID": str(after)}
    params = {"conversation_id": chat.conversation_id, "chat_id": chat.id}
    return read_sse_events(lab.server.url + "/v3/chat/events", headers, params, timeout=30)


def test_a_chat_flow_chat_is_retrieved_reattached_and_canceled(
    lab: Lab, model_server: ModelServer
) -> None:
    import coze_lab as cl

    flow = cl.Workflow("slow_flow")
    flow.inputs(USER_INPUT=str)
    flow.llm("reply", prompt="{{start.USER_INPUT}}")
    flow.end(output="{{reply.output}}")
    workflow_id = save_workflow(lab, flow)
    coze = lab.coze()

    def leave_after_start(question: str) -> object:
        stream = coze.workflows.chat.stream(
            workflow_id=workflow_id, additional_messages=ask(question)
        )
        chat = next(iter(stream)).chat  # created; the client goes away
        stream._raw_response.close()
        return chat

    model_server.script([TextReply("Slow answer.", delay=1.0), TextReply("never", delay=30)])
    chat = leave_after_start("Hi")
    retrieved = coze.chat.retrieve(conversation_id=chat.conversation_id, chat_id=chat.id)
    assert retrieved.status == ChatStatus.IN_PROGRESS and not retrieved.bot_id
    assert retrieved.meta_data["workflow_id"] == workflow_id
    rest = chat_events(lab, chat, after=1)
    assert [(seq, name) for seq, name, _ in rest] == [
        (2, "conversation.chat.in_progress"),
        (3, "conversation.message.delta"),
        (4, "conversation.message.completed"),
        (5, "conversation.chat.completed"),
        (6, "done"),
    ]
    assert rest[2][2]["content"] == "Slow answer."
    done = coze.chat.retrieve(conversation_id=chat.conversation_id, chat_id=chat.id)
    assert done.status == ChatStatus.COMPLETED and done.usage.token_count > 0
    listed = coze.chat.messages.list(conversation_id=chat.conversation_id, chat_id=chat.id)
    assert [m.content for m in listed] == ["Slow answer."]

    waiting = leave_after_start("Again")
    while len(model_server.requests) < 2:  # the run's llm node waits for the model
        time.sleep(0.02)
    canceled = coze.chat.cancel(conversation_id=waiting.conversation_id, chat_id=waiting.id)
    assert canceled.status == ChatStatus.CANCELED
    run = lab.get(f"/coze_lab/api/runs/{canceled.meta_data['execute_id']}").json()["data"]
    assert run["status"] == "canceled"
    assert chat_events(lab, waiting, after=0)[-1][1] == "done"
    with pytest.raises(CozeAPIError) as again:
        coze.chat.cancel(conversation_id=waiting.conversation_id, chat_id=waiting.id)
    assert again.value.code == 4104
    with pytest.raises(CozeAPIError) as hidden:
        lab.coze("bob").chat.retrieve(conversation_id=chat.conversation_id, chat_id=chat.id)
    assert hidden.value.code != 0
