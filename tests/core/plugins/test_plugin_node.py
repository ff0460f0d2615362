"""The workflow plugin node, including the OAuth authorization interrupt and its resume."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from sqlalchemy import select

from coze_lab import Workflow, WorkflowDefinitionError
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.services import Runtime
from coze_lab.store.models import PluginCall
from tests.core.plugins.servers import ME_JSON, PETS_YAML, PluginTestServer, oauth_manifest


@pytest.fixture
def host(plugin_runtime: Runtime) -> Iterator[InProcessHost]:
    local = InProcessHost(plugin_runtime, "alice")
    yield local
    local.close()


def _pet_workflow(plugin_id: int) -> Workflow:
    wf = Workflow("pets")

    @wf.start
    def start(pet: int) -> None: ...

    wf.plugin("fetch", plugin=plugin_id, tool="getPet",
              inputs={"pet_id": "{{start.pet}}", "X-Trace": "wf"})
    wf.end(status="{{fetch.status_code}}", path="{{fetch.json.path}}")
    return wf


def test_plugin_node_calls_the_tool_and_traces_the_call(host: InProcessHost,
                                                        api: PluginTestServer) -> None:
    plugins = host.runtime.plugins
    info = host.call(plugins.import_plugin(host.user.id, openapi=PETS_YAML.format(url=api.url)))
    run = host.run(_pet_workflow(info.id).validate(), {"pet": 7})
    assert run.status == "succeeded", run.error
    assert run.outputs == {"status": 200, "path": "/pets/7"}
    node = run.nodes["fetch"]
    assert node.inputs["pet_id"] == 7 and node.outputs["latency_ms"] > 0
    with host.runtime.db.transaction() as session:
        call = session.scalars(select(PluginCall)).one()
        assert call.trace == {"run_id": str(run.id), "node_id": "fetch"}
        assert call.scene == "draft" and call.request["headers"]["X-Trace"] == "wf"


def test_a_failed_call_fails_the_node_or_takes_its_error_branch(host: InProcessHost,
                                                                api: PluginTestServer) -> None:
    plugins = host.runtime.plugins
    info = host.call(plugins.import_plugin(host.user.id, openapi=PETS_YAML.format(url=api.url)))
    wf = Workflow("bad-args")

    @wf.start
    def start(pet: str) -> None: ...

    wf.plugin("fetch", plugin=info, tool="getPet", inputs={"pet_id": "{{start.pet}}"},
              on_error="branch")
    wf.text("oops", template="failed: {{fetch.error}}", after="fetch:error")
    wf.end(after="oops", message="{{oops.output}}")
    run = host.run(wf.validate(), {"pet": "not-a-number"})
    assert run.status == "succeeded", run.error
    assert "pet_id: 'not-a-number' is not of type 'integer'" in run.outputs["message"]


def test_plugin_node_definition_checks() -> None:
    wf = Workflow("x")

    @wf.start
    def start() -> None: ...

    with pytest.raises(WorkflowDefinitionError, match="plugin_id"):
        wf.plugin("p", plugin="abc", tool="t")
    with pytest.raises(WorkflowDefinitionError, match="tool"):
        wf.plugin("p", plugin=12, tool="")
    with pytest.raises(WorkflowDefinitionError, match="scene"):
        wf.plugin("p", plugin=12, tool="t", scene="prod")


def test_missing_oauth_authorization_interrupts_and_resumes(host: InProcessHost,
                                                            api: PluginTestServer) -> None:
    plugins = host.runtime.plugins
    info = host.call(plugins.import_plugin(
        host.user.id, openapi={**ME_JSON, "servers": [{"url": api.url}]},
        manifest=oauth_manifest(api)))
    wf = Workflow("who")

    @wf.start
    def start() -> None: ...

    wf.plugin("me", plugin=info, tool="whoami")
    wf.end(user="{{me.json.user}}")
    run = host.run(wf.validate(), {})
    assert run.status == "interrupted"
    [pending] = run.pending
    assert pending.type == "authorization"  # not a question
    url = pending.data["authorization_url"]
    assert url.startswith(f"{api.url}/authorize?") and pending.data["plugin_id"] == str(info.id)

    # the user opens the link; the provider sends them to the callback, which resumes the run
    answer = httpx.get(url)
    params = {k: v[0] for k, v in parse_qs(urlparse(answer.headers["location"]).query).items()}
    host.call(plugins.complete_authorization(params["state"], params["code"]))
    final = host.call(host.runtime.engine.wait(run.id))
    assert final.status == "succeeded", final.error
    assert final.outputs == {"user": "octocat"}
    assert host.runtime.engine.store.pending(host.user.id) == []
