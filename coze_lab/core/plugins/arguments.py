"""A model's tool arguments: coerced to the schema's types, defaults filled, then validated.

Models send ``"3"`` for an integer and ``"true"`` for a boolean; those are coerced when the
meaning is unambiguous. Whatever is still wrong is reported back as text the model can act
on, never raised.
"""

from __future__ import annotations

import json
from typing import Any

_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


class ArgumentError(ValueError):
    """The arguments do not fit the tool's schema; the message lists every problem."""


def prepare_arguments(schema: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """Coerced, defaulted and validated arguments; ArgumentError lists what is wrong.

    Example:
        >>> schema = {"type": "object", "required": ["n"], "properties": {
        ...     "n": {"type": "integer"}, "unit": {"type": "string", "default": "c"}}}
        >>> prepare_arguments(schema, {"n": "3"})
        {'n': 3, 'unit': 'c'}
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            raise ArgumentError(f"arguments are not valid JSON: {exc}") from exc
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ArgumentError("arguments must be a JSON object")
    value = coerce(schema, arguments)
    errors = sorted(_validator(schema).iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        raise ArgumentError("invalid arguments: " + "; ".join(_describe(e) for e in errors[:10]))
    return value


def _describe(error: Any) -> str:
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def coerce(schema: Any, value: Any) -> Any:
    """``value`` with scalars converted to the schema's type and object defaults filled."""
    if not isinstance(schema, dict):
        return value
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    if isinstance(value, dict) and (not kinds or "object" in kinds):
        out = dict(value)
        for name, sub in (schema.get("properties") or {}).items():
            if name in out:
                out[name] = coerce(sub, out[name])
            elif isinstance(sub, dict) and "default" in sub:
                out[name] = sub["default"]
        return out
    if isinstance(value, list) and "array" in kinds:
        return [coerce(schema.get("items"), item) for item in value]
    if isinstance(value, str) and kinds and "string" not in kinds:
        return _from_text(value, kinds)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and kinds:
        if "string" in kinds and not ({"integer", "number"} & set(kinds)):
            return str(value)
        if "integer" in kinds and isinstance(value, float) and value.is_integer():
            return int(value)
    return value


def _from_text(text: str, kinds: list[str]) -> Any:
    stripped = text.strip()
    for kind in kinds:
        try:
            if kind == "integer":
                return int(stripped)
            if kind == "number":
                number = float(stripped)
                return int(number) if number.is_integer() and "." not in stripped else number
        except ValueError:
            continue
        if kind == "boolean" and stripped.lower() in _TRUE + _FALSE:
            return stripped.lower() in _TRUE
        if kind in ("object", "array"):
            try:
                parsed = json.loads(stripped)
            except ValueError:
                continue
            if isinstance(parsed, dict if kind == "object" else list):
                return parsed
        if kind == "null" and stripped.lower() in ("null", "none", ""):
            return None
    return text


def _validator(schema: Any) -> Any:
    # jsonschema loads slowly (its format checkers build parsers at import): on first use
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)
