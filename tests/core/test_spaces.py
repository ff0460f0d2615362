"""Team spaces: members and roles, and the one access rule on bots, workflows and tables."""

from __future__ import annotations

import pytest

from coze_lab.core.errors import (
    Conflict,
    InvalidParameter,
    MemberExists,
    NotFound,
    PermissionDenied,
)
from coze_lab.core.identity import UserInfo
from coze_lab.core.spaces import ROLE_MATRIX, Access, Permission, Role, SpaceInfo
from coze_lab.core.workflows import Workflow
from coze_lab.services import Runtime
from coze_lab.web.requests import parse_bot_edit


def _flow(name: str) -> dict:
    wf = Workflow(name)
    wf.inputs(text=str)
    wf.end(out="{{start.text}}")
    return wf.to_json()


@pytest.fixture
def people(runtime: Runtime) -> dict[str, UserInfo]:
    return {n: runtime.identity.ensure_user(n) for n in ("alice", "bob", "carol", "dave")}


@pytest.fixture
def team(runtime: Runtime, people: dict[str, UserInfo]) -> SpaceInfo:
    """alice's team space with bob (member) and dave (admin); carol is outside."""
    space = runtime.spaces.create(people["alice"].id, "team-a")
    runtime.spaces.add_member(people["alice"].id, space.id, "bob", "member")
    runtime.spaces.add_member(people["alice"].id, space.id, "dave", "admin")
    return space


def test_the_role_matrix() -> None:
    assert ROLE_MATRIX[Role.OWNER] == frozenset(Permission)
    assert Permission.DELETE_SPACE not in ROLE_MATRIX[Role.ADMIN]
    assert Permission.MANAGE_MEMBERS in ROLE_MATRIX[Role.ADMIN]
    assert ROLE_MATRIX[Role.MEMBER] == {Permission.READ, Permission.EDIT}


def test_spaces_are_listed_with_the_callers_role(
    runtime: Runtime, people: dict[str, UserInfo], team: SpaceInfo
) -> None:
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    mine, total = runtime.spaces.list(alice.id)
    assert total == 2
    assert {(s.name, s.workspace_type, s.role) for s in mine} == {
        ("Personal", "personal", Role.OWNER),
        ("team-a", "team", Role.OWNER),
    }
    bobs = {s.id: s for s in runtime.spaces.list(bob.id)[0]}
    assert bobs[team.id].role is Role.MEMBER and bob.workspace_id in bobs
    assert [s.id for s in runtime.spaces.list(carol.id)[0]] == [carol.workspace_id]
    assert runtime.spaces.find(bob.id, "team-a").id == team.id
    assert runtime.spaces.find(bob.id, "personal").id == bob.workspace_id
    assert runtime.spaces.find(bob.id, str(team.id)).id == team.id
    with pytest.raises(NotFound):
        runtime.spaces.find(carol.id, "team-a")
    with pytest.raises(NotFound):
        runtime.spaces.get(carol.id, team.id)
    members, count = runtime.spaces.members(bob.id, team.id)
    assert count == 3
    assert {(m.name, m.role) for m in members} == {
        ("alice", Role.OWNER),
        ("bob", Role.MEMBER),
        ("dave", Role.ADMIN),
    }


def test_adding_members_the_coze_way(
    runtime: Runtime, people: dict[str, UserInfo], team: SpaceInfo
) -> None:
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    result = runtime.spaces.add_members(
        alice.id, team.id, [(str(carol.id), "member"), (str(bob.id), "admin"), ("123", "member")]
    )
    assert result.added == [carol.id]
    assert result.already_joined == [bob.id]
    assert result.not_exist == ["123"]
    with pytest.raises(MemberExists) as caught:
        runtime.spaces.add_member(alice.id, team.id, "carol", "member")
    assert caught.value.code == 4201 and caught.value.status == 409
    with pytest.raises(InvalidParameter, match="one owner"):
        runtime.spaces.add_members(alice.id, team.id, [(str(bob.id), "owner")])
    with pytest.raises(NotFound):
        runtime.spaces.add_member(alice.id, team.id, "nobody", "member")


