"""Run Alembic migrations programmatically (server start and ``coze-lab db upgrade``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect, text

MIGRATIONS = Path(__file__).with_name("migrations")
_PG_LOCK_KEY = 0x636F7A656C6162  # "cozelab": one upgrade at a time across replicas


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    return heads[0]


@contextmanager
def _upgrade_lock(connection: Connection) -> Iterator[None]:
    if connection.dialect.name != "postgresql":
        yield
        return
    connection.execute(text("select pg_advisory_lock(:k)"), {"k": _PG_LOCK_KEY})
    connection.commit()
    try:
        yield
    finally:
        connection.execute(text("select pg_advisory_unlock(:k)"), {"k": _PG_LOCK_KEY})
        connection.commit()


def upgrade(engine: Engine, revision: str = "head") -> str:
    """Upgrade to ``revision`` and return the resulting revision id."""
    with engine.connect() as connection, _upgrade_lock(connection):
        command.upgrade(alembic_config(connection), revision)
        connection.commit()
    return current_revision(engine) or ""


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def stored_revision(engine: Engine) -> str | None:
    """The revision recorded in ``alembic_version`` (cheap; for health checks)."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(text("select version_num from alembic_version")).scalar()
