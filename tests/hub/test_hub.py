"""A real JupyterHub: proxy, ``coze-lab serve`` as its service, servers for alice and bob.

One hub for the whole module (it is the slow part): the demo hub of ``make hub``
(``coze_lab.hub.demo``, whose config is ``coze-lab hub-config``'s lines) on free loopback
ports, with PostgreSQL when ``COZE_LAB_TEST_DATABASE_URL`` is set and one shared SQLite
file otherwise (the service and both single-user servers are processes of one machine,
which SQLite in WAL mode serves). A test-only admin service drives the hub's REST API:
it starts the users' servers and issues their hub API tokens.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from cozepy import (
    BotModelInfo,
    BotPromptInfo,
    ChatEventType,
    Coze,
    CozeAPIError,
    Message,
    TokenAuth,
)

from coze_lab.hub.demo import DemoHub, free_port
from coze_lab.testing import ModelServer
from tests.conftest import PG_URL
from tests.support import pg_schema

pytestmark = pytest.mark.hub

SERVICE = "services/coze-lab/"
#: the service trusts the hub's answer about a token this long (revocation test)
CACHE_S = 2.0


@dataclass
class Hub:
    url: str
    admin_token: str
    root: Path
    process: subprocess.Popen[bytes]
    tokens: dict[str, str] = field(default_factory=dict)

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"token {self.admin_token}"}
        return httpx.request(
            method, self.url + "hub/api/" + path, headers=headers, timeout=30, **kwargs
        )

    def new_token(self, user: str, note: str) -> str:
        response = self.api("POST", f"users/{user}/tokens", json={"note": note, "expires_in": 3600})
        assert response.status_code == 201, response.text
        return response.json()["token"]

    def as_user(self, user: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"token {self.tokens[user]}", **kwargs.pop("headers", {})}
        return httpx.request(method, self.url + path, headers=headers, timeout=60, **kwargs)

    def coze(self, token: str) -> Coze:
        return Coze(auth=TokenAuth(token), base_url=self.url + SERVICE.rstrip("/"))

    def log(self) -> str:
        """The hub's log without the lines of the fixture's polling."""
        noise = ("GET /hub/api/users/", "healthz", "xsrf cookie", "/hub/error/404")
        lines = (self.root / "hub.log").read_text(errors="replace").splitlines()
        return "\n".join(line for line in lines if not any(n in line for n in noise))


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not PG_URL:
        yield f"sqlite:///{tmp_path_factory.mktemp('hub-db') / 'coze_lab.db'}"
        return
    with pg_schema(PG_URL, "hub_") as url:
        yield url


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory, database: str) -> Iterator[Hub]:
    started = time.monotonic()
    root = tmp_path_factory.mktemp("hub")
    admin_token = secrets.token_hex(24)
    with ModelServer() as model:
        demo = DemoHub(
            root=root,
            database_url=database,
            port=free_port(),
            hub_port=free_port(),
            proxy_api_port=free_port(),
            service_port=free_port(),
            environment={
                "OPENAI_BASE_URL": model.url,
                "OPENAI_API_KEY": "test-key",
                "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
            },
            hub_auth_cache_s=CACHE_S,
            extra=f"""
c.JupyterHub.services.append({{"name": "test-admin", "api_token": {admin_token!r}}})
c.JupyterHub.load_roles.append({{
    "name": "test-admin",
    "scopes": ["admin:users", "admin:servers", "tokens", "list:services", "read:services"],
    "services": ["test-admin"],
}})
""",
        )
        with (root / "hub.log").open("ab") as log:
            process = subprocess.Popen(
                demo.command(), cwd=root, stdout=log, stderr=subprocess.STDOUT
            )
        hub = Hub(demo.url, admin_token, root, process)
        try:
            _wait(
                hub, lambda: httpx.get(hub.url + SERVICE + "healthz", timeout=5).status_code == 200
            )
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(lambda user: _start_server(hub, user), ("alice", "bob")))
            hub.tokens = {user: hub.new_token(user, "tests") for user in ("alice", "bob")}
            print(f"\nhub, service and two servers up in {time.monotonic() - started:.1f} s")
            yield hub
        finally:
            process.terminate()
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def _wait(hub: Hub, ready: Any, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if hub.process.poll() is not None:
            raise RuntimeError("jupyterhub exited:\n" + hub.log()[-8000:])
        try:
            if ready():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("the hub did not get ready:\n" + hub.log()[-8000:])


def _start_server(hub: Hub, user: str) -> None:
    response = hub.api("POST", f"users/{user}/server")
    assert response.status_code in (201, 202), response.text

    def ready() -> bool:
        model = hub.api("GET", f"users/{user}").json()
        server = model.get("servers", {}).get("", {})
        return bool(server.get("ready"))

    _wait(hub, ready, timeout=180)


# ---- the kernel of a user's notebook --------------------------------------------------------
def run_in_kernel(hub: Hub, user: str, code: str, timeout: float = 120) -> str:
    """Start a kernel on the user's server (through the proxy), run ``code``, return stdout."""
    base = f"user/{user}/api/kernels"
    started = hub.as_user(user, "POST", base, json={"name": "python3"})
    assert started.status_code == 201, started.text
    kernel = started.json()["id"]
    try:
        return asyncio.run(_execute(hub, user, kernel, code, timeout))
    finally:
        hub.as_user(user, "DELETE", f"{base}/{kernel}")


