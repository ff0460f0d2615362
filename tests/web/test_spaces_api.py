"""Team spaces over real HTTP: cozepy and the official JavaScript SDK against ``coze-lab
serve`` (``/v1/workspaces``, its members), the studio's spaces API, and the access rule as
clients see it (404 for outsiders, 403 only for members whose role does not allow)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cozepy import (
    BotModelInfo,
    BotPromptInfo,
    ChatEventType,
    Coze,
    CozeAPIError,
    Message,
    TokenAuth,
    WorkspaceMember,
    WorkspaceRoleType,
)

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer
from tests.support import CozeJs, ServerProcess


@dataclass
class Team:
    url: str
    tokens: dict[str, str]
    ids: dict[str, str]

    def coze(self, user: str) -> Coze:
        return Coze(auth=TokenAuth(self.tokens[user]), base_url=self.url)

    def studio(self, user: str, method: str, path: str, **kwargs: object) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[user]}"}
        return httpx.request(
            method, f"{self.url}/coze_lab/api/{path}", headers=headers, timeout=30, **kwargs
        )


@pytest.fixture
def team(tmp_path: Path, db_url: str) -> Iterator[Team]:
    data_dir = tmp_path / "server-data"
    runtime = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    runtime.start()
    tokens, ids = {}, {}
    for name in ("alice", "bob", "carol"):
        user = runtime.identity.ensure_user(name)
        tokens[name] = runtime.tokens.create(user.id, name)[1]
        ids[name], ids[f"{name}_space"] = str(user.id), str(user.workspace_id)
    runtime.db.dispose()
    with ModelServer() as model:
        env = {
            "OPENAI_BASE_URL": model.url,
            "OPENAI_API_KEY": "test-key",
            "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
        }
        server = ServerProcess(data_dir, db_url, env=env).start()
        try:
            yield Team(server.url, tokens, ids)
        finally:
            server.stop()


def _members(team: Team, user: str, space: str) -> dict[str, str]:
    """user id -> role, through cozepy's requester (cozepy 0.20's ``members.list`` casts
    the page to one member and cannot read Coze's answer, nor any other)."""
    coze = team.coze(user)
    page = coze.workspaces.members._requester.request(
        "get", f"{team.url}/v1/workspaces/{space}/members", False, cast=None
    )
    assert page is None  # cast=None: cozepy checks the envelope and returns nothing
    raw = httpx.get(
        f"{team.url}/v1/workspaces/{space}/members",
        headers={"Authorization": f"Bearer {team.tokens[user]}"},
        timeout=30,
    ).json()["data"]
    assert raw["total_count"] == len(raw["items"])
    return {m["user_id"]: m["role_type"] for m in raw["items"]}


