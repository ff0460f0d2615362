"""The HTTP node against a real server on loopback, with and without the allow list."""

from __future__ import annotations

import coze_lab as cl
from coze_lab.notebook.in_process import InProcessHost
from tests.support import EchoServer


def fetcher(url: str, path: str = "/echo") -> cl.Workflow:
    wf = cl.Workflow("fetch")
    wf.inputs(city=str)
    wf.node("http", "weather", method="POST", url=url + path,
            query={"city": "{{start.city}}"}, headers={"X-Unit": "celsius"},
            body={"city": "{{start.city}}", "days": 3})
    wf.end(status="{{weather.status_code}}", seen="{{weather.json}}")
    return wf


def test_http_node_calls_an_allowed_server(host: InProcessHost) -> None:
    host.runtime.config.outbound_allow = ["127.0.0.1/32"]
    with EchoServer() as echo:
        run = host.run(fetcher(echo.url).validate(), {"city": "Oslo"})
    assert run.status == "succeeded", run.error
    seen = run.outputs["seen"]
    assert run.outputs["status"] == 200
    assert seen["method"] == "POST" and seen["query"] == {"city": "Oslo"}
    assert seen["headers"]["x-unit"] == "celsius"
    assert '"days"' in seen["body"] and "Oslo" in seen["body"]


def test_http_node_refuses_loopback_by_default(host: InProcessHost) -> None:
    with EchoServer() as echo:
        run = host.run(fetcher(echo.url).validate(), {"city": "Oslo"})
        assert echo.connections == 0
    assert run.status == "failed"
    assert run.error["node_id"] == "weather" and "refusing" in run.error["msg"]


def test_an_error_status_is_an_output_not_a_failure(host: InProcessHost) -> None:
    host.runtime.config.outbound_allow = ["127.0.0.1/32"]
    with EchoServer() as echo:
        run = host.run(fetcher(echo.url, "/status?code=404").validate(), {"city": "x"})
    assert run.status == "succeeded"
    assert run.outputs == {"status": 404, "seen": {"error": "as requested"}}
