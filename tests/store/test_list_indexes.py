"""Every list query is served by an index, on SQLite, PostgreSQL and MariaDB.

The queries are the services' own: each list method runs against a database holding
many users' history while the SQL it sends is captured; each captured statement is then
explained by the database. A plan that scans a whole table, or sorts, fails the test:
the list would grow with history. (PostgreSQL plans with ``enable_seqscan``,
``enable_sort`` and hash/merge joins off, so a small test table cannot make a scan or a sort look cheaper than
the index that should serve the query; without such an index the Seq Scan or Sort stays.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    Integer,
    String,
    Table,
    Text,
    event,
    insert,
    inspect,
    text,
)

from coze_lab.core.bots import BotService
from coze_lab.core.chat import ChatStore
from coze_lab.core.conversations import ConversationService
from coze_lab.core.ids import new_id
from coze_lab.core.memory import TableService
from coze_lab.core.net import OutboundPolicy
from coze_lab.core.plugins import PluginService
from coze_lab.core.secrets import SecretBox
from coze_lab.core.spaces import SpaceService
from coze_lab.core.tokens import TokenService
from coze_lab.core.workflows.run_store import RunStore
from coze_lab.core.workflows.service import WorkflowService
from coze_lab.store import Database
from coze_lab.store import models as m

USERS = 100
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _value(column: Any, index: int) -> Any:
    kind = column.type
    if isinstance(kind, JSON):
        return {}
    if isinstance(kind, Boolean):
        return False
    if isinstance(kind, Float):
        return 0.0
    if isinstance(kind, Integer):
        return index
    if isinstance(kind, String | Text):
        return f"v{index}"[: getattr(kind, "length", None) or 32]
    return NOW + timedelta(seconds=index)


def fill(connection: Any, table: Table, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Insert rows, giving every required column the caller left out a plain value."""
    full = []
    for i, row in enumerate(rows):
        values = dict(row)
        for column in table.columns:
            if column.name not in values and not column.nullable:
                values[column.name] = new_id() if column.primary_key else _value(column, i)
        full.append(values)
    connection.execute(insert(table), full)
    return full


