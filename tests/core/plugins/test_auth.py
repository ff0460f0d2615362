"""Credentials: service tokens, OAuth 2 (authorization code + PKCE, refresh, client
credentials) against a real local authorization server; encryption at rest."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from sqlalchemy import select

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.plugins import PluginService
from coze_lab.core.secrets import SecretBox
from coze_lab.store.models import PluginCall, PluginCredential, PluginOAuthState
from tests.core.plugins.conftest import LAB_URL
from tests.core.plugins.servers import ME_JSON, SECURE_JSON, PluginTestServer, oauth_manifest
from tests.support import FakeClock

CALLBACK = LAB_URL + "coze_lab/api/plugins/oauth/callback"


def _stored_secrets(plugins: PluginService) -> list[str]:
    with plugins._db.transaction() as session:
        return [r.secret for r in session.scalars(select(PluginCredential))]


@pytest.mark.asyncio
@pytest.mark.parametrize("location", ["header", "query"])
async def test_service_token_injection(plugins: PluginService, alice, api: PluginTestServer,
                                       location: str) -> None:
    auth = ({"type": "service_token", "location": "header", "key": "Authorization",
             "template": "Bearer {{api_key}}"} if location == "header" else
            {"type": "service_token", "location": "query", "key": "key",
             "template": "{{api_key}}"})
    info = await plugins.import_plugin(
        alice.id, openapi={**SECURE_JSON, "servers": [{"url": api.url}]},
        manifest={"name_for_model": "secure", "auth": auth})
    tool_id = info.tools[0].id
    missing = await plugins.call_tool(alice.id, tool_id, {}, scene="draft")
    assert not missing.ok and "needs credentials ['api_key']" in missing.output
    assert api.requests == []
    assert plugins.set_credentials(alice.id, info.id, {"api_key": api.API_KEY}) == ["api_key"]
    result = await plugins.call_tool(alice.id, tool_id, {}, scene="draft")
    assert result.ok and result.data == {"secret": "granted"}
    # the key reached the server, but no record, summary or stored row shows it in clear
    sent = api.requests[-1]
    if location == "header":
        assert sent["headers"]["authorization"] == f"Bearer {api.API_KEY}"
        assert result.request["headers"]["Authorization"] == "***"
    else:
        assert sent["query"]["key"] == api.API_KEY
        assert result.request["query"]["key"] == "***"
    with plugins._db.transaction() as session:
        calls = [r.request for r in session.scalars(select(PluginCall))]
    assert api.API_KEY not in repr(calls)
    assert all(api.API_KEY not in s for s in _stored_secrets(plugins))
    assert plugins.get(alice.id, info.id).auth["configured"] is True
    with pytest.raises(InvalidParameter, match="unknown credentials"):
        plugins.set_credentials(alice.id, info.id, {"token": "x"})


def test_secret_box_rotation_and_key_file(tmp_path) -> None:
    old = SecretBox.from_config("", tmp_path / "secret.key")
    assert (tmp_path / "secret.key").stat().st_mode & 0o777 == 0o600
    sealed = old.encrypt({"api_key": "v"})
    assert "api_key" not in sealed
    again = SecretBox.from_config("", tmp_path / "secret.key")
    assert again.decrypt(sealed) == {"api_key": "v"}
    key = (tmp_path / "secret.key").read_text().strip()
    rotated = SecretBox.from_config(f"a new passphrase,{key}", tmp_path / "unused.key")
    assert rotated.decrypt(sealed) == {"api_key": "v"}
    with pytest.raises(ValueError, match="cannot be decrypted"):
        SecretBox.from_config("another", tmp_path / "x.key").decrypt(sealed)


async def _authorize(plugins: PluginService, user_id: int, plugin_id: int) -> None:
    """What a browser does: open the URL, follow the provider back to the callback."""
    url = plugins.authorization_url(user_id, plugin_id)
    query = parse_qs(urlparse(url).query)
    assert query["redirect_uri"] == [CALLBACK] and query["code_challenge_method"] == ["S256"]
    async with httpx.AsyncClient() as client:
        answer = await client.get(url)
    back = urlparse(answer.headers["location"])
    assert back.geturl().startswith(CALLBACK)
    params = {k: v[0] for k, v in parse_qs(back.query).items()}
    await plugins.complete_authorization(params["state"], params["code"])


@pytest.mark.asyncio
async def test_oauth_authorization_code_flow_with_refresh(plugins: PluginService, alice,
                                                          api: PluginTestServer,
                                                          clock: FakeClock) -> None:
    info = await plugins.import_plugin(
        alice.id, openapi={**ME_JSON, "servers": [{"url": api.url}]},
        manifest=oauth_manifest(api))
    assert api.CLIENT_SECRET not in repr(info.manifest)  # kept apart, encrypted
    assert info.auth == {"type": "oauth", "grant_type": "authorization_code",
                         "client_secret_set": True, "authorized": False}
    tool_id = info.tools[0].id
    first = await plugins.call_tool(alice.id, tool_id, {}, scene="draft")
    assert not first.ok and first.error == "authorization required"
    assert first.authorization_url.startswith(f"{api.url}/authorize?")
    assert first.authorization_url in first.output
    assert [r["path"] for r in api.requests] == []  # the API was never called unauthorized

    await _authorize(plugins, alice.id, info.id)
    assert plugins.get(alice.id, info.id).auth["authorized"] is True
    assert api.token_requests[-1]["grant_type"] == "authorization_code"
    assert all(t not in s for s in _stored_secrets(plugins) for t in api.access_tokens)
    called = await plugins.call_tool(alice.id, tool_id, {}, scene="draft")
    assert called.ok and called.data["user"] == "octocat"
    assert called.request["headers"]["Authorization"] == "***"

    clock.advance(timedelta(hours=2))  # the access token has expired: refreshed first
    refreshed = await plugins.call_tool(alice.id, tool_id, {}, scene="draft")
    assert refreshed.ok, refreshed.output
    assert api.token_requests[-1]["grant_type"] == "refresh_token"
    assert refreshed.data["token_suffix"] != called.data["token_suffix"]


@pytest.mark.asyncio
async def test_a_rejected_token_is_refreshed_once_and_a_dead_refresh_asks_again(
        plugins: PluginService, alice, api: PluginTestServer) -> None:
    info = await plugins.import_plugin(
        alice.id, openapi={**ME_JSON, "servers": [{"url": api.url}]},
        manifest=oauth_manifest(api, token_auth="client_secret_basic"))
    await _authorize(plugins, alice.id, info.id)
    api.access_tokens.clear()  # revoked by the provider before it expired
    result = await plugins.call_tool(alice.id, info.tools[0].id, {}, scene="draft")
    assert result.ok and api.token_requests[-1]["grant_type"] == "refresh_token"
    api.access_tokens.clear()
    api.refresh_tokens.clear()
    result = await plugins.call_tool(alice.id, info.tools[0].id, {}, scene="draft")
    assert not result.ok and result.authorization_url is not None
    assert plugins.get(alice.id, info.id).auth["authorized"] is False


@pytest.mark.asyncio
async def test_callback_state_is_single_use_and_expires(plugins: PluginService, alice,
                                                        api: PluginTestServer,
                                                        clock: FakeClock) -> None:
    info = await plugins.import_plugin(
        alice.id, openapi={**ME_JSON, "servers": [{"url": api.url}]},
        manifest=oauth_manifest(api))
    url = plugins.authorization_url(alice.id, info.id)
    state = parse_qs(urlparse(url).query)["state"][0]
    with plugins._db.transaction() as session:  # only the state's hash is stored
        assert session.scalars(select(PluginOAuthState.state_hash)).one() != state
    with pytest.raises(InvalidParameter, match="unknown"):
        await plugins.complete_authorization("forged", "code")
    with pytest.raises(InvalidParameter, match="code exchange failed"):
        await plugins.complete_authorization(state, "wrong-code")
    with pytest.raises(InvalidParameter, match="used or has expired"):
        await plugins.complete_authorization(state, "wrong-code")
    late = parse_qs(urlparse(plugins.authorization_url(alice.id, info.id)).query)["state"][0]
    clock.advance(timedelta(minutes=11))
    with pytest.raises(InvalidParameter, match="used or has expired"):
        await plugins.complete_authorization(late, "code")


@pytest.mark.asyncio
async def test_client_credentials(plugins: PluginService, alice, api: PluginTestServer,
                                  clock: FakeClock) -> None:
    info = await plugins.import_plugin(
        alice.id, openapi={**ME_JSON, "servers": [{"url": api.url}]},
        manifest=oauth_manifest(api, grant="client_credentials", authorization_url=None))
    tool_id = info.tools[0].id
    first = await plugins.call_tool(alice.id, tool_id, {}, scene="draft")
    assert first.ok, first.output
    assert [t["grant_type"] for t in api.token_requests] == ["client_credentials"]
    await plugins.call_tool(alice.id, tool_id, {}, scene="draft")
    assert len(api.token_requests) == 1  # cached until it expires
    clock.advance(timedelta(hours=2))
    again = await plugins.call_tool(alice.id, tool_id, {}, scene="draft")
    assert again.ok and len(api.token_requests) == 2
    with pytest.raises(InvalidParameter, match="authorization code"):
        plugins.authorization_url(alice.id, info.id)