async def _execute(hub: Hub, user: str, kernel: str, code: str, timeout: float) -> str:
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    ws_url = hub.url.replace("http", "ws", 1) + f"user/{user}/api/kernels/{kernel}/channels"
    request = HTTPRequest(ws_url, headers={"Authorization": f"token {hub.tokens[user]}"})
    connection = await websocket_connect(request)
    msg_id = uuid.uuid4().hex
    await connection.write_message(
        json.dumps(
            {
                "header": {
                    "msg_id": msg_id,
                    "username": user,
                    "session": uuid.uuid4().hex,
                    "msg_type": "execute_request",
                    "version": "5.3",
                },
                "parent_header": {},
                "metadata": {},
                "content": {
                    "code": code,
                    "silent": False,
                    "store_history": False,
                    "user_expressions": {},
                    "allow_stdin": False,
                    "stop_on_error": True,
                },
                "channel": "shell",
                "buffers": [],
            }
        )
    )
    out: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            raw = await asyncio.wait_for(connection.read_message(), deadline - time.monotonic())
            assert raw is not None, "kernel websocket closed"
            message = json.loads(raw)
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind == "error":
                raise AssertionError("kernel error:\n" + "\n".join(content["traceback"]))
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out)
    finally:
        connection.close()
    raise AssertionError("the kernel did not finish in time")


# ---- helpers --------------------------------------------------------------------------------
def make_bot(coze: Coze, space_id: str, name: str) -> str:
    bot = coze.bots.create(
        space_id=space_id,
        name=name,
        prompt_info=BotPromptInfo(prompt="You are terse."),
        model_info_config=BotModelInfo(model_id="default", temperature=0.1),
    )
    coze.bots.publish(bot_id=bot.bot_id, connector_ids=["1024", "999"])
    return bot.bot_id


def chat(coze: Coze, bot_id: str, question: str) -> tuple[str, str]:
    """The streamed answer and the conversation id."""
    answer, conversation = "", ""
    for event in coze.chat.stream(
        bot_id=bot_id, user_id="u", additional_messages=[Message.build_user_question_text(question)]
    ):
        if event.event == ChatEventType.CONVERSATION_MESSAGE_DELTA:
            answer += event.message.content
        if event.event == ChatEventType.CONVERSATION_CHAT_COMPLETED:
            conversation = event.chat.conversation_id
    return answer, conversation


def space(coze: Coze) -> str:
    return next(w.id for w in coze.workspaces.list() if w.workspace_type == "personal")


# ---- tests ----------------------------------------------------------------------------------
def test_each_single_user_server_has_the_extension_as_the_hub_user(hub: Hub) -> None:
    for user in ("alice", "bob"):
        response = hub.as_user(user, "GET", f"user/{user}/coze_lab/api/health")
        assert response.status_code == 200, response.text
        assert response.json()["data"]["user"]["name"] == user
    # the service knows the same user record as the extension
    ext = hub.as_user("bob", "GET", "user/bob/coze_lab/api/me").json()["data"]
    svc = hub.as_user("bob", "GET", SERVICE + "coze_lab/api/me").json()["data"]
    assert svc["id"] == ext["id"] and svc["name"] == "bob"
    # bob's token does not open alice's server
    assert hub.as_user("bob", "GET", "user/alice/coze_lab/api/me").status_code in (401, 403, 404)


