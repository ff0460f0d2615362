from __future__ import annotations

import pytest

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.json_input import MAX_DEPTH, check_depth, parse_json


def test_plain_json_is_parsed() -> None:
    assert parse_json(b'{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested deeper than 100 levels"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 100 levels"),
        ('{"n": ' + "9" * 5000 + "}", "more than 4300 digits"),
        ('{"n": NaN}', "NaN is not a JSON number"),
        ('{"n": -Infinity}', "-Infinity is not a JSON number"),
        ('{"n": 1e999}', "out of range"),
        (b"\xff\xfe\xfd", "not"),
        ("{bad", "not valid JSON"),
    ],
)
def test_hostile_json_is_an_invalid_parameter(text: str | bytes, message: str) -> None:
    with pytest.raises(InvalidParameter, match=message) as caught:
        parse_json(text, "the thing")
    assert caught.value.msg.startswith("the thing")


def test_depth_is_checked_without_recursion() -> None:
    value: list = []
    for _ in range(50_000):
        value = [value]
    with pytest.raises(InvalidParameter, match="nested deeper"):
        check_depth(value)
    check_depth({"a": [{"b": [1, 2]}]})
