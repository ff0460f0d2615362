"""``cl.connect()``: explicit URL + token, environment, JupyterHub, running servers."""

from __future__ import annotations

import pytest

import coze_lab as cl
from coze_lab.notebook import connect as discovery
from coze_lab.notebook.studio import Studio, StudioError, parse_sse
from tests.widgets.conftest import Served


def test_explicit_url_and_pat_then_wf_run(served: Served) -> None:
    studio = cl.connect(served.server.url, served.token)
    assert studio.me()["name"] == "alice"
    assert studio._http.headers["Authorization"] == f"Bearer {served.token}"
    assert discovery.current() is studio

    wf = cl.Workflow("connect_run")
    wf.inputs(name=str)
    wf.text("greet", template="Hello {{start.name}}")
    wf.end(greeting="{{greet.output}}")
    run = wf.run(name="Ada")  # returns at once: the run is the server's
    assert [n["id"] for n in run.nodes] == ["start", "greet", "end"]
    assert run.wait(60).status == "succeeded"
    assert run.outputs == {"greeting": "Hello Ada"}
    assert "cl.connect().run(" in repr(run)
    run.close()


def test_bot_variables_through_connect(served: Served) -> None:
    cl.connect(served.server.url, served.token)
    bot = cl.Bot("connect_vars", variables={"city": "Paris"})  # the connected server's
    assert dict(bot.variables) == {"city": "Paris"}
    bot.variables["city"] = "Oslo"
    assert bot.variables["city"] == "Oslo"
    assert "Oslo" in repr(bot.variables)


def test_environment_variables(served: Served) -> None:
    env = {"COZE_LAB_URL": served.server.url, "COZE_LAB_TOKEN": served.token}
    assert cl.connect(environ=env).me()["name"] == "alice"


def test_bad_token_fails_at_connect(served: Served) -> None:
    with pytest.raises(StudioError) as caught:
        cl.connect(served.server.url, "pat_wrong")
    assert caught.value.code == 4100 and caught.value.status == 401


def test_the_running_server_that_started_the_kernel() -> None:
    servers = [
        {"url": "http://0.0.0.0:8890/", "token": "t1", "pid": 11, "base_url": "/"},
        {"url": "http://127.0.0.1:8888/lab-a/", "token": "t2", "pid": 22, "base_url": "/lab-a/"},
    ]
    studio = discovery._discover(None, None, servers, {"JPY_PARENT_PID": "22"})
    assert studio.url == "http://127.0.0.1:8888/lab-a/" and studio.token == "t2"
    assert studio.page_base == "/lab-a/"
    only = discovery._discover(None, None, servers[:1], {})
    assert only.url == "http://127.0.0.1:8890/"  # 0.0.0.0 is reached on loopback
    with pytest.raises(StudioError, match="no Jupyter server found"):
        discovery._discover(None, None, [], {})


def test_jupyterhub_single_user_server() -> None:
    env = {
        "JUPYTERHUB_API_TOKEN": "hub-secret",
        "JUPYTERHUB_SERVICE_PREFIX": "/user/ana/",
        "JUPYTERHUB_SERVICE_URL": "http://0.0.0.0:8888/user/ana/",
    }
    studio = discovery._discover(None, None, [], env)
    assert studio.url == "http://127.0.0.1:8888/user/ana/"
    assert studio._http.headers["Authorization"] == "token hub-secret"
    assert studio.page_base == "/user/ana/"
    # Older hubs: no service URL, the running server under the prefix (token from the hub).
    servers = [
        {"url": "http://127.0.0.1:9000/user/ana/", "token": "", "base_url": "/user/ana/"},
        {"url": "http://127.0.0.1:9001/", "token": "x", "base_url": "/"},
    ]
    env.pop("JUPYTERHUB_SERVICE_URL")
    studio = discovery._discover(None, None, servers, env)
    assert studio.url == "http://127.0.0.1:9000/user/ana/" and studio.token == "hub-secret"


def test_sse_parser() -> None:
    lines = [
        ": ping",
        "id: 1",
        "event: message",
        'data: {"content": "hi"}',
        "",
        "event: done",
        'data: "[DONE]"',
        "",
        "data: plain",
    ]
    events = list(parse_sse(iter(lines)))
    assert [(e.id, e.event, e.data) for e in events] == [
        (1, "message", {"content": "hi"}),
        (0, "done", "[DONE]"),
        (0, "", "plain"),
    ]


def test_unreachable_server() -> None:
    with pytest.raises(StudioError, match="cannot reach"):
        Studio("http://127.0.0.1:9/").me()
