"""Typed access to query arguments and JSON fields, failing with InvalidParameter."""

from __future__ import annotations

from typing import Any

from coze_lab.core.errors import InvalidParameter


def int_value(raw: Any, name: str, *, default: int, low: int, high: int) -> int:
    """An integer within ``low..high`` from a query string or JSON value (absent: the
    default; an empty string is not an integer, as the API document says).

    Example:
        >>> int_value("3", "page_num", default=1, low=1, high=10)
        3
    """
    if raw is None:
        return default
    if isinstance(raw, bool):
        raise InvalidParameter(f"{name} must be an integer")
    try:
        value = int(raw)
    except (TypeError, ValueError) as exc:
        raise InvalidParameter(f"{name} must be an integer") from exc
    if isinstance(raw, float) and raw != value:
        raise InvalidParameter(f"{name} must be an integer")
    if not low <= value <= high:
        raise InvalidParameter(f"{name} must be within {low}..{high}")
    return value


def optional_str(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidParameter(f"{name} must be a string")
    return value


def optional_str_list(body: dict[str, Any], name: str) -> list[str] | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidParameter(f"{name} must be a list of strings")
    return value


def version_number(raw: Any, name: str) -> int | None:
    """A published version as the Coze API writes it (``"3"``, ``"v3"`` or ``3``); None
    when absent.

    Example:
        >>> version_number("v2", "version"), version_number(None, "version")
        (2, None)
    """
    if raw is None or raw == "":
        return None
    text = raw[1:] if isinstance(raw, str) and raw[:1] in "vV" else raw
    return int_value(text, name, default=0, low=1, high=10**9)
