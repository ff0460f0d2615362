"""Hostile OpenAPI documents, small as text and costly to read."""

from __future__ import annotations

from typing import Any


def fan_out(levels: int, width: int = 2) -> dict[str, Any]:
    """A few KB whose ``$ref``\\ s expand into ``width ** levels`` schemas."""
    schemas = {}
    for i in range(levels):
        below = {"$ref": f"#/components/schemas/L{i + 1}"}
        props = {f"p{j}": below for j in range(width)} if i < levels - 1 else {"v": {}}
        schemas[f"L{i}"] = {"type": "object", "properties": props}
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/L0"}}}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "fan", "version": "1"},
        "servers": [{"url": "https://example.com"}],
        "paths": {
            "/x": {"post": {"requestBody": body, "responses": {"200": {"description": "ok"}}}}
        },
        "components": {"schemas": schemas},
    }


def operations(count: int) -> dict[str, Any]:
    ok = {"200": {"description": "ok"}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "many", "version": "1"},
        "servers": [{"url": "https://example.com"}],
        "paths": {
            f"/op{i}": {"get": {"operationId": f"op{i}", "responses": ok}} for i in range(count)
        },
    }