def test_workspaces_and_members_through_cozepy(team: Team) -> None:
    alice, bob, carol = team.coze("alice"), team.coze("bob"), team.coze("carol")
    assert [(w.workspace_type, w.role_type) for w in alice.workspaces.list()] == [
        ("personal", WorkspaceRoleType.OWNER)
    ]
    made = team.studio("alice", "POST", "spaces", json={"name": "team-a"})
    assert made.status_code == 201, made.text
    space = made.json()["data"]["id"]
    listed = {w.id: w for w in alice.workspaces.list()}
    assert listed[space].workspace_type == "team" and listed[space].role_type == "owner"

    added = alice.workspaces.members.create(
        workspace_id=space,
        users=[
            WorkspaceMember(user_id=team.ids["bob"], role_type=WorkspaceRoleType.MEMBER),
            WorkspaceMember(user_id="7000000000000000001", role_type=WorkspaceRoleType.MEMBER),
        ],
    )
    assert added.added_success_user_ids == [team.ids["bob"]]
    assert added.not_exist_user_ids == ["7000000000000000001"]
    again = alice.workspaces.members.create(
        workspace_id=space,
        users=[WorkspaceMember(user_id=team.ids["bob"], role_type=WorkspaceRoleType.ADMIN)],
    )
    assert again.already_joined_user_ids == [team.ids["bob"]] and not again.added_success_user_ids
    assert _members(team, "bob", space) == {team.ids["alice"]: "owner", team.ids["bob"]: "member"}
    assert {w.id: w.role_type for w in bob.workspaces.list()}[space] == "member"

    # a member cannot remove the owner (nor anyone else); an outsider sees no space at all
    with pytest.raises(CozeAPIError) as caught:
        bob.workspaces.members.delete(workspace_id=space, user_ids=[team.ids["alice"]])
    assert caught.value.code == 4101
    with pytest.raises(CozeAPIError) as caught:
        carol.workspaces.members.create(
            workspace_id=space,
            users=[WorkspaceMember(user_id=team.ids["carol"], role_type=WorkspaceRoleType.MEMBER)],
        )
    assert caught.value.code == 4200
    # the owner stays; removing the owner is reported, not done
    removed = alice.workspaces.members.delete(
        workspace_id=space, user_ids=[team.ids["alice"], team.ids["bob"], team.ids["carol"]]
    )
    assert removed.removed_success_user_ids == [team.ids["bob"]]
    assert removed.owner_not_support_remove_user_ids == [team.ids["alice"]]
    assert removed.not_in_workspace_user_ids == [team.ids["carol"]]
    assert space not in {w.id for w in bob.workspaces.list()}
    # a personal space has no other members
    with pytest.raises(CozeAPIError) as caught:
        alice.workspaces.members.create(
            workspace_id=team.ids["alice_space"],
            users=[WorkspaceMember(user_id=team.ids["bob"], role_type=WorkspaceRoleType.MEMBER)],
        )
    assert caught.value.code == 4000


def _chat(coze: Coze, bot_id: str, text: str) -> tuple[str, str]:
    answer, conversation = "", ""
    for event in coze.chat.stream(
        bot_id=bot_id, user_id="u", additional_messages=[Message.build_user_question_text(text)]
    ):
        if event.event == ChatEventType.CONVERSATION_MESSAGE_DELTA:
            answer += event.message.content
        if event.event == ChatEventType.CONVERSATION_CHAT_COMPLETED:
            conversation = event.chat.conversation_id
    return answer, conversation