def test_bots_chats_and_privacy_through_the_service(hub: Hub) -> None:
    alice = hub.coze(hub.tokens["alice"])  # cozepy with alice's hub API token
    alice_bot = make_bot(alice, space(alice), "alice's helper")
    answer, alice_conversation = chat(alice, alice_bot, "secret plans")
    assert answer == "[demo model] You said: secret plans"

    # bob makes his bot in his own server's extension (same database as the service)
    made = hub.as_user(
        "bob",
        "POST",
        "user/bob/coze_lab/api/bots",
        json={
            "name": "bob's helper",
            "prompt_info": {"prompt": "Be brief."},
            "model_info_config": {"model_id": "default"},
        },
    )
    assert made.status_code == 201, made.text
    bob_bot = made.json()["data"]["bot_id"]
    published = hub.as_user(
        "bob",
        "POST",
        f"user/bob/coze_lab/api/bots/{bob_bot}/publish",
        json={"connector_ids": ["1024", "999"]},
    )
    assert published.status_code == 200, published.text

    # 1. from bob's notebook kernel: cl.connect() with nothing but the hub's environment
    out = run_in_kernel(
        hub,
        "bob",
        "import json, os, coze_lab as cl\n"
        "studio = cl.connect()\n"
        f"events = list(studio.chat_stream({bob_bot!r}, 'hello from my notebook'))\n"
        "answer = ''.join(e.data.get('content', '') for e in events\n"
        "                 if e.event == 'conversation.message.delta')\n"
        "print(json.dumps({'url': studio.url, 'me': studio.me()['name'], 'answer': answer,\n"
        "                  'configured': sorted(k for k in os.environ if k in ('COZE_LAB_URL', 'COZE_LAB_TOKEN'))}))\n",
    )
    result = json.loads(out.strip().splitlines()[-1])
    assert result["url"] == hub.url + SERVICE
    assert result["me"] == "bob" and result["configured"] == []
    assert result["answer"] == "[demo model] You said: hello from my notebook"

    # 2. cozepy with bob's personal access token (made through the service with his hub token)
    made = hub.as_user("bob", "POST", SERVICE + "coze_lab/api/tokens", json={"name": "cozepy"})
    assert made.status_code == 201, made.text
    pat = made.json()["data"]["token"]
    answer, _ = chat(hub.coze(pat), bob_bot, "via my PAT")
    assert answer == "[demo model] You said: via my PAT"

    # 3. cozepy with bob's hub API token (Bearer), through the proxy
    bob = hub.coze(hub.tokens["bob"])
    answer, bob_conversation = chat(bob, bob_bot, "via my hub token")
    assert answer == "[demo model] You said: via my hub token"

    # bob reaches none of alice's bots or conversations, whatever his token
    for client in (bob, hub.coze(pat)):
        with pytest.raises(CozeAPIError) as caught:
            client.bots.retrieve(bot_id=alice_bot)
        assert caught.value.code == 4200
        with pytest.raises(CozeAPIError) as caught:
            client.conversations.messages.list(conversation_id=alice_conversation)
        assert caught.value.code == 4200
        with pytest.raises(CozeAPIError):
            chat(client, alice_bot, "let me in")
    assert hub.as_user("bob", "GET", f"user/bob/coze_lab/api/bots/{alice_bot}").status_code == 404

    # alice is a hub admin: she sees usage (counts), still not bob's conversation
    usage = hub.as_user("alice", "GET", SERVICE + "coze_lab/api/admin/usage")
    assert usage.status_code == 200, usage.text
    rows = {u["name"]: u for u in usage.json()["data"]["users"]}
    assert rows["bob"]["chats"] >= 3 and rows["alice"]["chats"] >= 1
    assert rows["bob"]["tokens"] > 0
    with pytest.raises(CozeAPIError) as caught:
        alice.conversations.messages.list(conversation_id=bob_conversation)
    assert caught.value.code == 4200
    refused = hub.as_user("bob", "GET", SERVICE + "coze_lab/api/admin/usage")
    assert refused.status_code == 403 and refused.json()["code"] != 0


