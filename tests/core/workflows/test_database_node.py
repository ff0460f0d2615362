from __future__ import annotations

import pytest

import coze_lab as cl
from coze_lab.core.errors import NotFound
from coze_lab.core.workflows import WorkflowDefinitionError
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.testing import ModelServer


def test_a_workflow_writes_and_reads_a_user_table(host: InProcessHost) -> None:
    tables = host.runtime.tables
    orders = tables.create(
        host.user.id, "orders", [{"name": "customer"}, {"name": "amount", "type": "number"}]
    )
    wf = cl.Workflow("orders_flow")
    wf.inputs(customer=str, amount=int)
    wf.database(
        "add",
        table="orders",
        operation="insert",
        values={"customer": "{{start.customer}}", "amount": "{{start.amount}}"},
    )
    wf.database(
        "total",
        table="orders",
        operation="sql",
        sql="SELECT SUM(amount) AS total FROM orders WHERE customer = '{{start.customer}}'",
    )
    wf.database(
        "recent",
        table="orders",
        operation="query",
        where=[{"field": "customer", "op": "==", "value": "{{start.customer}}"}],
        order_by=[{"field": "amount", "desc": True}],
        limit=1,
    )
    wf.end(total="{{total.rows}}", top="{{recent.rows}}", added="{{add.id}}")
    first = host.run(wf.validate(), {"customer": "ada", "amount": 5})
    assert first.status == "succeeded", first.error
    second = host.run(wf.validate(), {"customer": "ada'; DROP TABLE orders; --", "amount": 7})
    assert second.status == "succeeded", second.error
    assert second.outputs["total"] == [{"total": 7}]  # the hostile name is just a value
    third = host.run(wf.validate(), {"customer": "ada", "amount": 9})
    assert third.outputs["total"] == [{"total": 14}]
    assert third.outputs["top"][0]["amount"] == 9
    assert len(tables.query(host.user.id, orders.id, "draft")) == 3
    assert third.nodes["add"].outputs["count"] == 1


def test_database_node_definition_errors_name_the_node() -> None:
    wf = cl.Workflow("bad_db")
    wf.inputs(x=str)
    with pytest.raises(WorkflowDefinitionError) as caught:
        wf.database("gone", table="t", operation="delete")  # deleting needs conditions
    assert "gone" in str(caught.value) and "where" in str(caught.value)
    with pytest.raises(WorkflowDefinitionError):
        wf.database("q", table="t", operation="merge")
    with pytest.raises(WorkflowDefinitionError):
        wf.database("s", table="t", operation="sql", sql="SELECT {{nowhere.x}} FROM t")
        wf.end(n="{{s.count}}")
        wf.validate()


def test_a_failing_custom_sql_node_shows_only_the_users_sql(host: InProcessHost) -> None:
    orders = host.runtime.tables.create(host.user.id, "orders", [{"name": "customer"}])
    wf = cl.Workflow("bad_sql")
    wf.inputs(customer=str)
    sql = "SELECT nope FROM orders WHERE customer = '{{start.customer}}'"
    wf.database("total", table="orders", operation="sql", sql=sql)
    wf.end(rows="{{total.rows}}")
    run = host.run(wf.validate(), {"customer": "ada"})
    assert run.status == "failed"
    message = run.error["msg"]
    assert "the SQL failed: " in message and "nope" in message  # each database words it
    assert "SELECT nope FROM orders WHERE customer = :p0" in message
    assert f"ut_{orders.id}" not in message and "sys_uid" not in message
    assert "[SQL" not in message


def test_natural_language_mode_writes_checked_sql(
    host: InProcessHost, model_env: ModelServer
) -> None:
    tables = host.runtime.tables
    other = host.runtime.identity.ensure_user("other")
    orders = tables.create(
        host.user.id, "orders", [{"name": "customer"}, {"name": "amount", "type": "number"}]
    )
    for customer, amount in (("ada", 5), ("ada", 9), ("bo", 7)):
        tables.insert(host.user.id, orders.id, "draft", {"customer": customer, "amount": amount})
    wf = cl.Workflow("ask_orders")
    wf.inputs(question=str)
    wf.database("ask", table="orders", operation="nl", query="{{start.question}}")
    wf.end(rows="{{ask.rows}}", sql="{{ask.sql}}")
    spec = wf.validate()
    model_env.script(
        [
            "```sql\nSELECT customer, SUM(amount) AS total FROM orders GROUP BY customer"
            " ORDER BY customer;\n```",
            "DELETE FROM orders",  # writes are off: refused, nothing runs
            f"SELECT * FROM ut_{orders.id}_draft",  # the real table: refused
        ]
    )
    run = host.run(spec, {"question": "Total per customer?"})
    assert run.status == "succeeded", run.error
    assert run.outputs["rows"] == [
        {"customer": "ada", "total": 14},
        {"customer": "bo", "total": 7},
    ]
    assert run.outputs["sql"].startswith("SELECT customer, SUM(amount)")
    assert run.nodes["ask"].usage["output_tokens"] > 0
    asked = model_env.requests[0]["messages"]
    assert "orders" in asked[0]["content"] and "amount INTEGER" in asked[0]["content"]
    assert asked[1]["content"] == "Total per customer?"
    refused = host.run(spec, {"question": "Forget every order"})
    assert refused.status == "failed"
    assert "only SELECT is allowed" in refused.error["msg"]
    assert "DELETE FROM orders" in refused.error["msg"]
    sneaky = host.run(spec, {"question": "Everyone's orders"})
    assert sneaky.status == "failed"
    assert "may use only the table 'orders'" in sneaky.error["msg"]
    assert len(tables.query(host.user.id, orders.id, "draft")) == 3
    # several tables: the model picks one; the statement's checks still allow only it
    stock = tables.create(
        host.user.id, "stock", [{"name": "item"}, {"name": "n", "type": "number"}]
    )
    tables.insert(host.user.id, stock.id, "draft", {"item": "tea", "n": 4})
    both = cl.Workflow("ask_shop")
    both.inputs(question=str)
    both.database("ask", tables=["orders", "stock"], operation="nl", query="{{start.question}}")
    both.end(rows="{{ask.rows}}", table="{{ask.table}}")
    model_env.script(
        [
            "SELECT item, n FROM stock",
            "SELECT * FROM stock JOIN orders ON 1 = 1",
            "SELECT 1 AS one",
        ]
    )
    picked = host.run(both.validate(), {"question": "What is in stock?"})
    assert picked.outputs == {"rows": [{"item": "tea", "n": 4}], "table": "stock"}, picked.error
    schema = model_env.requests[-1]["messages"][0]["content"]
    assert "orders" in schema and "stock" in schema
    joined = host.run(both.validate(), {"question": "Join them"})
    assert "may use only the table 'stock'" in joined.error["msg"]
    nowhere = host.run(both.validate(), {"question": "One"})
    assert "names none of the tables ['orders', 'stock']" in nowhere.error["msg"]
    with pytest.raises(NotFound):  # another user never sees the table
        tables.query(other.id, orders.id, "draft")
