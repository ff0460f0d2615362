"""Resolving ``{{node.field}}`` references against the values produced so far."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from coze_lab.core.workflows.spec import REFERENCE, Reference, whole_reference

Values = Mapping[str, Mapping[str, Any]]


class MissingValue(LookupError):
    """A reference to a node that did not run (a skipped branch) or a missing field."""


def lookup(values: Values, ref: Reference) -> Any:
    try:
        current: Any = values[ref.node][ref.field]
    except KeyError as exc:
        raise MissingValue(str(ref)) from exc
    for step in ref.path:
        if isinstance(current, Mapping) and step in current:
            current = current[step]
        elif isinstance(current, list) and step.isdigit() and int(step) < len(current):
            current = current[int(step)]
        else:
            raise MissingValue(str(ref))
    return current


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def render(value: Any, values: Values, *, strict: bool = True) -> Any:
    """Replace references: a lone reference keeps its type, inside text it is stringified.

    Example:
        >>> render({"a": "{{n.x}}", "b": "x={{n.x}}"}, {"n": {"x": 3}})
        {'a': 3, 'b': 'x=3'}
    """
    if isinstance(value, str):
        ref = whole_reference(value)
        if ref is not None:
            try:
                return lookup(values, ref)
            except MissingValue:
                if strict:
                    raise
                return None

        def substitute(match: Any) -> str:
            path = tuple(p for p in match.group(3).split(".") if p)
            try:
                return _as_text(lookup(values, Reference(match.group(1), match.group(2), path)))
            except MissingValue:
                if strict:
                    raise
                return ""

        return REFERENCE.sub(substitute, value)
    if isinstance(value, dict):
        return {k: render(v, values, strict=strict) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, values, strict=strict) for v in value]
    return value


def bind_sql(sql: Any, values: Values, *, strict: bool = True) -> dict[str, Any]:
    """SQL whose references become named parameters: values are bound, never pasted in.

    A quoted reference (``'{{n.y}}'``) is a parameter too: the quotes go.

    Example:
        >>> bind_sql("SELECT * FROM t WHERE a = {{n.x}} AND b = '{{n.y}}'", {"n": {"x": 3, "y": 4}})
        {'sql': 'SELECT * FROM t WHERE a = :p0 AND b = :p1', 'params': {'p0': 3, 'p1': 4}}
    """
    params: dict[str, Any] = {}
    sql = re.sub(r"'\s*(" + REFERENCE.pattern + r")\s*'", r"\1", str(sql))

    def placeholder(match: Any) -> str:
        path = tuple(p for p in match.group(3).split(".") if p)
        try:
            value = lookup(values, Reference(match.group(1), match.group(2), path))
        except MissingValue:
            if strict:
                raise
            value = None
        name = f"p{len(params)}"
        params[name] = value
        return f":{name}"

    return {"sql": REFERENCE.sub(placeholder, sql), "params": params}
