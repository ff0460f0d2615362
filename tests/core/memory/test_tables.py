from __future__ import annotations

import pytest

from coze_lab.core.errors import Conflict, InvalidParameter, NotFound
from coze_lab.core.memory import TableService
from coze_lab.core.memory.tables import parse_fields
from coze_lab.services import Runtime

FIELDS = [
    {"name": "customer", "type": "text", "required": True},
    {"name": "amount", "type": "number"},
    {"name": "paid", "type": "boolean"},
]


@pytest.fixture
def tables(runtime: Runtime) -> TableService:
    return runtime.tables


def test_rows_are_typed_filtered_and_per_user(runtime: Runtime, tables: TableService) -> None:
    alice = runtime.identity.ensure_user("alice")
    bob = runtime.identity.ensure_user("bob")
    orders = tables.create(alice.id, "orders", FIELDS)
    for customer, amount in (("ada", 5), ("ada", 30), ("bo", 7)):
        tables.insert(alice.id, orders.id, "draft", {"customer": customer, "amount": amount})
    rows = tables.query(
        alice.id,
        orders.id,
        "draft",
        where=[{"field": "customer", "op": "==", "value": "ada"}],
        order_by=[{"field": "amount", "desc": True}],
    )
    assert [r["amount"] for r in rows] == [30, 5]
    big = [{"field": "amount", "op": ">=", "value": 7}]
    assert tables.update(alice.id, orders.id, "draft", where=big, values={"paid": True}) == 2
    paid = tables.query(
        alice.id, orders.id, "draft", where=[{"field": "paid", "op": "==", "value": True}]
    )
    assert sorted(r["customer"] for r in paid) == ["ada", "bo"]
    assert tables.delete_rows(alice.id, orders.id, "draft", where=big) == 2
    assert len(tables.query(alice.id, orders.id, "draft")) == 1
    with pytest.raises(NotFound):
        tables.query(bob.id, orders.id, "draft")
    with pytest.raises(InvalidParameter):
        tables.insert(alice.id, orders.id, "draft", {"amount": 1})  # customer is required
    with pytest.raises(InvalidParameter):
        tables.insert(alice.id, orders.id, "draft", {"customer": "x", "amount": "1; drop"})
    with pytest.raises(InvalidParameter):
        tables.query(alice.id, orders.id, "draft", where=[{"field": "sys_uid", "value": "1"}])
    with pytest.raises(InvalidParameter):
        tables.delete_rows(alice.id, orders.id, "draft", where=[])


def test_draft_and_online_are_separate(runtime: Runtime, tables: TableService) -> None:
    alice = runtime.identity.ensure_user("alice")
    notes = tables.create(alice.id, "notes", [{"name": "text"}])
    tables.insert(alice.id, notes.id, "draft", {"text": "test data"})
    with pytest.raises(NotFound):
        tables.query(alice.id, notes.id, "online")
    tables.publish(alice.id, notes.id)
    assert tables.query(alice.id, notes.id, "online") == []
    tables.add_fields(alice.id, notes.id, [{"name": "stars", "type": "number"}])
    with pytest.raises(InvalidParameter):  # online has not got the new field yet
        tables.insert(alice.id, notes.id, "online", {"text": "x", "stars": 3})
    tables.publish(alice.id, notes.id)
    tables.insert(alice.id, notes.id, "online", {"text": "x", "stars": 3})
    assert [r["stars"] for r in tables.query(alice.id, notes.id, "online")] == [3]
    assert [r["text"] for r in tables.query(alice.id, notes.id, "draft")] == ["test data"]
    with pytest.raises(Conflict):
        tables.create(alice.id, "notes", [{"name": "text"}])
    tables.delete(alice.id, notes.id)
    with pytest.raises(NotFound):
        tables.get(alice.id, notes.id)


