"""Plugins inside a real jupyter_server: the studio API and the public OAuth callback."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

from tests.core.plugins.servers import ME_JSON
from tests.web.test_extension import fetch_json


async def test_oauth_callback_is_public_and_under_the_base_url(jp_fetch, jp_base_url) -> None:
    manifest = {"auth": {"type": "oauth", "authorization_url": "https://id.example.com/auth",
                         "token_url": "https://id.example.com/token", "client_id": "c"}}
    body = {"openapi": {**ME_JSON, "servers": [{"url": "https://api.example.com"}]},
            "manifest": manifest}
    status, created = await fetch_json(jp_fetch, "coze_lab", "api", "plugins", method="POST",
                                       body=json.dumps(body))
    assert status == 201, created
    plugin_id = created["data"]["id"]
    status, answer = await fetch_json(jp_fetch, "coze_lab", "api", "plugins", plugin_id,
                                      "oauth", "authorize", method="POST", body="{}")
    assert status == 200, answer
    redirect = parse_qs(urlparse(answer["data"]["authorization_url"]).query)["redirect_uri"][0]
    assert urlparse(redirect).path == f"{jp_base_url}coze_lab/api/plugins/oauth/callback"
    # no Jupyter login needed for the callback: the state is what is checked
    status, refused = await fetch_json(jp_fetch, "coze_lab", "api", "plugins", "oauth",
                                       "callback", params={"state": "forged", "code": "x"},
                                       headers={"Authorization": ""})
    assert status == 400 and refused["msg"] == "unknown authorization state"
    status, _ = await fetch_json(jp_fetch, "coze_lab", "api", "plugins",
                                 headers={"Authorization": ""})
    assert status in (401, 403)
