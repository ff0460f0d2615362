from __future__ import annotations

import pytest

from coze_lab.core import connectors
from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.services import Runtime
from coze_lab.web.requests import parse_bot_edit


@pytest.fixture
def alice(runtime: Runtime):
    return runtime.identity.ensure_user("alice")


def test_publish_freezes_versions_per_connector(runtime: Runtime, alice) -> None:
    bots = runtime.bots
    bot = bots.create(
        alice.id,
        alice.workspace_id,
        parse_bot_edit({"name": "B", "prompt_info": {"prompt": "v1"}}, create=True),
    )
    with pytest.raises(NotFound):
        bots.resolve(alice.id, bot.id, connectors.API)
    assert bots.publish(alice.id, bot.id, ["1024"]) == 1
    bots.update(alice.id, bot.id, parse_bot_edit({"prompt_info": {"prompt": "v2"}}))
    assert bots.publish(alice.id, bot.id, ["999"]) == 2
    assert bots.resolve(alice.id, bot.id, connectors.API).config.prompt == "v1"
    assert bots.resolve(alice.id, bot.id, connectors.WEB_SDK).config.prompt == "v2"
    bots.update(alice.id, bot.id, parse_bot_edit({"prompt_info": {"prompt": "v3"}}))
    playground = bots.resolve(alice.id, bot.id, connectors.PLAYGROUND)
    assert (playground.config.prompt, playground.version) == ("v3", None)
    assert bots.get(alice.id, bot.id, published=True).config.prompt == "v2"
    bots.unpublish(alice.id, bot.id, "1024")
    with pytest.raises(NotFound):
        bots.resolve(alice.id, bot.id, connectors.API)


def test_listing_filters_and_pages(runtime: Runtime, alice) -> None:
    bots = runtime.bots
    made = [
        bots.create(alice.id, alice.workspace_id, parse_bot_edit({"name": f"b{i}"}, create=True))
        for i in range(3)
    ]
    bots.publish(alice.id, made[0].id, ["1024"])
    page, total = bots.list(alice.id, page_size=2)
    assert total == 3 and len(page) == 2
    published, _ = bots.list(alice.id, publish_status="published_online")
    assert [b.id for b in published] == [made[0].id]
    unpublished, total = bots.list(alice.id, publish_status="unpublished_draft")
    assert total == 2 and made[0].id not in [b.id for b in unpublished]
    assert bots.list(alice.id, connector_id="999") == ([], 0)
    with pytest.raises(InvalidParameter):
        bots.list(alice.id, publish_status="nope")


def test_other_users_and_unknown_workflows_are_refused(runtime: Runtime, alice) -> None:
    bob = runtime.identity.ensure_user("bob")
    bot = runtime.bots.create(
        alice.id, alice.workspace_id, parse_bot_edit({"name": "B"}, create=True)
    )
    for call in (
        lambda: runtime.bots.get(bob.id, bot.id),
        lambda: runtime.bots.update(bob.id, bot.id, parse_bot_edit({"name": "x"})),
        lambda: runtime.bots.publish(bob.id, bot.id, ["1024"]),
        lambda: runtime.bots.delete(bob.id, bot.id),
    ):
        with pytest.raises(NotFound):
            call()
    with pytest.raises(NotFound) as missing:
        runtime.bots.update(
            alice.id, bot.id, parse_bot_edit({"workflow_id_list": {"ids": [{"id": "7123"}]}})
        )
    assert "7123" in missing.value.msg
    assert runtime.bots.get(alice.id, bot.id).config.workflow_ids == ()  # nothing written
    with pytest.raises(InvalidParameter):
        runtime.bots.publish(alice.id, bot.id, ["12"])