def test_custom_sql_is_scoped_and_bound(runtime: Runtime, tables: TableService) -> None:
    alice = runtime.identity.ensure_user("alice")
    bob = runtime.identity.ensure_user("bob")
    mine = tables.create(alice.id, "orders", FIELDS)
    theirs = tables.create(bob.id, "orders", FIELDS)
    tables.insert(alice.id, mine.id, "draft", {"customer": "ada", "amount": 5})
    tables.insert(bob.id, theirs.id, "draft", {"customer": "ada", "amount": 500})
    hostile = "ada' OR '1'='1"
    got = tables.execute(
        alice.id,
        mine.id,
        "draft",
        "SELECT customer, SUM(amount) AS total FROM orders WHERE customer = :p0 GROUP BY customer",
        {"p0": "ada"},
    )
    assert got["rows"] == [{"customer": "ada", "total": 5}]
    assert (
        tables.execute(
            alice.id, mine.id, "draft", "SELECT * FROM orders WHERE customer = :p0", {"p0": hostile}
        )["rows"]
        == []
    )
    inserted = tables.execute(
        alice.id,
        mine.id,
        "draft",
        "INSERT INTO orders (customer, amount) VALUES (:p0, 1), ('cy', 2)",
        {"p0": "bo"},
        allow_writes=True,
    )
    assert inserted["count"] == 2
    changed = tables.execute(
        alice.id, mine.id, "draft", "UPDATE orders SET amount = amount + 1", {}, allow_writes=True
    )
    assert changed["count"] == 3  # only alice's rows
    assert [r["amount"] for r in tables.query(bob.id, theirs.id, "draft")] == [500]
    for sql, writes in (
        ("DELETE FROM orders WHERE amount > 0", False),
        ("DROP TABLE orders", True),
        ("SELECT * FROM user_tables", False),
        (f"SELECT * FROM ut_{theirs.id}_draft", False),
        ("SELECT load_extension('x') FROM orders", False),
        ("UPDATE orders SET sys_uid = 'x'", True),
        ("SELECT 1; DELETE FROM orders", True),
        ("SELEC nonsense", False),
        ("SELECT 'unclosed FROM orders", False),
    ):
        with pytest.raises(InvalidParameter):
            tables.execute(alice.id, mine.id, "draft", sql, {}, allow_writes=writes)
    assert len(tables.query(alice.id, mine.id, "draft")) == 3


@pytest.mark.parametrize(
    ("sql", "params", "writes", "reason"),
    [
        ("SELECT nope FROM orders", {}, False, "nope"),
        ("SELECT * FROM orders WHERE customer = :p9", {}, False, "p9"),
        ("INSERT INTO orders (nope) VALUES (1)", {}, True, "nope"),
        ("UPDATE orders SET nope = 1", {}, True, "nope"),
    ],
)
def test_custom_sql_errors_show_only_the_users_own_sql(
    runtime: Runtime, tables: TableService, sql: str, params: dict, writes: bool, reason: str
) -> None:
    alice = runtime.identity.ensure_user("alice")
    mine = tables.create(alice.id, "orders", FIELDS)
    tables.insert(alice.id, mine.id, "draft", {"customer": "ada", "amount": 5})
    with pytest.raises(InvalidParameter) as caught:
        tables.execute(alice.id, mine.id, "draft", sql, params, allow_writes=writes)
    message = caught.value.msg
    assert message.startswith("the SQL failed: ") and reason in message
    assert sql in message  # the user's statement, as written
    for internal in (f"ut_{mine.id}", "sys_uid", "__uid", "__now", "[SQL", "sqlalche.me"):
        assert internal not in message, message
    assert len(tables.query(alice.id, mine.id, "draft")) == 1  # nothing written


@pytest.mark.parametrize("kind", [{}, [], 1, None])
def test_a_field_type_that_is_not_a_name_is_a_400_not_a_500(kind: object) -> None:
    """schemathesis found ``{"type": {}}`` answered 500 (an unhashable ``in`` test)."""
    with pytest.raises(InvalidParameter, match=r"fields\[0\]\.type must be one of"):
        parse_fields([{"name": "a", "type": kind}])


def test_insert_many_is_one_transaction(runtime: Runtime, tables: TableService) -> None:
    alice = runtime.identity.ensure_user("alice")
    orders = tables.create(alice.id, "orders", FIELDS)
    rows = [{"customer": f"c{i}", "amount": i} for i in range(50)]
    ids = tables.insert_many(alice.id, orders.id, "draft", rows)
    assert len(set(ids)) == 50
    with pytest.raises(InvalidParameter) as bad:
        tables.insert_many(alice.id, orders.id, "draft", [{"customer": "x"}, {"amount": 1}])
    assert "rows[1]" in bad.value.msg and "customer" in bad.value.msg
    for empty in ([], "rows", None):
        with pytest.raises(InvalidParameter):
            tables.insert_many(alice.id, orders.id, "draft", empty)  # type: ignore[arg-type]
    assert len(tables.query(alice.id, orders.id, "draft", limit=1000)) == 50
    # a date without a zone is read as UTC
    notes = tables.create(alice.id, "notes", [{"name": "at", "type": "date"}])
    tables.insert_many(alice.id, notes.id, "draft", [{"at": "2026-01-02T03:04:05"}])
    assert tables.query(alice.id, notes.id, "draft")[0]["at"].startswith("2026-01-02T03:04:05")
