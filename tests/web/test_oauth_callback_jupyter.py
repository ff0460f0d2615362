"""Inside Jupyter with no ``public_url``, the OAuth callback address comes from the server's
own configuration, never from a request's ``Host`` header (review finding: the first
request's Host decided it for everyone)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import pytest

from tests.core.plugins.servers import ME_JSON
from tests.web.test_extension import fetch_json

CALLBACK = "coze_lab/api/plugins/oauth/callback"


@pytest.fixture
def jp_server_config(jp_server_config: dict, request: pytest.FixtureRequest) -> dict:
    # a server others can reach: Jupyter then accepts any Host header
    jp_server_config["ServerApp"]["allow_remote_access"] = True
    jp_server_config["ServerApp"].update(getattr(request, "param", {}))
    return jp_server_config


async def redirect_uri(jp_fetch, **headers: str) -> str:
    manifest = {
        "auth": {
            "type": "oauth",
            "authorization_url": "https://id.example.com/auth",
            "token_url": "https://id.example.com/token",
            "client_id": "c",
        }
    }
    body = {
        "openapi": {**ME_JSON, "servers": [{"url": "https://api.example.com"}]},
        "manifest": manifest,
    }
    status, created = await fetch_json(
        jp_fetch,
        "coze_lab",
        "api",
        "plugins",
        method="POST",
        body=json.dumps(body),
        headers=headers,
    )
    assert status == 201, created
    status, answer = await fetch_json(
        jp_fetch,
        "coze_lab",
        "api",
        "plugins",
        created["data"]["id"],
        "oauth",
        "authorize",
        method="POST",
        body="{}",
        headers=headers,
    )
    assert status == 200, answer
    return parse_qs(urlparse(answer["data"]["authorization_url"]).query)["redirect_uri"][0]


async def test_the_callback_address_never_comes_from_the_host_header(
    jp_fetch, jp_http_port, jp_base_url
) -> None:
    first = await redirect_uri(jp_fetch, Host="evil.example.com")
    assert "evil" not in first
    assert first.endswith(f":{jp_http_port}{jp_base_url}{CALLBACK}")
    assert await redirect_uri(jp_fetch) == first  # the same for every request


@pytest.mark.parametrize(
    "jp_server_config", [{"custom_display_url": "https://lab.example.org"}], indirect=True
)
async def test_the_callback_address_follows_custom_display_url(jp_fetch, jp_base_url) -> None:
    uri = await redirect_uri(jp_fetch, Host="evil.example.com")
    assert uri == f"https://lab.example.org{jp_base_url}{CALLBACK}"


async def test_the_callback_address_follows_jupyterhub_public_url(
    jp_fetch, jp_base_url, monkeypatch
) -> None:
    monkeypatch.setenv("JUPYTERHUB_PUBLIC_URL", "https://hub.example.org/")
    uri = await redirect_uri(jp_fetch, Host="evil.example.com")
    assert uri == f"https://hub.example.org{jp_base_url}{CALLBACK}"