def test_roles_decide_who_manages_members(
    runtime: Runtime, people: dict[str, UserInfo], team: SpaceInfo
) -> None:
    alice, bob, carol, dave = (people[n] for n in ("alice", "bob", "carol", "dave"))
    # a member cannot add anyone, nor remove anyone else (the owner least of all)
    with pytest.raises(PermissionDenied):
        runtime.spaces.add_member(bob.id, team.id, "carol", "member")
    with pytest.raises(PermissionDenied):
        runtime.spaces.remove_members(bob.id, team.id, [str(alice.id)])
    # a non-member learns nothing: the space is not found
    with pytest.raises(NotFound):
        runtime.spaces.add_member(carol.id, team.id, "carol", "member")
    with pytest.raises(NotFound):
        runtime.spaces.members(carol.id, team.id)
    # an admin manages members but cannot remove the owner
    runtime.spaces.add_member(dave.id, team.id, "carol", "member")
    result = runtime.spaces.remove_members(dave.id, team.id, [str(alice.id), str(carol.id), "9"])
    assert result.owner_not_removable == [alice.id]
    assert result.removed == [carol.id] and result.not_in_workspace == ["9"]
    # anyone may leave; only the owner deletes the space
    assert runtime.spaces.remove_members(bob.id, team.id, [str(bob.id)]).removed == [bob.id]
    with pytest.raises(NotFound):
        runtime.spaces.get(bob.id, team.id)
    with pytest.raises(PermissionDenied):
        runtime.spaces.delete(dave.id, team.id)
    assert runtime.spaces.rename(dave.id, team.id, "team-b").name == "team-b"


def test_personal_spaces_stay_personal(runtime: Runtime, people: dict[str, UserInfo]) -> None:
    alice = people["alice"]
    with pytest.raises(InvalidParameter, match="personal"):
        runtime.spaces.add_member(alice.id, alice.workspace_id, "bob", "member")
    with pytest.raises(InvalidParameter):
        runtime.spaces.rename(alice.id, alice.workspace_id, "Mine")
    with pytest.raises(InvalidParameter):
        runtime.spaces.delete(alice.id, alice.workspace_id)
    with pytest.raises(InvalidParameter):
        runtime.spaces.create(alice.id, "personal")
    with pytest.raises(InvalidParameter):
        runtime.spaces.create(alice.id, " ")


def test_bots_of_a_team_space_follow_the_role_matrix(
    runtime: Runtime, people: dict[str, UserInfo], team: SpaceInfo
) -> None:
    alice, bob, carol, dave = (people[n] for n in ("alice", "bob", "carol", "dave"))
    shared = runtime.bots.create(alice.id, team.id, parse_bot_edit({"name": "shared"}, create=True))
    private = runtime.bots.create(
        alice.id, alice.workspace_id, parse_bot_edit({"name": "private"}, create=True)
    )
    assert shared.workspace_id == team.id
    # every member reads and edits the space's bots; nobody else sees them
    assert [b.id for b in runtime.bots.list(bob.id, team.id)[0]] == [shared.id]
    assert (
        runtime.bots.update(bob.id, shared.id, parse_bot_edit({"description": "by bob"})).owner_id
        == alice.id
    )
    assert runtime.bots.publish(bob.id, shared.id, ["1024"]) == 1
    assert runtime.bots.resolve(bob.id, shared.id, "1024").version == 1
    for call in (
        lambda: runtime.bots.get(carol.id, shared.id),
        lambda: runtime.bots.list(carol.id, team.id),
        lambda: runtime.bots.resolve(carol.id, shared.id, "1024"),
        lambda: runtime.bots.get(bob.id, private.id),
        lambda: runtime.bots.update(bob.id, private.id, parse_bot_edit({"name": "x"})),
    ):
        with pytest.raises(NotFound):
            call()
    # the personal list is still the default, and stays personal
    assert [b.id for b in runtime.bots.list(alice.id)[0]] == [private.id]
    # members delete what they made; owners and admins delete anything
    mine = runtime.bots.create(bob.id, team.id, parse_bot_edit({"name": "bob's"}, create=True))
    with pytest.raises(PermissionDenied):
        runtime.bots.delete(bob.id, shared.id)
    runtime.bots.delete(bob.id, mine.id)
    runtime.bots.delete(dave.id, shared.id)
    with pytest.raises(NotFound):
        runtime.bots.create(carol.id, team.id, parse_bot_edit({"name": "intruder"}, create=True))