@pytest.fixture
def history(db_url: str) -> Iterator[dict[str, Any]]:
    """Many users with a little history and one (the subject) with ten times more:
    every list the subject asks for has more rows than a page, but few of the table's."""
    db = Database(db_url)
    db.upgrade()
    tables = TableService(db)
    ids: dict[str, Any] = {}
    with db.write() as c:
        users = fill(c, m.User.__table__, [{"name": f"u{i}"} for i in range(USERS)])
        uids = [u["id"] for u in users]
        subject = uids[3]

        def n(owner: int, count: int) -> range:
            return range(count * 10 if owner == subject else count)

        personal = {
            w["owner_id"]: w["id"]
            for w in fill(
                c,
                m.Workspace.__table__,
                [{"owner_id": u, "workspace_type": "personal"} for u in uids],
            )
        }
        # a team space of u0 with the subject and a twentieth of the users as members
        (team,) = fill(c, m.Workspace.__table__, [{"owner_id": uids[0], "workspace_type": "team"}])
        team_members = {subject, *uids[::20]}
        fill(
            c,
            m.SpaceMember.__table__,
            [{"space_id": w, "user_id": u, "role": "owner"} for u, w in personal.items()]
            + [
                {
                    "space_id": team["id"],
                    "user_id": u,
                    "role": "owner" if u == uids[0] else "member",
                }
                for u in team_members
            ],
        )
        fill(c, m.PersonalAccessToken.__table__, [{"user_id": u} for u in uids for _ in n(u, 3)])
        workflows = fill(
            c,
            m.WorkflowRecord.__table__,
            [
                {"owner_id": u, "space_id": personal[u], "name": f"w{k}"}
                for u in uids
                for k in n(u, 2)
            ]
            + [
                {"owner_id": u, "space_id": team["id"], "name": f"team{u}-{k}"}
                for u in team_members
                for k in range(3)
            ],
        )
        runs = fill(
            c,
            m.WorkflowRun.__table__,
            [
                {"owner_id": w["owner_id"], "workflow_id": w["id"], "status": "succeeded"}
                for w in workflows
                for _ in range(5)
            ],
        )
        fill(
            c,
            m.Interrupt.__table__,
            [
                {
                    "run_id": r["id"],
                    "root_run_id": r["id"],
                    "owner_id": r["owner_id"],
                    "status": "resumed",
                }
                for r in runs[::2]
            ],
        )
        fill(c, m.RunEvent.__table__, [{"run_id": r["id"], "seq": s} for r in runs for s in (1, 2)])
        bots = fill(
            c,
            m.BotRecord.__table__,
            [{"owner_id": u, "workspace_id": personal[u]} for u in uids for _ in n(u, 3)]
            + [{"owner_id": u, "workspace_id": team["id"]} for u in team_members for _ in range(3)],
        )
        fill(
            c,
            m.BotConnector.__table__,
            [{"bot_id": b["id"], "connector_id": "1024"} for b in bots[::2]],
        )
        first_bot = next(b for b in bots if b["owner_id"] == subject)
        conversations = fill(
            c,
            m.Conversation.__table__,
            [
                {"owner_id": b["owner_id"], "bot_id": b["id"], "connector_id": k}
                for b in bots
                for k in ("1024", "999", "10000010")
                for _ in range(60 if b is first_bot and k == "1024" else 1)
            ],
        )
        chats = fill(
            c,
            m.Chat.__table__,
            [
                {
                    "owner_id": v["owner_id"],
                    "conversation_id": v["id"],
                    "bot_id": v["bot_id"],
                    "status": "completed",
                }
                for v in conversations
            ],
        )
        first_chat = next(h for h in chats if h["owner_id"] == subject)
        fill(
            c,
            m.Message.__table__,
            [
                {
                    "owner_id": h["owner_id"],
                    "conversation_id": h["conversation_id"],
                    "chat_id": h["id"],
                    "section_id": 1,
                    "type": kind,
                }
                for h in chats
                for _ in range(60 if h is first_chat else 1)
                for kind in ("question", "answer")
            ],
        )
        plugins = fill(
            c,
            m.PluginRecord.__table__,
            [{"owner_id": u, "space_id": personal[u]} for u in uids for _ in n(u, 1)]
            + [{"owner_id": u, "space_id": team["id"]} for u in team_members for _ in range(2)],
        )
        first_plugin = next(p for p in plugins if p["owner_id"] == subject)
        fill(
            c,
            m.PluginCall.__table__,
            [
                {"owner_id": p["owner_id"], "plugin_id": p["id"]}
                for p in plugins
                for _ in range(60 if p is first_plugin else 5)
            ],
        )
    user = subject
    table = tables.create(user, "notes", [{"name": "text", "type": "text"}])
    for k in range(30):
        tables.insert(user, table.id, "draft", {"text": f"n{k}"})
    tables.create(user, "team_notes", [{"name": "text", "type": "text"}], space_id=team["id"])
    ids.update(
        user=user,
        team=team["id"],
        workflow=next(w["id"] for w in workflows if w["owner_id"] == user),
        run=next(r["id"] for r in runs if r["owner_id"] == user),
        bot=next(b["id"] for b in bots if b["owner_id"] == user),
        conversation=next(v for v in conversations if v["id"] == first_chat["conversation_id"]),
        chat=first_chat["id"],
        plugin=first_plugin["id"],
        table=table.id,
    )
    _analyze(db)
    yield {"db": db, "ids": ids}
    db.dispose()


def _analyze(db: Database) -> None:
    with db.engine.connect() as connection:
        if db.dialect == "mysql":
            names = connection.execute(text("show tables")).scalars().all()
            for name in names:
                connection.execute(text(f"analyze table `{name}`")).all()
        else:
            connection.execute(text("analyze"))
        connection.commit()


@contextmanager
def captured(db: Database) -> Iterator[list[tuple[str, Any]]]:
    """The statements (and parameters) the block sends to the database."""
    statements: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE", "WITH")):
            statements.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(db.engine, "before_cursor_execute", record)


