"""VariableService: concurrent writers of the same new value, all-or-none updates, and the
values a chat's prompt uses (the defaults where none is stored)."""

from __future__ import annotations

import threading

import pytest

from coze_lab.core import connectors
from coze_lab.core.chat.tools import variable_tools
from coze_lab.core.errors import InvalidParameter
from coze_lab.services import Runtime
from coze_lab.web.requests import parse_bot_edit


def test_concurrent_writers_and_all_or_none(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    edit = parse_bot_edit(
        {"name": "B", "variables": [{"keyword": "a"}, {"keyword": "b", "default_value": "B"}]},
        create=True,
    )
    bot = runtime.bots.create(alice.id, alice.workspace_id, edit)
    variables = runtime.variables
    scope, config = variables.scope(alice.id, bot.id, connectors.PLAYGROUND, "u1")
    errors: list[BaseException] = []

    def write(value: str) -> None:
        try:
            variables.update(scope, config, {"a": value})
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(str(i),)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stored = variables.retrieve(scope, config, ["a"])
    assert len(stored) == 1 and stored[0].value in {"0", "1", "2", "3"}
    assert stored[0].created_at is not None
    assert variables.values(scope, config) == {"a": stored[0].value, "b": "B"}
    with pytest.raises(InvalidParameter, match="unknown variable keywords: c"):
        variables.update(scope, config, {"b": "new", "c": "x"})
    assert variables.values(scope, config)["b"] == "B"  # nothing of it was written
    other, _ = variables.scope(alice.id, bot.id, connectors.PLAYGROUND, "u2")
    assert variables.values(other, config) == {"a": "", "b": "B"}


def test_who_may_set(runtime: Runtime) -> None:
    """user_can_set and agent_can_set each guard their writer; a refusal names the keyword
    and writes nothing; a bot stored before the flags existed lets both write."""
    from coze_lab.core.bots.config import BotConfig

    alice = runtime.identity.ensure_user("alice")
    edit = parse_bot_edit(
        {
            "name": "B",
            "variables": [
                {"keyword": "plan", "user_can_set": False},
                {"keyword": "mood", "agent_can_set": False},
                {"keyword": "city"},
            ],
        },
        create=True,
    )
    bot = runtime.bots.create(alice.id, alice.workspace_id, edit)
    variables = runtime.variables
    scope, config = variables.scope(alice.id, bot.id, connectors.PLAYGROUND, "u1")
    with pytest.raises(InvalidParameter, match=r"end user may not set .*: plan \(user_can_set"):
        variables.update(scope, config, {"city": "Oslo", "plan": "pro"})
    with pytest.raises(InvalidParameter, match=r"agent\) may not set .*: mood \(agent_can_set"):
        variables.update(scope, config, {"mood": "glad"}, by="agent")
    assert variables.values(scope, config) == {"plan": "", "mood": "", "city": ""}
    # the save_variable tool offers only what the agent may set
    (tool,) = variable_tools(config, scope, variables)
    assert tool.parameters["properties"]["keyword"]["enum"] == ["plan", "city"]
    variables.update(scope, config, {"plan": "pro", "city": "Oslo"}, by="agent")
    variables.update(scope, config, {"mood": "glad"})
    assert variables.values(scope, config) == {"plan": "pro", "mood": "glad", "city": "Oslo"}
    old = BotConfig.from_dict(
        {"variables": [{"keyword": "x", "default_value": "", "description": "", "enable": True}]}
    )
    assert old.variables[0].user_can_set and old.variables[0].agent_can_set