def test_removal_takes_effect_on_the_next_call(
    runtime: Runtime, people: dict[str, UserInfo], team: SpaceInfo
) -> None:
    alice, bob = people["alice"], people["bob"]
    bot = runtime.bots.create(alice.id, team.id, parse_bot_edit({"name": "shared"}, create=True))
    runtime.bots.publish(alice.id, bot.id, ["1024"])
    assert runtime.bots.resolve(bob.id, bot.id, "1024").bot.id == bot.id
    runtime.spaces.remove_members(alice.id, team.id, [str(bob.id)])
    with pytest.raises(NotFound):
        runtime.bots.resolve(bob.id, bot.id, "1024")
    with pytest.raises(NotFound):
        runtime.bots.list(bob.id, team.id)


def test_workflows_of_a_team_space(
    runtime: Runtime, people: dict[str, UserInfo], team: SpaceInfo
) -> None:
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    saved = runtime.workflows.save(alice.id, _flow("review"), space_id=team.id)
    personal = runtime.workflows.save(alice.id, _flow("review"))  # same name, other space
    assert saved.id != personal.id and saved.space_id == team.id
    # bob saves by name in the space: alice's workflow's draft, not a new one
    again = runtime.workflows.save(bob.id, _flow("review"), space_id=team.id)
    assert again.id == saved.id and again.owner_id == alice.id
    assert runtime.workflows.publish(bob.id, saved.id) == 1
    assert runtime.workflows.runnable(bob.id, saved.id)[1] == 1
    assert [w.id for w in runtime.workflows.list(bob.id, space_id=team.id)] == [saved.id]
    for call in (
        lambda: runtime.workflows.runnable(bob.id, personal.id, draft=True),
        lambda: runtime.workflows.get(carol.id, saved.id),
        lambda: runtime.workflows.list(carol.id, space_id=team.id),
    ):
        with pytest.raises(NotFound):
            call()
    # a team bot may use only its space's workflows (every member may run those)
    with pytest.raises(NotFound, match="bot's space"):
        runtime.bots.create(
            alice.id,
            team.id,
            parse_bot_edit(
                {"name": "b", "workflow_id_list": {"ids": [{"id": str(personal.id)}]}}, create=True
            ),
        )
    bot = runtime.bots.create(
        alice.id,
        team.id,
        parse_bot_edit(
            {"name": "b", "workflow_id_list": {"ids": [{"id": str(saved.id)}]}}, create=True
        ),
    )
    assert bot.config.workflow_ids == (saved.id,)
    with pytest.raises(Conflict, match="1 bots, 1 workflows"):
        runtime.spaces.delete(alice.id, team.id)
    runtime.bots.delete(alice.id, bot.id)
    runtime.workflows.delete(alice.id, saved.id)
    runtime.spaces.delete(alice.id, team.id)
    assert [s.id for s in runtime.spaces.list(bob.id)[0]] == [bob.workspace_id]


def test_a_team_table_is_shared_its_rows_are_not(
    runtime: Runtime, people: dict[str, UserInfo], team: SpaceInfo
) -> None:
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    table = runtime.tables.create(
        alice.id, "notes", [{"name": "text", "type": "text"}], space_id=team.id
    )
    runtime.tables.create(alice.id, "notes", [{"name": "text", "type": "text"}])  # personal
    runtime.tables.insert(alice.id, table.id, "draft", {"text": "alice's row"})
    runtime.tables.insert(bob.id, table.id, "draft", {"text": "bob's row"})
    assert [r["text"] for r in runtime.tables.query(bob.id, table.id, "draft")] == ["bob's row"]
    assert [t.id for t in runtime.tables.list(bob.id, space_id=team.id)] == [table.id]
    assert runtime.tables.find(bob.id, "notes").id == table.id  # bob has no personal one
    assert runtime.tables.find(alice.id, "notes").id != table.id  # alice's personal first
    runtime.tables.add_fields(bob.id, table.id, [{"name": "tag", "type": "text"}])
    with pytest.raises(NotFound):
        runtime.tables.query(carol.id, table.id, "draft")
    with pytest.raises(PermissionDenied):
        runtime.tables.delete(bob.id, table.id)


def test_access_is_read_fresh(
    runtime: Runtime, people: dict[str, UserInfo], team: SpaceInfo
) -> None:
    bob = people["bob"]
    with runtime.db.read() as connection:
        access = Access.load(connection, bob.id)
    assert access.space_ids == {bob.workspace_id, team.id}
    assert access.personal_id == bob.workspace_id
    assert access.can_edit(team.id) and not access.can_delete(
        team.id, creator_id=people["alice"].id
    )
    runtime.spaces.remove_members(people["alice"].id, team.id, [str(bob.id)])
    with runtime.db.read() as connection:
        assert not Access.load(connection, bob.id).can_read(team.id)
