"""A bot calling a plugin tool in a chat through cozepy (real server, model and API)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cozepy import (
    BotModelInfo,
    BotPromptInfo,
    ChatStatus,
    Coze,
    Message,
    TokenAuth,
)
from cozepy.bots import PluginIDList

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer, ScriptedToolCall, TextReply, ToolCallsReply
from tests.core.plugins.servers import PETS_YAML, PluginTestServer
from tests.support import ServerProcess


@pytest.fixture
def setup(tmp_path: Path, db_url: str) -> Iterator[tuple[ServerProcess, str, str, ModelServer,
                                                         PluginTestServer]]:
    data = tmp_path / "data"
    admin = Runtime(CozeLab(data_dir=str(data), database_url=db_url))
    admin.start()
    alice = admin.identity.ensure_user("alice")
    token = admin.tokens.create(alice.id, "chat")[1]
    admin.db.dispose()
    with ModelServer() as model, PluginTestServer() as remote:
        env = {
            "OPENAI_BASE_URL": model.url,
            "OPENAI_API_KEY": "test-key",
            "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
            "COZE_LAB_OUTBOUND_ALLOW": "127.0.0.1/32",
        }
        server = ServerProcess(data, db_url, env=env).start()
        try:
            yield server, token, str(alice.workspace_id), model, remote
        finally:
            server.stop()


def test_a_bot_calls_a_plugin_tool_in_a_chat(setup) -> None:
    server, token, space_id, model, remote = setup
    studio = httpx.Client(base_url=server.url + "/coze_lab/api",
                          headers={"Authorization": f"Bearer {token}"}, timeout=30)
    created = studio.post("/plugins", json={
        "openapi": PETS_YAML.format(url=remote.url),
        "manifest": {"name_for_model": "pets",
                     "auth": {"type": "service_token", "key": "X-Api-Key",
                              "template": "{{api_key}}"}},
        "credentials": {"api_key": "chat-secret"}}).json()["data"]
    plugin_id = created["id"]
    tool_id = next(t["id"] for t in created["tools"] if t["name"] == "getPet")
    assert studio.post(f"/plugins/{plugin_id}/publish").json()["data"] == {"version": 1}

    coze = Coze(auth=TokenAuth(token), base_url=server.url)
    bot = coze.bots.create(
        space_id=space_id,
        name="Vet",
        prompt_info=BotPromptInfo(prompt="You look pets up."),
        model_info_config=BotModelInfo(model_id="default"),
        plugin_id_list=PluginIDList(id_list=[
            PluginIDList.PluginIDInfo(plugin_id=plugin_id, api_id=tool_id)]),
    )
    coze.bots.publish(bot_id=bot.bot_id, connector_ids=["1024"])
    # the draft changes after the bot was published: the API chat keeps online version 1
    studio.put(f"/plugins/{plugin_id}", json={
        "openapi": PETS_YAML.format(url=remote.url).replace("Get a pet by id.", "CHANGED"),
        "manifest": {"name_for_model": "pets",
                     "auth": {"type": "service_token", "key": "X-Api-Key",
                              "template": "{{api_key}}"}}})

    model.script([
        ToolCallsReply([ScriptedToolCall("getPet", {"pet_id": "5"}, id="call_p")]),
        TextReply("Pet 5 is at /pets/5."),
        ToolCallsReply([ScriptedToolCall("getPet", {"pet_id": "five"}, id="call_q")]),
        TextReply("That id is not valid."),
    ])
    poll = coze.chat.create_and_poll(
        bot_id=bot.bot_id, user_id="u1",
        additional_messages=[Message.build_user_question_text("Where is pet 5?")])
    assert poll.chat.status == ChatStatus.COMPLETED, poll.chat.last_error
    assert [m.type for m in poll.messages] == ["function_call", "tool_response", "answer"]
    response = json.loads(poll.messages[1].content)
    assert response["path"] == "/pets/5" and response["headers"]["x-api-key"] == "chat-secret"
    offered = model.requests[0]["tools"][0]["function"]
    assert offered["name"] == "getPet" and offered["description"] == "Get a pet by id."
    assert model.requests[1]["messages"][-1]["tool_call_id"] == "call_p"

    # an argument the model gets wrong comes back to it as the tool's output
    before = len(remote.requests)
    again = coze.chat.create_and_poll(
        bot_id=bot.bot_id, user_id="u1",
        additional_messages=[Message.build_user_question_text("And pet five?")])
    assert again.chat.status == ChatStatus.COMPLETED, again.chat.last_error
    assert "is not of type 'integer'" in again.messages[1].content
    assert len(remote.requests) == before
    calls = studio.get(f"/plugins/{plugin_id}/calls").json()["data"]["calls"]
    assert [(c["scene"], c["version"], c["ok"]) for c in calls] == [("online", 1, False),
                                                                     ("online", 1, True)]
    assert "chat-secret" not in json.dumps(calls) and "chat-secret" not in server.log()
