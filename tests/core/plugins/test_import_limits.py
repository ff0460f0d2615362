"""Hostile OpenAPI documents are refused under limits that the refusal names, and read in a
child process that is killed at its deadline (review finding: a 3 KB document froze the
server)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from coze_lab.core.plugins import PluginSpecError
from coze_lab.core.plugins.importing import ImportLimits, read_draft, read_draft_isolated
from tests.core.plugins.documents import fan_out, operations


async def refusal(document: Any, limits: ImportLimits) -> str:
    text = document if isinstance(document, str) else json.dumps(document)
    with pytest.raises(PluginSpecError) as caught:
        await read_draft_isolated(text, None, None, None, limits)
    return caught.value.msg


@pytest.mark.asyncio
@pytest.mark.parametrize("levels", [20, 30])
async def test_a_ref_fan_out_is_refused_naming_the_limit(levels: int) -> None:
    document = json.dumps(fan_out(levels))
    assert len(document) < 5000
    msg = await refusal(document, ImportLimits())
    assert "/paths/~1x/post: expanding $ref makes more than 200000 schema values" in msg
    assert "plugin_max_schema_nodes" in msg


@pytest.mark.asyncio
async def test_5000_operations_are_refused_naming_the_limit() -> None:
    msg = await refusal(operations(5000), ImportLimits(max_document_bytes=10_000_000))
    assert "the document has 5000 operations; the limit is 300" in msg
    assert "plugin_max_operations" in msg


@pytest.mark.asyncio
async def test_a_document_over_the_size_limit_is_refused_before_reading() -> None:
    msg = await refusal(operations(300), ImportLimits(max_document_bytes=1000))
    assert "the limit is 1000 (setting: plugin_max_document_bytes)" in msg


@pytest.mark.asyncio
async def test_a_yaml_alias_bomb_is_refused() -> None:
    lines = ["openapi: 3.0.3", "a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for name, below in zip("bcdefgh", "abcdefg", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{below}"] * 10) + "]")
    msg = await refusal("\n".join(lines), ImportLimits())
    assert "YAML aliases" in msg and "plugin_max_document_bytes" in msg


@pytest.mark.asyncio
async def test_a_reader_past_its_time_is_killed_and_the_limit_named() -> None:
    limits = ImportLimits(max_schema_nodes=10**12, timeout_s=1.5)
    msg = await refusal(fan_out(24), limits)
    assert "took longer than 1.5 s (setting: plugin_import_timeout_s)" in msg


@pytest.mark.asyncio
async def test_a_reader_out_of_memory_names_the_memory_limit() -> None:
    limits = ImportLimits(max_schema_nodes=10**12, memory_mb=64)  # below what Python needs
    msg = await refusal(fan_out(24), limits)
    assert "plugin_import_memory_mb" in msg


@pytest.mark.asyncio
async def test_a_good_document_reads_the_same_in_the_child() -> None:
    document = json.dumps(fan_out(5))
    here = read_draft(document, None, None, None, ImportLimits())
    there = await read_draft_isolated(document, None, None, None, ImportLimits())
    assert there == here
    assert there.tools[0].parameters["properties"]["p0"]["properties"]["p1"]["type"] == "object"