def test_a_team_bot_is_shared_its_conversations_are_not(team: Team) -> None:
    alice, bob, carol = team.coze("alice"), team.coze("bob"), team.coze("carol")
    space = team.studio("alice", "POST", "spaces", json={"name": "team-a"}).json()["data"]["id"]
    made = team.studio("alice", "POST", f"spaces/{space}/members", json={"name": "bob"})
    assert made.status_code == 201 and made.json()["data"]["role"] == "member"
    exists = team.studio("alice", "POST", f"spaces/{space}/members", json={"name": "bob"})
    assert exists.status_code == 409 and exists.json()["code"] == 4201

    bot = alice.bots.create(
        space_id=space,
        name="shared helper",
        prompt_info=BotPromptInfo(prompt="Be brief."),
        model_info_config=BotModelInfo(model_id="default"),
    ).bot_id
    alice.bots.publish(bot_id=bot, connector_ids=["1024"])
    private = alice.bots.create(space_id=team.ids["alice_space"], name="alice only").bot_id
    # the space's lists (cozepy's bots.list reads /v1/space/published_bots_list) are every
    # member's; the personal space stays its owner's
    assert [b.bot_id for b in bob.bots.list(space_id=space).items] == [bot]
    assert [b.bot_id for b in alice.bots.list(space_id=space).items] == [bot]
    with pytest.raises(CozeAPIError) as caught:
        bob.bots.list(space_id=team.ids["alice_space"])
    assert caught.value.code == 4200
    drafts = team.studio("alice", "GET", "bots").json()["data"]["bots"]
    assert [b["bot_id"] for b in drafts] == [private]  # the studio's default: personal
    assert bob.bots.retrieve(bot_id=bot).name == "shared helper"

    answer, bobs_conversation = _chat(bob, bot, "hello team")
    assert answer == "[demo model] You said: hello team"
    _, alices_conversation = _chat(alice, bot, "mine")
    # conversations stay with the user who chatted
    for client, other in ((alice, bobs_conversation), (bob, alices_conversation)):
        with pytest.raises(CozeAPIError) as caught:
            client.conversations.messages.list(conversation_id=other)
        assert caught.value.code == 4200
    assert [c.id for c in bob.conversations.list(bot_id=bot).items] == [bobs_conversation]

    # outsiders: 404, never 403 (another space's objects look absent)
    for call in (
        lambda: carol.bots.retrieve(bot_id=bot),
        lambda: bob.bots.retrieve(bot_id=private),
        lambda: carol.bots.list(space_id=space),
        lambda: carol.bots.create(space_id=space, name="intruder"),
        lambda: _chat(carol, bot, "let me in"),
    ):
        with pytest.raises(CozeAPIError) as caught:
            call()
        assert caught.value.code == 4200, caught.value
    assert team.studio("carol", "GET", f"bots/{bot}").status_code == 404
    assert team.studio("carol", "GET", f"spaces/{space}").status_code == 404

    # a member edits; deleting what someone else made is for owners and admins (403)
    assert (
        team.studio("bob", "PUT", f"bots/{bot}", json={"description": "by bob"}).status_code == 200
    )
    refused = team.studio("bob", "DELETE", f"bots/{bot}")
    assert refused.status_code == 403 and refused.json()["code"] == 4101

    # removal takes effect on bob's next request
    assert (
        team.studio("alice", "DELETE", f"spaces/{space}/members/{team.ids['bob']}").status_code
        == 200
    )
    with pytest.raises(CozeAPIError) as caught:
        _chat(bob, bot, "still here?")
    assert caught.value.code == 4200
    assert team.studio("bob", "GET", f"bots/{bot}").status_code == 404
    # the space cannot be deleted while it holds the bot; then it can
    held = team.studio("alice", "DELETE", f"spaces/{space}")
    assert held.status_code == 409 and "1 bots" in held.json()["msg"]
    assert team.studio("alice", "DELETE", f"bots/{bot}").status_code == 200
    assert team.studio("alice", "DELETE", f"spaces/{space}").status_code == 200


def test_workspaces_and_members_through_the_javascript_sdk(
    team: Team, coze_js: Callable[[str, str], CozeJs]
) -> None:
    """@coze/api 1.3.9 has ``workspaces.list``; it has no members resource, so the members
    calls go through the SDK's own request methods (its auth, envelope and errors)."""
    space = team.studio("alice", "POST", "spaces", json={"name": "js team"}).json()["data"]["id"]
    path = f"/v1/workspaces/{space}/members"
    js = coze_js(team.url, team.tokens["alice"])
    listed, added, members, removed, refused = js.run(
        ("workspaces.list", {"page_num": 1, "page_size": 10}),
        ("post", path, {"users": [{"user_id": team.ids["bob"], "role_type": "admin"}]}),
        ("get", path, {"page_num": 1, "page_size": 20}),
        ("makeRequest", path, "DELETE", {"user_ids": [team.ids["bob"]]}),
        ("makeRequest", path, "DELETE", {"user_ids": [team.ids["alice"]]}),
    )
    workspaces = listed["result"]["workspaces"]
    assert listed["result"]["total_count"] == 2
    assert {(w["workspace_type"], w["role_type"]) for w in workspaces} == {
        ("personal", "owner"),
        ("team", "owner"),
    }
    assert added["result"]["data"]["added_success_user_ids"] == [team.ids["bob"]]
    items = members["result"]["data"]["items"]
    assert {(m["user_id"], m["role_type"], m["user_unique_name"]) for m in items} == {
        (team.ids["alice"], "owner", "alice"),
        (team.ids["bob"], "admin", "bob"),
    }
    assert removed["result"]["data"]["removed_success_user_ids"] == [team.ids["bob"]]
    owner = refused["result"]["data"]["owner_not_support_remove_user_ids"]
    assert owner == [team.ids["alice"]]
    # carol is no member: the SDK's NotFoundError, with Coze's code
    (outsider,) = coze_js(team.url, team.tokens["carol"]).run(("get", path, {}))
    assert outsider["error"]["code"] == 4200 and outsider["error"]["status"] == 404