def test_browser_signs_in_through_the_hub(hub: Hub) -> None:
    with httpx.Client(base_url=hub.url, timeout=30, follow_redirects=True) as browser:
        page = browser.get("hub/login")
        xsrf = re.search(r'name="_xsrf"[^>]*value="([^"]+)"', page.text)
        form = {"username": "bob", "password": "any", **({"_xsrf": xsrf.group(1)} if xsrf else {})}
        assert browser.post("hub/login", data=form).status_code == 200
        # the service sends the browser to the hub's OAuth and back to where it started
        root = browser.get(SERVICE, headers={"Accept": "text/html"})
        assert root.status_code == 200, root.text
        assert str(root.url) == hub.url + SERVICE
        assert root.json()["data"]["user"]["name"] == "bob"
        assert browser.get(SERVICE + "coze_lab/api/me").json()["data"]["name"] == "bob"
        # the Web SDK page is served under the prefix too
        sdk = browser.get(SERVICE + "coze_lab/sdk/chat")
        assert sdk.status_code == 200 and "sdk-chat" in sdk.text
        # a cookie alone never authorizes a write (cross-site request forgery)
        forged = browser.post(SERVICE + "coze_lab/api/tokens", json={"name": "forged"})
        assert forged.status_code == 401
    # an API client without any credential gets a Coze error body, not a login page
    bare = httpx.get(hub.url + SERVICE + "coze_lab/api/me", timeout=30)
    assert bare.status_code == 401 and bare.json()["code"] == 4100


def test_a_revoked_hub_token_stops_working_within_the_cache_time(hub: Hub) -> None:
    token = hub.new_token("bob", "short-lived")
    headers = {"Authorization": f"Bearer {token}"}
    url = hub.url + SERVICE + "coze_lab/api/me"
    assert httpx.get(url, headers=headers, timeout=30).status_code == 200
    listed = hub.api("GET", "users/bob/tokens").json()["api_tokens"]
    token_id = next(t["id"] for t in listed if t["note"] == "short-lived")
    assert hub.api("DELETE", f"users/bob/tokens/{token_id}").status_code == 204
    revoked = time.monotonic()
    status = 200
    while status == 200 and time.monotonic() - revoked < CACHE_S + 20:
        status = httpx.get(url, headers=headers, timeout=30).status_code
        time.sleep(0.2)
    assert status == 401, f"still accepted {time.monotonic() - revoked:.1f} s after revocation"


# ---- team spaces ----------------------------------------------------------------------------
@dataclass
class TeamSpace:
    id: str
    bot: str  # alice's bot in the team space, published to the API
    private_bot: str  # alice's bot in her personal space
    conversation: str  # alice's conversation with the team bot


