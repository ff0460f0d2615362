"""``cl.Table``: DataFrames in and out through the studio API, and a bot that answers from
the table (the demo model calls the table tool when the question names it)."""

from __future__ import annotations

import pandas as pd
import pytest

import coze_lab as cl
from coze_lab.notebook.http import StudioError
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.testing import ModelServer


def test_a_dataframe_round_trip(agent_host: InProcessHost, model_env: ModelServer) -> None:
    frame = pd.DataFrame(
        {
            "city": ["Oslo", "Lima", "Pune", None],
            "amount": [3, 5, 8, 1],
            "price": [1.5, 2.0, float("nan"), 4.25],
            "paid": [True, False, True, True],
            "day": pd.to_datetime(["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"]),
        }
    )
    sales = cl.Table.from_dataframe("sales", frame, host=agent_host)
    described = sales.describe()
    assert list(described["name"]) == ["id", "created_at", "city", "amount", "price", "paid", "day"]
    assert list(described["type"])[2:] == ["text", "number", "float", "boolean", "date"]

    back = sales.query(order_by="amount")
    assert list(back["amount"]) == [1, 3, 5, 8]
    assert back["city"].isna().tolist() == [True, False, False, False]
    assert back["price"].isna().tolist() == [False, False, False, True]
    assert back.loc[back["city"] == "Lima", "day"].item().startswith("2026-01-02")
    totals = sales.query(
        "SELECT paid, SUM(amount) AS total FROM sales WHERE amount > :least GROUP BY paid"
        " ORDER BY total",
        params={"least": 1},
    )
    assert totals.to_dict("records") == [{"paid": False, "total": 5}, {"paid": True, "total": 11}]
    assert list(sales.query(where={"city": "Oslo"})["amount"]) == [3]

    assert sales.update({"city": "Oslo"}, {"amount": 30}) == 1
    assert sales.delete([{"field": "amount", "op": "<", "value": 5}]) == 1
    assert sorted(sales.query()["amount"]) == [5, 8, 30]
    # a bad row adds none (one transaction); the error names the row
    with pytest.raises(StudioError) as bad:
        sales.insert([{"city": "Rome", "amount": 2}, {"city": "Bern", "amount": "many"}])
    assert "rows[1]" in bad.value.msg
    assert len(sales.query()) == 3
    # SQL through cl.Table is read-only and checked like everywhere else
    with pytest.raises(StudioError) as refused:
        sales.query("DELETE FROM sales")
    assert "only SELECT" in refused.value.msg
    # the same name is the same table
    assert cl.Table("sales", host=agent_host).id == sales.id

    bot = cl.Bot("seller", prompt="Answer from the sales table.", tables=[sales], host=agent_host)
    reply = bot.chat("SELECT city FROM sales WHERE amount > 10")
    assert reply.text == '[demo model] The tool returned: {"rows": [{"city": "Oslo"}], "count": 1}'
    assert model_env.requests[0]["tools"][0]["function"]["name"] == "sales"


def test_without_pandas_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_pandas(name: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name == "pandas":
            raise ImportError("No module named 'pandas'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    table = cl.Table("sales", studio=object())  # type: ignore[arg-type]  # never reached
    for call in (table.describe, table.query):
        with pytest.raises(ImportError, match=r"pip install 'coze-lab\[pandas\]'"):
            call()
