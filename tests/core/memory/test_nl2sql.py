"""The schema text models see and the SQL taken from their answers."""

from __future__ import annotations

import pytest

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.memory.nl2sql import describe, extract_sql, sql_messages, tool_description
from coze_lab.services import Runtime


@pytest.mark.parametrize(
    ("answer", "sql"),
    [
        ("SELECT a FROM t;", "SELECT a FROM t"),
        ("```sql\nSELECT a\nFROM t\n```\nThis sums it.", "SELECT a\nFROM t"),
        ("```\ndelete from t where a = 1\n```", "delete from t where a = 1"),
        ("Sure! SELECT a FROM t WHERE b = 'select'", "SELECT a FROM t WHERE b = 'select'"),
        ("select a from t", "select a from t"),
    ],
)
def test_the_sql_of_an_answer(answer: str, sql: str) -> None:
    assert extract_sql(answer) == sql


def test_an_empty_answer_is_no_sql() -> None:
    with pytest.raises(InvalidParameter):
        extract_sql("```sql\n;\n```")


def test_the_schema_a_model_sees(runtime: Runtime) -> None:
    alice = runtime.identity.ensure_user("alice")
    fields = [
        {"name": "city", "description": "where"},
        {"name": "n", "type": "number"},
        {"name": "at", "type": "date"},
    ]
    info = runtime.tables.create(alice.id, "sales", fields, description="shop sales")
    assert describe(info) == (
        "sales (shop sales): id INTEGER, created_at TIMESTAMP, city TEXT -- where, n INTEGER,"
        " at TIMESTAMP"
    )
    assert "SELECT (read only)" in tool_description(info, "draft", allow_writes=False)
    assert "INSERT" in tool_description(info, "draft", allow_writes=True)
    system, user = sql_messages("How many?", [info], "draft", allow_writes=False)
    assert describe(info) in system["content"] and "only SELECT" in system["content"]
    assert user == {"role": "user", "content": "How many?"}
    with pytest.raises(Exception, match="not been published"):
        describe(info, "online")
