"""``/coze_lab/mcp`` inside a real jupyter_server: personal access tokens, not the Jupyter
login (the extension mounts the same route as ``coze-lab serve``)."""

from __future__ import annotations

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from coze_lab.web.base import RUNTIME_KEY


async def test_the_mcp_endpoint_inside_jupyter_takes_a_token(
    jp_fetch, jp_serverapp, jp_http_port, jp_base_url
) -> None:
    """(``jp_fetch`` starts the server listening; the studio loads on its first request.)"""
    await jp_fetch("coze_lab", "api", "health")
    runtime = jp_serverapp.web_app.settings[RUNTIME_KEY]
    alice = runtime.identity.ensure_user("alice")
    _, secret = runtime.tokens.create(alice.id, "mcp")
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}coze_lab/mcp"
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"})
    transport = streamable_http_client(url, http_client=http)
    async with http, Client(transport, mode="legacy", cache=None) as client:
        assert client.server_info is not None and client.server_info.name == "coze_lab"
        assert (await client.list_tools()).tools == []
    async with httpx.AsyncClient() as raw:  # no token: a JSON-RPC error, not Jupyter's login
        refused = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == -32001
