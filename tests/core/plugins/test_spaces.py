"""A plugin of a team space: every member uses it, each with their own credentials."""

from __future__ import annotations

import pytest

from coze_lab.core.errors import NotFound, PermissionDenied
from coze_lab.core.plugins import PluginService
from coze_lab.services import Runtime
from tests.core.plugins.servers import ME_JSON, SECURE_JSON, PluginTestServer, oauth_manifest
from tests.core.plugins.test_auth import _authorize

SERVICE_AUTH = {
    "type": "service_token",
    "location": "header",
    "key": "Authorization",
    "template": "Bearer {{api_key}}",
}


@pytest.mark.asyncio
async def test_team_plugin_credentials_stay_each_members_own(
    plugins: PluginService, plugin_runtime: Runtime, alice, bob, api: PluginTestServer
) -> None:
    carol = plugin_runtime.identity.ensure_user("carol")
    team = plugin_runtime.spaces.create(alice.id, "team-a")
    plugin_runtime.spaces.add_member(alice.id, team.id, "bob", "member")
    info = await plugins.import_plugin(
        alice.id,
        openapi={**SECURE_JSON, "servers": [{"url": api.url}]},
        manifest={"name_for_model": "secure", "auth": SERVICE_AUTH},
        credentials={"api_key": api.API_KEY},
        space_id=team.id,
    )
    tool = info.tools[0].id
    assert [p.id for p in plugins.list(bob.id, space_id=team.id)] == [info.id]
    assert plugins.get(alice.id, info.id).auth["configured"] is True
    assert plugins.get(bob.id, info.id).auth["configured"] is False  # alice's key is hers
    assert (await plugins.call_tool(alice.id, tool, {}, scene="draft")).ok
    missing = await plugins.call_tool(bob.id, tool, {}, scene="draft")
    assert not missing.ok and "needs credentials" in missing.output
    plugins.set_credentials(bob.id, info.id, {"api_key": api.API_KEY})
    assert (await plugins.call_tool(bob.id, tool, {}, scene="draft")).ok
    # call records stay each user's
    assert len(plugins.calls(alice.id, info.id)) == 1 and len(plugins.calls(bob.id, info.id)) == 2
    with pytest.raises(NotFound):
        plugins.get(carol.id, info.id)
    with pytest.raises(NotFound):
        await plugins.call_tool(carol.id, tool, {}, scene="draft")
    with pytest.raises(PermissionDenied):
        plugins.delete(bob.id, info.id)


@pytest.mark.asyncio
async def test_a_member_authorizes_a_team_oauth_plugin_for_themselves(
    plugins: PluginService, plugin_runtime: Runtime, alice, bob, api: PluginTestServer
) -> None:
    team = plugin_runtime.spaces.create(alice.id, "team-a")
    plugin_runtime.spaces.add_member(alice.id, team.id, "bob", "member")
    info = await plugins.import_plugin(
        alice.id,
        openapi={**ME_JSON, "servers": [{"url": api.url}]},
        manifest=oauth_manifest(api),
        space_id=team.id,
    )
    tool = info.tools[0].id
    # the OAuth app's client secret is the plugin's: set for every member, read by none
    assert plugins.get(bob.id, info.id).auth["client_secret_set"] is True
    first = await plugins.call_tool(bob.id, tool, {}, scene="draft")
    assert not first.ok and first.error == "authorization required"
    await _authorize(plugins, bob.id, info.id)  # the exchange uses alice's client secret
    assert plugins.get(bob.id, info.id).auth["authorized"] is True
    assert plugins.get(alice.id, info.id).auth["authorized"] is False  # bob's token is his
    called = await plugins.call_tool(bob.id, tool, {}, scene="draft")
    assert called.ok and called.data["user"] == "octocat"
    still = await plugins.call_tool(alice.id, tool, {}, scene="draft")
    assert not still.ok and still.error == "authorization required"
