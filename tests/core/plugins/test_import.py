"""Importing OpenAPI documents: tools, schemas, $refs, and every problem with its location."""

from __future__ import annotations

import json

import pytest

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.net import BlockedAddress
from coze_lab.core.plugins import PluginService, PluginSpecError, Problem
from coze_lab.core.plugins.document import load_document, tools_from_document, validate_document
from tests.core.plugins.servers import PETS_YAML, SECURE_JSON, PluginTestServer


@pytest.mark.asyncio
async def test_one_tool_per_operation_with_a_schema_for_the_model(plugins: PluginService, alice,
                                                                  api: PluginTestServer) -> None:
    info = await plugins.import_plugin(alice.id, openapi=PETS_YAML.format(url=api.url))
    names = [t.name for t in info.tools]
    assert names == ["getPet", "deletePet", "create_pet", "sendForm", "flakyGet", "flakyPost",
                     "big"]
    assert info.name == "Pet Store" and info.server_url == api.url
    assert info.manifest["name_for_model"] == "Pet_Store"
    # the multipart operation is left out, with a located warning
    assert info.warnings == [{"pointer": "/paths/~1upload/post/requestBody",
                              "message": "left out: request bodies of type "
                                         "['multipart/form-data'] are not supported"}]
    get_pet = info.tools[0]
    assert get_pet.description == "Get a pet by id."
    assert get_pet.parameters["required"] == ["pet_id"]
    assert get_pet.parameters["properties"]["verbose"] == {"type": "boolean", "default": False}
    create = next(t for t in info.tools if t.name == "create_pet")
    props = create.parameters["properties"]
    assert "id" not in props  # readOnly stays out of requests
    assert props["kind"] == {"type": "string", "enum": ["cat", "dog"]}
    assert props["nickname"]["type"] == ["string", "null"]
    assert create.parameters["required"] == ["name", "kind"]
    # a recursive $ref is cut instead of looping
    assert props["owner"]["properties"]["pets"]["items"] == {"description": "(recursive: NewPet)"}
    json.dumps(info.tools[0].parameters)  # JSON-serialisable, no $ref left
    assert "$ref" not in json.dumps([t.parameters for t in info.tools])


@pytest.mark.asyncio
async def test_every_problem_is_reported_with_its_location(plugins: PluginService, alice) -> None:
    broken = {
        "openapi": "3.0.3",
        "info": {"title": "Broken"},
        "paths": {
            "/a/{id}": {"get": {"operationId": "a", "responses": {"200": {"description": "x"}}}},
            "/b": {"post": {"operationId": 3}},
            "/c": {"get": {"operationId": "c", "parameters": [{"$ref": "#/nope/x"}],
                           "responses": {"200": {"description": "x"}}}},
        },
    }
    manifest = {"name_for_model": "bad name!", "auth": {"type": "oauth", "token_url": "ftp://x"}}
    with pytest.raises(PluginSpecError) as caught:
        await plugins.import_plugin(alice.id, openapi=broken, manifest=manifest)
    pointers = {p.pointer for p in caught.value.problems}
    assert {"/info", "/paths/~1b/post", "/paths/~1b/post/operationId", "/paths/~1a~1{id}/get",
            "/manifest/name_for_model", "/manifest/auth/token_url", "/manifest/auth/client_id",
            "/manifest/auth/authorization_url", "/servers"} <= pointers
    assert "/paths/~1c/get/parameters/0/$ref" in pointers
    assert caught.value.status == 400
    assert "'version' is a required property" in caught.value.msg
    assert plugins.list(alice.id) == []  # nothing was written


def test_duplicate_tool_names_and_colliding_arguments_are_problems() -> None:
    doc = load_document(json.dumps({
        "openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "paths": {
            "/x": {"get": {"operationId": "list pets", "responses": {"200": {"description": "x"}}},
                   "post": {"operationId": "list_pets", "responses": {"200": {"description": "x"}}}},
            "/y": {"post": {
                "operationId": "y",
                "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}],
                "requestBody": {"content": {"application/json": {"schema": {
                    "type": "object", "properties": {"q": {"type": "string"}}}}}},
                "responses": {"200": {"description": "x"}}}},
        }}))
    assert validate_document(doc) == []
    with pytest.raises(PluginSpecError) as caught:
        tools_from_document(doc)
    assert validate_document({**doc, "paths": {"/x": {m: {**doc["paths"]["/x"]["get"]} for m in ("get", "post")}}}) == [
        Problem("/paths/~1x/post", "Operation ID 'list pets' for 'post' in '/x' is not unique")]
    assert [p.pointer for p in caught.value.problems] == ["/paths/~1x/post",
                                                          "/paths/~1y/post/requestBody"]


@pytest.mark.parametrize("text", ["{not json", "- just\n- a list", "openapi: [3"])
def test_unreadable_documents(text: str) -> None:
    with pytest.raises(PluginSpecError):
        load_document(text)


@pytest.mark.asyncio
async def test_import_by_url_goes_through_the_ssrf_guard(plugins: PluginService, alice,
                                                         api: PluginTestServer) -> None:
    api.document = PETS_YAML.format(url="/v1")  # a relative server, resolved against the URL
    info = await plugins.import_plugin(alice.id, url=f"{api.url}/openapi.yaml")
    assert info.server_url == f"{api.url}/v1"
    closed = PluginService(plugins._db, secrets=plugins._box,
                           policy=type(plugins._policy)())  # nothing internal allowed
    before = len(api.requests)
    with pytest.raises(BlockedAddress):
        await closed.import_plugin(alice.id, url=f"{api.url}/openapi.yaml")
    assert len(api.requests) == before


@pytest.mark.asyncio
async def test_manifest_auth_spellings(plugins: PluginService, alice) -> None:
    doc = {**SECURE_JSON, "servers": [{"url": "https://api.example.com"}]}
    coze_style = await plugins.import_plugin(alice.id, openapi=doc, manifest={
        "name_for_model": "secure",
        "auth": {"type": "service_token", "credential_location": "query",
                 "authorization_content": {"key": "{{bstudio_api_key}}"}}})
    assert coze_style.auth == {"type": "service_token", "location": "query",
                               "configured": False, "variables": ["bstudio_api_key"]}
    with pytest.raises(PluginSpecError, match="needs a"):
        await plugins.import_plugin(alice.id, openapi=doc, manifest={
            "auth": {"type": "service_token", "template": "Bearer fixed"}})
    with pytest.raises(InvalidParameter, match="openapi"):
        await plugins.import_plugin(alice.id)