def plan(db: Database, statement: str, parameters: Any) -> list[str]:
    """The database's plan of one statement, as text lines."""
    raw = db.engine.raw_connection()
    try:
        cursor = raw.cursor()
        if db.dialect == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + statement, parameters)
            return [row[-1] for row in cursor.fetchall()]
        if db.dialect == "postgresql":
            # a scan or a sort is then chosen only when no index can serve the query
            cursor.execute("SET enable_seqscan = off")
            cursor.execute("SET enable_sort = off")
            cursor.execute("SET enable_hashjoin = off")
            cursor.execute("SET enable_mergejoin = off")
            cursor.execute("EXPLAIN " + statement, parameters)
            return [row[0] for row in cursor.fetchall()]
        cursor.execute("EXPLAIN " + statement, parameters)
        names = [d[0] for d in cursor.description]
        return [str(dict(zip(names, row, strict=True))) for row in cursor.fetchall()]
    finally:
        raw.rollback()
        raw.close()


def unindexed(db: Database, lines: list[str]) -> list[str]:
    """The plan lines that read a whole table or sort rows."""
    if db.dialect == "sqlite":
        # "SCAN t" reads the table; "SCAN t USING [COVERING] INDEX" walks a whole index
        return [line for line in lines if re.match(r"SCAN \w+", line) or "TEMP B-TREE" in line]
    if db.dialect == "postgresql":
        bad = [line for line in lines if "Seq Scan" in line or re.search(r"\bSort\b", line)]
        # an index scan without an Index Cond walks the whole index (a scan in disguise)
        for i, line in enumerate(lines):
            if re.search(r"Index (Only )?Scan", line):
                depth = len(line) - len(line.lstrip(" ->"))
                details = []
                for later in lines[i + 1 :]:
                    if "->" in later or len(later) - len(later.lstrip()) <= depth:
                        break
                    details.append(later)
                if not any("Index Cond" in d for d in details):
                    bad.append(line)
        return bad
    return [
        line
        for line in lines
        if "'type': 'ALL'" in line or "'type': 'index'" in line or "filesort" in line
    ]


