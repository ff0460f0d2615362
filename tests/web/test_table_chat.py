"""NL2SQL in chat: a bot with a table gets a tool per table; the SQL its model writes runs
through the database node's checks and per-user filter, over a real ``coze-lab serve``."""

from __future__ import annotations

import json

from cozepy import ChatStatus

from coze_lab.testing import ModelServer, ScriptedToolCall, TextReply, ToolCallsReply
from tests.web.test_chat_api import Lab, ask, lab, make_bot, publish

__all__ = ["lab"]  # fixtures imported for this module's tests

FIELDS = [
    {"name": "city", "type": "text", "description": "where it was sold"},
    {"name": "amount", "type": "number"},
]


def all_rows(lab: Lab, table_id: str, bob_row: dict | None = None) -> list[tuple[str, str]]:
    """Every row of the online table, whoever it belongs to (``bob_row``: add one of bob's
    first, as bob could not: he cannot see alice's table)."""
    from sqlalchemy import insert, select

    from coze_lab.config import CozeLab
    from coze_lab.core.memory.tables import sql_table
    from coze_lab.services import Runtime

    admin = Runtime(CozeLab(data_dir=str(lab.data_dir), database_url=lab.db_url))
    try:
        alice = admin.identity.ensure_user("alice")
        info = admin.tables.get(alice.id, int(table_id))
        table = sql_table(info.id, "online", info.fields)
        with admin.db.write() as connection:
            if bob_row is not None:
                connection.execute(insert(table).values(created_at=info.created_at, **bob_row))
            found = connection.execute(select(table.c.sys_uid, table.c.city)).all()
        return sorted((str(uid), str(city)) for uid, city in found)
    finally:
        admin.db.dispose()


def test_the_model_queries_a_table_and_injections_are_refused(
    lab: Lab, model_server: ModelServer
) -> None:
    made = lab.post("/coze_lab/api/tables", json={"name": "sales", "fields": FIELDS})
    table_id = made.json()["data"]["id"]
    assert lab.post(f"/coze_lab/api/tables/{table_id}/publish").status_code == 200
    rows = [{"city": "Oslo", "amount": 3}, {"city": "Lima", "amount": 5}]
    added = lab.post(
        f"/coze_lab/api/tables/{table_id}/rows/batch", json={"rows": rows, "scene": "online"}
    )
    assert added.status_code == 201, added.text
    bob_id = lab.get("/coze_lab/api/me", "bob").json()["data"]["id"]
    bob_row = {"id": 1, "sys_uid": bob_id, "city": "Bobville", "amount": 99}
    before = all_rows(lab, table_id, bob_row)
    assert len(before) == 3
    bot_id = make_bot(lab)
    changed = lab.post(
        "/v1/bot/update", json={"bot_id": bot_id, "tables": [{"table_id": table_id}]}
    )
    assert changed.json()["code"] == 0, changed.text
    publish(lab, bot_id)
    shown = lab.get(f"/v1/bots/{bot_id}", params={"is_published": "true"}).json()["data"]
    assert shown["tables"] == [{"table_id": table_id, "allow_writes": False}]

    calls = [
        ("ok", "SELECT city, amount FROM sales ORDER BY amount DESC"),
        ("drop", "SELECT * FROM sales; DROP TABLE sales"),
        ("others", f"SELECT city FROM sales WHERE sys_uid = '{bob_id}' OR 1 = 1 ORDER BY amount"),
        ("real", f"SELECT city FROM ut_{table_id}_online"),
        ("write", "DELETE FROM sales"),
    ]
    model_server.script(
        [
            ToolCallsReply([ScriptedToolCall("sales", {"sql": sql}, id=i) for i, sql in calls]),
            TextReply("Lima sold most."),
        ]
    )
    poll = lab.coze().chat.create_and_poll(
        bot_id=bot_id, user_id="u1", additional_messages=ask("Which city sold most?")
    )
    assert poll.chat.status == ChatStatus.COMPLETED, poll.chat.last_error
    offered = model_server.requests[0]["tools"][0]["function"]
    assert offered["name"] == "sales" and offered["parameters"]["required"] == ["sql"]
    assert "city TEXT -- where it was sold" in offered["description"]
    assert "amount INTEGER" in offered["description"]
    told = {
        m["tool_call_id"]: m["content"]
        for m in model_server.requests[1]["messages"]
        if m["role"] == "tool"
    }
    assert json.loads(told["ok"]) == {
        "rows": [{"city": "Lima", "amount": 5}, {"city": "Oslo", "amount": 3}],
        "count": 2,
    }
    assert told["drop"] == "error: give exactly one SQL statement"
    # the per-user filter comes first: bob's row is out of reach
    assert json.loads(told["others"]) == {"rows": [{"city": "Oslo"}, {"city": "Lima"}], "count": 2}
    assert told["real"] == "error: the SQL may use only the table 'sales'"
    assert told["write"].startswith("error: only SELECT is allowed here")
    assert poll.messages[-1].content == "Lima sold most."
    # nothing ran: the table and both users' rows are still there
    assert all_rows(lab, table_id) == before
