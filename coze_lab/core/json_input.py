"""JSON that a client sent: parsed with clear errors and a bounded nesting depth.

``json.loads`` raises ``RecursionError`` on deeply nested input, a plain ``ValueError``
on integers longer than ``sys.get_int_max_str_digits()`` and accepts ``NaN``/``1e999``;
a value nested close to the interpreter's recursion limit also breaks every recursive
step after parsing (serialising, copying, walking templates). ``parse_json`` turns all
of these into an ``InvalidParameter`` (HTTP 400) that says what is wrong.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from coze_lab.core.errors import InvalidParameter

#: the deepest nesting of arrays and objects accepted (far above any real definition)
MAX_DEPTH = 100


def parse_json(text: str | bytes, what: str = "the request body") -> Any:
    """The value of ``text``; InvalidParameter naming ``what`` when it is not plain JSON.

    Example:
        >>> parse_json('{"a": [1, 2]}')
        {'a': [1, 2]}
        >>> parse_json("[" * 200 + "]" * 200)
        Traceback (most recent call last):
        ...
        coze_lab.core.errors.InvalidParameter: the request body is nested deeper than 100 levels
    """
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise InvalidParameter(f"{what} is nested deeper than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError as exc:
        raise InvalidParameter(f"{what} is not UTF-8: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise InvalidParameter(f"{what} is not valid JSON: {exc}") from None
    except ValueError as exc:  # an integer beyond sys.get_int_max_str_digits(), or _no_constant
        raise InvalidParameter(f"{what} is not valid JSON: {_reason(exc)}") from None
    check_depth(value, what)
    return value


def check_depth(value: Any, what: str = "the request body") -> None:
    """InvalidParameter when ``value`` nests lists and dicts deeper than ``MAX_DEPTH``
    (checked without recursion, so any depth is safe to check)."""
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth > MAX_DEPTH:
            raise InvalidParameter(f"{what} is nested deeper than {MAX_DEPTH} levels")
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list):
                push((child, depth + 1))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:20]} is out of range")
    return number


def _reason(exc: ValueError) -> str:
    if "integer string conversion" in str(exc):
        return f"an integer has more than {sys.get_int_max_str_digits()} digits"
    return str(exc)
