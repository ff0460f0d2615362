"""``cl.Plugin`` from a notebook: import from a file, call, credentials, publish, workflow use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import coze_lab as cl
from coze_lab.notebook import in_process as local
from coze_lab.services import Runtime
from tests.core.plugins.servers import PETS_YAML, SECURE_JSON, PluginTestServer


@pytest.fixture
def notebook(plugin_runtime: Runtime) -> Iterator[local.InProcessHost]:
    host = local.use_runtime(plugin_runtime, "alice")
    yield host
    host.close()
    local._default = None


def test_plugin_from_a_file_called_and_used_in_a_workflow(
        notebook: local.InProcessHost, api: PluginTestServer, tmp_path: Path) -> None:
    spec = tmp_path / "pets.yaml"
    spec.write_text(PETS_YAML.format(url=api.url))
    pets = cl.Plugin.from_openapi(spec, manifest={"name_for_human": "Pets"})
    assert pets.name == "Pets" and "getPet" in pets.tools
    assert "| `getPet` | GET /pets/{pet_id} |" in pets._repr_markdown_()
    result = pets.call("getPet", pet_id=3, verbose=True)
    assert result.ok and result.data["query"]["verbose"] == "true"
    assert pets.publish() == 1 and pets.info.online_version == 1
    assert pets.call("getPet", scene="online", pet_id=4).data["path"] == "/pets/4"
    assert [p.id for p in cl.Plugin.list()] == [pets.id]

    wf = cl.Workflow("nb")

    @wf.start
    def start(pet: int) -> None: ...

    wf.plugin("get", plugin=pets, tool="getPet", inputs={"pet_id": "{{start.pet}}"})
    wf.end(path="{{get.json.path}}")
    assert wf.run_local(pet=9).outputs == {"path": "/pets/9"}


def test_plugin_from_a_dict_or_a_url_with_credentials(notebook: local.InProcessHost,
                                                      api: PluginTestServer) -> None:
    secure = cl.Plugin.from_openapi(
        {**SECURE_JSON, "servers": [{"url": api.url}]},
        manifest={"auth": {"type": "service_token", "template": "Bearer {{api_key}}"}})
    assert not secure.call("secure").ok
    secure.set_credentials(api_key=api.API_KEY)
    assert secure.info.auth["configured"] and secure.call("secure").data == {"secret": "granted"}
    api.document = PETS_YAML.format(url=api.url)
    by_url = cl.Plugin.from_openapi(f"{api.url}/openapi.yaml")
    assert cl.Plugin.get(str(by_url.id)).tools == by_url.tools