#: a plugin of the team space (never called: the sidebar lists it)
TEAM_API = {
    "openapi": "3.0.0",
    "info": {"title": "team api", "version": "1"},
    "servers": [{"url": "http://127.0.0.1:9/"}],
    "paths": {
        "/ping": {
            "get": {
                "operationId": "ping",
                "summary": "Ping",
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}


@pytest.fixture(scope="module")
def team_space(hub: Hub) -> TeamSpace:
    """alice (through the service, with her hub token) makes ``data-team``, adds bob and
    publishes a bot there; she also chats with it and keeps a bot of her own."""
    made = hub.as_user("alice", "POST", SERVICE + "coze_lab/api/spaces", json={"name": "data-team"})
    assert made.status_code == 201, made.text
    team = made.json()["data"]["id"]
    added = hub.as_user(
        "alice", "POST", SERVICE + f"coze_lab/api/spaces/{team}/members", json={"name": "bob"}
    )
    assert added.status_code == 201, added.text
    alice = hub.coze(hub.tokens["alice"])
    bot = make_bot(alice, team, "team helper")
    _, conversation = chat(alice, bot, "team plans")
    plugin = hub.as_user(
        "alice",
        "POST",
        SERVICE + f"coze_lab/api/plugins?space_id={team}",
        json={"openapi": TEAM_API, "manifest": {"name_for_model": "team_api"}},
    )
    assert plugin.status_code == 201, plugin.text
    return TeamSpace(team, bot, make_bot(alice, space(alice), "alice's own"), conversation)


def test_a_member_chats_with_the_team_bot_from_the_kernel_and_with_cozepy(
    hub: Hub, team_space: TeamSpace
) -> None:
    out = run_in_kernel(
        hub,
        "bob",
        "import json, coze_lab as cl\n"
        "studio = cl.connect()\n"
        "team = studio.space('data-team')\n"
        "bots = [b['name'] for b in team.bots()]\n"
        f"events = list(team.chat_stream({team_space.bot!r}, 'hello team'))\n"
        "answer = ''.join(e.data.get('content', '') for e in events\n"
        "                 if e.event == 'conversation.message.delta')\n"
        "print(json.dumps({'spaces': sorted(s['name'] for s in studio.spaces()),\n"
        "                  'bots': bots, 'answer': answer,\n"
        "                  'members': sorted(m['name'] for m in team.members())}))\n",
    )
    result = json.loads(out.strip().splitlines()[-1])
    assert result["spaces"] == ["Personal", "data-team"]
    assert result["bots"] == ["team helper"]
    assert result["members"] == ["alice", "bob"]
    assert result["answer"] == "[demo model] You said: hello team"

    made = hub.as_user("bob", "POST", SERVICE + "coze_lab/api/tokens", json={"name": "team"})
    pat = made.json()["data"]["token"]
    bob = hub.coze(pat)
    answer, bobs_conversation = chat(bob, team_space.bot, "via my PAT")
    assert answer == "[demo model] You said: via my PAT"
    assert team_space.id in {w.id for w in bob.workspaces.list()}
    # still nothing of alice's own: her personal bot, her conversation with the team bot
    for call in (
        lambda: bob.bots.retrieve(bot_id=team_space.private_bot),
        lambda: bob.conversations.messages.list(conversation_id=team_space.conversation),
    ):
        with pytest.raises(CozeAPIError) as caught:
            call()
        assert caught.value.code == 4200
    # nor does alice see bob's conversation with the team's bot
    with pytest.raises(CozeAPIError) as caught:
        hub.coze(hub.tokens["alice"]).conversations.messages.list(conversation_id=bobs_conversation)
    assert caught.value.code == 4200


def test_the_sidebar_space_picker_under_the_hub(hub: Hub, team_space: TeamSpace) -> None:
    """bob signs in through the hub in Chromium; the sidebar's space picker shows the team
    space and scopes the bots list to it."""
    from playwright.sync_api import expect, sync_playwright

    from tests.web.test_sidebar_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            page.goto(hub.url + "hub/login", wait_until="load")
            page.fill("input[name=username]", "bob")
            page.fill("input[name=password]", "any")
            page.click("input[type=submit], button[type=submit]")
            page.wait_for_url("**/user/bob/**", timeout=120_000)
            page.goto(hub.url + "user/bob/lab/workspaces/spaces", wait_until="load")
            tab = page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="coze-lab-sidebar"]')
            expect(tab).to_be_visible(timeout=90_000)
            sidebar = page.get_by_test_id("coze-lab-sidebar")
            deadline = time.monotonic() + 30
            while not sidebar.is_visible():
                assert time.monotonic() < deadline, "the Coze Lab sidebar did not open"
                tab.click()
                page.wait_for_timeout(1000)
            picker = page.get_by_test_id("coze-lab-space")
            expect(picker.locator("option")).to_have_count(2, timeout=60_000)
            bots = page.get_by_test_id("coze-lab-bot-list")
            plugins = page.get_by_test_id("coze-lab-plugin-list")
            expect(bots).not_to_contain_text("team helper")  # personal: bob's own bots
            expect(plugins).not_to_contain_text("team api")
            picker.select_option(label="data-team (member)")
            expect(bots).to_contain_text("team helper", timeout=30_000)
            expect(plugins).to_contain_text("team api", timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "hub-space-picker.png"))
        finally:
            browser.close()


def test_a_removed_member_gets_404_on_the_next_request(hub: Hub, team_space: TeamSpace) -> None:
    bob = hub.coze(hub.tokens["bob"])
    assert bob.bots.retrieve(bot_id=team_space.bot).name == "team helper"
    removed = hub.as_user(
        "alice",
        "DELETE",
        SERVICE
        + f"coze_lab/api/spaces/{team_space.id}/members/"
        + hub.as_user("bob", "GET", SERVICE + "coze_lab/api/me").json()["data"]["id"],
    )
    assert removed.status_code == 200, removed.text
    with pytest.raises(CozeAPIError) as caught:
        bob.bots.retrieve(bot_id=team_space.bot)
    assert caught.value.code == 4200
    with pytest.raises(CozeAPIError) as caught:
        chat(bob, team_space.bot, "still in?")
    assert caught.value.code == 4200
    gone = hub.as_user("bob", "GET", f"user/bob/coze_lab/api/bots/{team_space.bot}")
    assert gone.status_code == 404
