"""Prompt variables: ``{{name}}`` from the request, the bot's defaults and system values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from coze_lab.core.errors import InvalidParameter

_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def render(template: str, values: Mapping[str, str]) -> str:
    """Replace every ``{{name}}``; unknown names become empty text, as in Coze.

    Example:
        >>> render("Hi {{ name }}, it is {{sys_time}}.{{unknown}}", {"name": "Ada",
        ...        "sys_time": "noon"})
        'Hi Ada, it is noon.'
    """
    return _VARIABLE.sub(lambda m: values.get(m.group(1), ""), template)


def check_custom_variables(value: Any) -> dict[str, str]:
    """The request's ``custom_variables``: string values only, no ``sys_`` overrides."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidParameter("custom_variables must be an object of string values")
    reserved = sorted(k for k in value if k.startswith("sys_"))
    if reserved:
        raise InvalidParameter(f"custom_variables cannot set system variables {reserved}")
    return dict(value)