def list_queries(db: Database, ids: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """Every list the services offer (and the periodic sweeps), as one call each."""
    user, conversation = ids["user"], ids["conversation"]
    bots = BotService(db)
    conversations = ConversationService(db)
    runs = RunStore(db)
    plugins = PluginService(
        db, secrets=SecretBox.from_config("k" * 32, None), policy=OutboundPolicy.from_strings([])
    )
    pivot = conversations.list_messages(user, conversation["connector_id"], conversation["id"])
    middle = pivot.items[len(pivot.items) // 2].id if pivot.items else 0
    return {
        "tokens": lambda: TokenService(db).list(user),
        "workspaces": lambda: SpaceService(db).list(user),
        "members of a space": lambda: SpaceService(db).members(user, ids["team"]),
        "a bot (the access rule)": lambda: bots.get(user, ids["bot"]),
        "bots of a team space": lambda: bots.list(user, ids["team"]),
        "workflows of a team space": lambda: WorkflowService(db).list(user, space_id=ids["team"]),
        "plugins of a team space": lambda: plugins.list(user, space_id=ids["team"]),
        "tables of a team space": lambda: TableService(db).list(user, space_id=ids["team"]),
        "workflows": lambda: WorkflowService(db).list(user),
        "runs": lambda: runs.list(user, limit=20),
        "runs of a workflow": lambda: runs.list(user, workflow_id=ids["workflow"], limit=20),
        "pending questions": lambda: runs.pending(user),
        "pending questions of a run": lambda: runs.pending(user, ids["run"]),
        "run events": lambda: runs.events(ids["run"], 0),
        "stale runs (sweep)": lambda: runs.stale_runs(),
        "expired questions (sweep)": lambda: runs.expire_due(),
        "bots": lambda: bots.list(user),
        "published bots": lambda: bots.list(
            user, publish_status="published_online", connector_id="1024"
        ),
        "unpublished bots": lambda: bots.list(user, publish_status="unpublished_draft"),
        "conversations": lambda: conversations.list(user, "1024", bot_id=None),
        "conversations of a bot": lambda: conversations.list(user, "1024", bot_id=ids["bot"]),
        "messages": lambda: conversations.list_messages(
            user, conversation["connector_id"], conversation["id"]
        ),
        "messages after": lambda: conversations.list_messages(
            user, conversation["connector_id"], conversation["id"], order="asc", after_id=middle
        ),
        "messages before": lambda: conversations.list_messages(
            user, conversation["connector_id"], conversation["id"], before_id=middle
        ),
        "chat messages": lambda: ChatStore(db, conversations).messages(ids["chat"]),
        "chat events (re-attach)": lambda: ChatStore(db, conversations).events(ids["chat"], 0),
        "lost chats (sweep)": lambda: ChatStore(db, conversations).fail_stale(
            NOW - timedelta(days=400)
        ),
        "plugins": lambda: plugins.list(user),
        "plugin calls": lambda: plugins.calls(user, ids["plugin"]),
        "tables": lambda: TableService(db).list(user),
        "table rows": lambda: TableService(db).query(user, ids["table"], "draft", limit=10),
    }


def test_every_list_query_is_served_by_an_index(history: dict[str, Any]) -> None:
    db, ids = history["db"], history["ids"]
    queries = list_queries(db, ids)
    failures: dict[str, list[str]] = {}
    for name, call in queries.items():
        with captured(db) as statements:
            call()
        assert statements, name
        for statement, parameters in statements:
            bad = unindexed(db, plan(db, statement, parameters))
            if bad:
                failures.setdefault(name, []).append(f"{statement.split()[0:12]} -> {bad}")
    assert not failures, "\n".join(f"{k}: {v}" for k, v in failures.items())


def test_the_check_catches_a_list_without_its_index(history: dict[str, Any]) -> None:
    """The test above can fail: without (owner_id, id) the runs list scans or sorts."""
    db, ids = history["db"], history["ids"]
    with db.engine.begin() as connection:
        if db.dialect == "mysql":  # MariaDB keeps an index for every foreign key
            for fk in inspect(connection).get_foreign_keys("workflow_runs"):
                if fk["constrained_columns"] in (["owner_id"], ["workflow_id"]):
                    connection.execute(
                        text(f"alter table workflow_runs drop foreign key {fk['name']}")
                    )
        for name in ("ix_workflow_runs_owner_id_id", "ix_workflow_runs_workflow_owner_id"):
            connection.execute(text(f"drop index {name}" + _on(db, "workflow_runs")))
    with captured(db) as statements:
        RunStore(db).list(ids["user"], limit=20)
    assert any(unindexed(db, plan(db, s, p)) for s, p in statements)


def _on(db: Database, table: str) -> str:
    return f" on {table}" if db.dialect == "mysql" else ""


def test_upgrade_indexes_the_rows_of_existing_user_tables(db_url: str) -> None:
    """0007 re-indexes the row tables that user tables made before it, and downgrades."""
    from sqlalchemy import BigInteger, Column, MetaData

    from coze_lab.store.migrate import upgrade

    db = Database(db_url)
    try:
        upgrade(db.engine, "0005")
        with db.write() as c:
            (owner,) = fill(c, m.User.__table__, [{"name": "old"}])
            as_of_0005 = Table("user_tables", MetaData(), autoload_with=c)
            as_of_0005.c.fields.type = JSON()  # MariaDB reflects JSON as LONGTEXT
            (table,) = fill(c, as_of_0005, [{"owner_id": owner["id"], "name": "t", "fields": []}])
        old = Table(
            f"ut_{table['id']}_draft",
            MetaData(),
            Column("id", BigInteger, primary_key=True, autoincrement=False),
            Column("sys_uid", String(64), nullable=False, index=True),
        )
        old.create(db.engine)
        assert upgrade(db.engine, "0007") == "0007"
        names = {i["name"] for i in inspect(db.engine).get_indexes(old.name)}
        assert f"ix_{old.name}_uid_id" in names and f"ix_{old.name}_sys_uid" not in names
        _downgrade(db, "0005")
        names = {i["name"] for i in inspect(db.engine).get_indexes(old.name)}
        assert f"ix_{old.name}_sys_uid" in names and f"ix_{old.name}_uid_id" not in names
    finally:
        db.dispose()


def _downgrade(db: Database, revision: str) -> None:
    from alembic import command

    from coze_lab.store.migrate import alembic_config

    with db.engine.connect() as connection:
        command.downgrade(alembic_config(connection), revision)
        connection.commit()
