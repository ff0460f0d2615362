"""0013 keys variable values on the end user (``connector_uid``) and goes back down."""

from __future__ import annotations

from sqlalchemy import inspect

from coze_lab.store import Database
from coze_lab.store.migrate import head_revision, upgrade
from tests.store.test_list_indexes import _downgrade


def test_0013_adds_the_end_user_and_downgrades(db_url: str) -> None:
    db = Database(db_url)
    try:
        upgrade(db.engine)
        columns = {c["name"] for c in inspect(db.engine).get_columns("variable_values")}
        assert {"connector_uid", "created_at"} <= columns
        indexes = {i["name"]: i for i in inspect(db.engine).get_indexes("variable_values")}
        assert indexes["ux_variable_values_end_user"]["column_names"] == [
            "bot_id",
            "owner_id",
            "connector_id",
            "connector_uid",
            "keyword",
        ]
        _downgrade(db, "0012")
        columns = {c["name"] for c in inspect(db.engine).get_columns("variable_values")}
        assert "connector_uid" not in columns and "created_at" not in columns
        names = {i["name"] for i in inspect(db.engine).get_indexes("variable_values")}
        assert "ux_variable_values_key" in names and "ux_variable_values_end_user" not in names
        assert upgrade(db.engine) == head_revision()
    finally:
        db.dispose()
