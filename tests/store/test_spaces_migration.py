"""Migration 0008 (team spaces): existing objects land in their owner's personal space,
every owner becomes the member of their workspace, and a downgrade loses no child row."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import JSON, MetaData, Table, insert, select

from coze_lab.core.ids import new_id
from coze_lab.store import Database
from coze_lab.store.migrate import upgrade
from coze_lab.store.models import Base

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _tables(connection: Any) -> dict[str, Table]:
    """The tables as they are (reflected), with the models' JSON types (MariaDB reflects a
    JSON column as LONGTEXT)."""
    metadata = MetaData()
    metadata.reflect(connection)
    for table in metadata.tables.values():
        model = Base.metadata.tables.get(table.name)
        for column in table.columns:
            known = model is not None and column.name in model.c
            if known and isinstance(model.c[column.name].type, JSON):
                column.type = JSON()
    return dict(metadata.tables)


def _seed(db: Database) -> dict[str, int]:
    """Two users with a workflow (and a version), a bot, a plugin and a table, as of 0007."""
    ids: dict[str, int] = {}
    with db.engine.begin() as c:
        t = _tables(c)
        for name in ("alice", "bob"):
            user, space = new_id(), new_id()
            ids[name], ids[f"{name}_space"] = user, space
            c.execute(insert(t["users"]), {"id": user, "name": name, "created_at": NOW})
            c.execute(
                insert(t["workspaces"]),
                {
                    "id": space,
                    "owner_id": user,
                    "name": "Personal",
                    "workspace_type": "personal",
                    "created_at": NOW,
                },
            )
            workflow = ids[f"{name}_workflow"] = new_id()
            c.execute(
                insert(t["workflows"]),
                {
                    "id": workflow,
                    "owner_id": user,
                    "name": "same name",
                    "description": "",
                    "draft": {},
                    "created_at": NOW,
                    "updated_at": NOW,
                },
            )
            c.execute(
                insert(t["workflow_versions"]),
                {
                    "id": new_id(),
                    "workflow_id": workflow,
                    "version": 1,
                    "definition": {},
                    "created_at": NOW,
                },
            )
            c.execute(
                insert(t["bots"]),
                {
                    "id": new_id(),
                    "owner_id": user,
                    "workspace_id": 1,  # a stale value: 0008 puts the bot in its owner's space
                    "name": "b",
                    "description": "",
                    "icon_url": "",
                    "draft": {},
                    "created_at": NOW,
                    "updated_at": NOW,
                },
            )
            c.execute(
                insert(t["plugins"]),
                {
                    "id": new_id(),
                    "owner_id": user,
                    "name": "p",
                    "description": "",
                    "manifest": {},
                    "openapi": {},
                    "server_url": "http://127.0.0.1/",
                    "created_at": NOW,
                    "updated_at": NOW,
                },
            )
            c.execute(
                insert(t["user_tables"]),
                {
                    "id": new_id(),
                    "owner_id": user,
                    "name": "notes",
                    "description": "",
                    "fields": [],
                    "created_at": NOW,
                    "updated_at": NOW,
                },
            )
    return ids


def test_0008_puts_every_object_in_its_owners_personal_space_and_downgrades(
    db_url: str,
) -> None:
    db = Database(db_url)
    try:
        assert upgrade(db.engine, "0007") == "0007"
        ids = _seed(db)
        assert upgrade(db.engine, "0008") == "0008"
        with db.engine.connect() as c:
            t = _tables(c)
            members = c.execute(select(t["space_members"])).all()
            assert {(m.space_id, m.user_id, m.role) for m in members} == {
                (ids["alice_space"], ids["alice"], "owner"),
                (ids["bob_space"], ids["bob"], "owner"),
            }
            for table in ("workflows", "plugins", "user_tables"):
                rows = c.execute(select(t[table].c.owner_id, t[table].c.space_id)).all()
                assert sorted(rows) == sorted(
                    [(ids["alice"], ids["alice_space"]), (ids["bob"], ids["bob_space"])]
                ), table
            bots = c.execute(select(t["bots"].c.owner_id, t["bots"].c.workspace_id)).all()
            assert {b.workspace_id for b in bots} == {ids["alice_space"], ids["bob_space"]}

        from alembic import command

        from coze_lab.store.migrate import alembic_config

        with db.engine.connect() as connection:
            command.downgrade(alembic_config(connection), "0007")
            connection.commit()
        with db.engine.connect() as c:
            t = _tables(c)
            assert "space_members" not in t and "space_id" not in t["workflows"].c
            # the tables lost a column in place: their children are all still there
            assert len(c.execute(select(t["workflow_versions"])).all()) == 2
            assert len(c.execute(select(t["workflows"])).all()) == 2
        assert upgrade(db.engine) >= "0008"  # the newest revision, 0008 or later
    finally:
        db.dispose()
