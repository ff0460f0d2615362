"""Alembic environment: always called with a live connection from coze_lab.store.migrate."""

from __future__ import annotations

from alembic import context

from coze_lab.store.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `coze-lab db upgrade`")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
