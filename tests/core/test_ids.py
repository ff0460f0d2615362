from __future__ import annotations

import json
import os

import pytest

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import new_id, parse_id


def test_ids_are_19_digit_increasing_and_unique() -> None:
    ids = [new_id() for _ in range(5000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(len(str(i)) == 19 and str(i).startswith("7") for i in ids)
    assert max(ids) < 2**63


@pytest.mark.parametrize(
    "raw",
    ["", "abc", "-1", "0", "1.5", "9" * 20, True, None, "\uff11\uff12", "01", "0007", "9" * 19],
)
def test_bad_ids_are_invalid_parameters(raw: object) -> None:
    with pytest.raises(InvalidParameter):
        parse_id(raw)


def test_ids_parse_from_strings_and_ints() -> None:
    assert parse_id("7091990206871050740") == 7091990206871050740
    assert parse_id(12) == 12


def test_the_ids_the_server_takes_are_the_ids_the_document_allows() -> None:
    """The API document's id pattern and ``parse_id`` agree (schemathesis checks both ways:
    what the document allows is taken, what it refuses is refused)."""
    import re

    from coze_lab.core.ids import MAX_ID
    from coze_lab.web.schemas import ID

    pattern = re.compile(ID["pattern"])
    for raw in ("1", "10", "7091990206871050740", str(MAX_ID), str(MAX_ID + 1), "01", "0", "-1"):
        try:
            parse_id(raw)
            taken = True
        except InvalidParameter:
            taken = False
        assert taken == bool(pattern.fullmatch(raw)), raw


def test_random_digits_are_below_a_million_and_a_forked_child_draws_its_own() -> None:
    from coze_lab.core import ids

    assert all(0 <= ids._six_digits() < 1_000_000 for _ in range(5000))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the bytes its parent buffered must not be reused
        os.write(write, json.dumps([ids._six_digits() for _ in range(5)]).encode())
        os._exit(0)
    os.close(write)
    parent = [ids._six_digits() for _ in range(5)]
    with os.fdopen(read) as stream:
        child = json.loads(stream.read())
    os.waitpid(pid, 0)
    assert len(child) == 5 and child != parent
