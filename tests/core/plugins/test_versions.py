"""Draft and online versions: edits touch the draft only; publish is one transaction."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.core.plugins import PluginService
from coze_lab.core.plugins import catalog as plugin_service
from coze_lab.store.models import PluginVersion
from tests.core.plugins.servers import PluginTestServer


def _doc(api: PluginTestServer, *ops: str, title: str = "Echo") -> dict:
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": "1"},
        "servers": [{"url": api.url}],
        "paths": {f"/{op}": {"get": {"operationId": op, "summary": f"{op} v-{title}",
                                     "responses": {"200": {"description": "ok"}}}}
                  for op in ops},
    }


@pytest.mark.asyncio
async def test_edits_touch_the_draft_and_publish_makes_them_online(
        plugins: PluginService, alice, api: PluginTestServer) -> None:
    info = await plugins.import_plugin(alice.id, openapi=_doc(api, "one", "two"))
    ids = {t.name: t.id for t in info.tools}
    with pytest.raises(NotFound, match="not published"):
        await plugins.call_tool(alice.id, ids["one"], {}, scene="online")
    with pytest.raises(NotFound, match="not published"):
        plugins.online_versions(alice.id, [ids["one"]])
    assert plugins.publish(alice.id, info.id) == 1
    assert plugins.online_versions(alice.id, [ids["one"], ids["two"]]) == {info.id: 1}

    edited = await plugins.update_draft(alice.id, info.id,
                                        openapi=_doc(api, "one", "three", title="Echo2"))
    new_ids = {t.name: t.id for t in edited.tools}
    assert new_ids["one"] == ids["one"]  # a tool keeps its id across edits
    assert set(new_ids) == {"one", "three"} and edited.online_version == 1
    online = plugins.get(alice.id, info.id, scene="online")
    assert [t.name for t in online.tools] == ["one", "two"] and online.version == 1
    assert online.name == "Echo"

    draft_def = plugins.tool_definitions(alice.id, [ids["one"]], scene="draft")[0]
    online_def = plugins.tool_definitions(alice.id, [ids["one"]], scene="online")[0]
    assert (draft_def.description, online_def.description) == ("one v-Echo2", "one v-Echo")
    # a tool the draft dropped still works online; a new one is draft-only
    assert (await plugins.call_tool(alice.id, ids["two"], {}, scene="online")).ok
    with pytest.raises(NotFound):
        await plugins.call_tool(alice.id, ids["two"], {}, scene="draft")
    with pytest.raises(NotFound):
        await plugins.call_tool(alice.id, new_ids["three"], {}, scene="online")

    assert plugins.publish(alice.id, info.id) == 2
    assert plugins.tool_definitions(alice.id, [ids["one"]], scene="online")[0].description == (
        "one v-Echo2")
    # bots pin the version they were published with
    pinned = plugins.tool_definitions(alice.id, [ids["one"]], scene="online",
                                      versions={info.id: 1})
    assert pinned[0].description == "one v-Echo"
    result = await plugins.call_tool(alice.id, ids["two"], {}, scene="online", version=1)
    assert result.ok and result.data["path"] == "/two"
    with pytest.raises(NotFound, match="no version 7"):
        await plugins.call_tool(alice.id, ids["one"], {}, scene="online", version=7)
    with pytest.raises(InvalidParameter, match="scene"):
        await plugins.call_tool(alice.id, ids["one"], {}, scene="prod")


@pytest.mark.asyncio
async def test_a_failure_mid_publish_leaves_online_unchanged(
        plugins: PluginService, alice, api: PluginTestServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    info = await plugins.import_plugin(alice.id, openapi=_doc(api, "one"))
    plugins.publish(alice.id, info.id)
    await plugins.update_draft(alice.id, info.id, openapi=_doc(api, "one", title="Next"))

    def explode(*args: object) -> None:
        raise RuntimeError("the disk is full")

    # the version row is written (and flushed), then pointing online fails
    monkeypatch.setattr(plugin_service, "point_online", explode)
    with pytest.raises(RuntimeError, match="disk is full"):
        plugins.publish(alice.id, info.id)
    with plugins._db.transaction() as session:
        assert session.scalar(select(func.count()).select_from(PluginVersion)) == 1
    assert plugins.get(alice.id, info.id).online_version == 1
    online = plugins.get(alice.id, info.id, scene="online")
    assert online.name == "Echo" and online.version == 1
    monkeypatch.undo()
    assert plugins.publish(alice.id, info.id) == 2


@pytest.mark.asyncio
async def test_a_bad_update_changes_nothing_and_other_users_see_nothing(
        plugins: PluginService, alice, bob, api: PluginTestServer) -> None:
    info = await plugins.import_plugin(alice.id, openapi=_doc(api, "one"))
    with pytest.raises(InvalidParameter):
        await plugins.update_draft(alice.id, info.id, openapi={"openapi": "3.1.0"})
    assert [t.name for t in plugins.get(alice.id, info.id).tools] == ["one"]
    for call in (lambda: plugins.get(bob.id, info.id), lambda: plugins.publish(bob.id, info.id),
                 lambda: plugins.delete(bob.id, info.id),
                 lambda: plugins.set_credentials(bob.id, info.id, {"api_key": "x"}),
                 lambda: plugins.authorization_url(bob.id, info.id)):
        with pytest.raises(NotFound):
            call()
    with pytest.raises(NotFound):
        await plugins.update_draft(bob.id, info.id, openapi=_doc(api, "x"))
    assert plugins.list(bob.id) == []
    plugins.publish(alice.id, info.id)
    plugins.delete(alice.id, info.id)
    assert plugins.list(alice.id) == []
