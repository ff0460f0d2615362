"""Spaces from a notebook: ``studio.spaces()``, ``studio.space()``, ``cl.connect(space=)``,
``cl.Bot(space=)`` and ``wf.publish(space=)``, over the studio API of a real server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import coze_lab as cl
from coze_lab.core.errors import NotFound
from coze_lab.notebook import connect as connection
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.notebook.studio import Studio
from coze_lab.services import Runtime


@pytest.fixture
def host(runtime: Runtime) -> Iterator[InProcessHost]:
    local = InProcessHost(runtime, "alice")
    yield local
    local.close()


def test_a_team_space_from_two_notebooks(host: InProcessHost) -> None:
    alice = cl.connect(host.studio.url, host.studio.token)
    bob_user = host.runtime.identity.ensure_user("bob")
    bob = Studio(alice.url, host.runtime.tokens.create(bob_user.id, "bob")[1])
    try:
        team = alice.create_space("team-a")
        assert team.space_id and team.space_id in repr(team)
        team.add_member("bob")
        assert sorted((m["name"], m["role"]) for m in team.members()) == [
            ("alice", "owner"),
            ("bob", "member"),
        ]
        helper = cl.Bot("helper", prompt="Be brief.", studio=team)
        helper_id = str(helper.save())  # (helper.id would save alice's definition again)
        wf = cl.Workflow("echo")
        wf.inputs(text=str)
        wf.end(out="{{start.text}}")
        published = wf.publish(space="team-a")
        assert published["version"] == 1

        assert sorted(s["name"] for s in bob.spaces()) == ["Personal", "team-a"]
        bobs_team = bob.space("team-a")
        assert [b["name"] for b in bobs_team.bots()] == ["helper"]
        assert [w["name"] for w in bobs_team.workflows()] == ["echo"]
        assert bob.bots() == [] and bob.workflows() == []  # the personal space is the default
        assert alice.bots() == []  # alice's personal space holds nothing either
        # cl.Bot(space=) finds the space's bot by name: the same bot, edited by bob
        same = cl.Bot("helper", prompt="Be very brief.", studio=bob, space="team-a")
        assert same.save() == int(helper_id)
        assert alice.bot(helper_id)["prompt_info"]["prompt"] == "Be very brief."
        # cl.connect(space=) makes the connection work there
        in_team = cl.connect(alice.url, alice.token, space="team-a")
        assert in_team.space_id == team.space_id and connection.current() is in_team
        assert [w["name"] for w in in_team.workflows()] == ["echo"]

        bobs_team.remove_member("bob")  # bob leaves
        assert [s["name"] for s in bob.spaces()] == ["Personal"]
        with pytest.raises(NotFound):
            bob.space("team-a")
        with pytest.raises(NotFound):
            bob.bot(helper_id)
    finally:
        bob.close()
