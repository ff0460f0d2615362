"""Variable values belong to an end user of a connector (Coze's ``connector_uid``).

``variable_values`` (0003) was keyed on (bot, token owner, connector, keyword); a caller's
app has many end users, so the key gains ``connector_uid``, and a value records when it
was first set (``created_at``, Coze's ``create_time``). The table was never written before
this revision, so the new column's default only matters to the migration itself.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 13:15:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from coze_lab.store.types import UTCDateTime

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # the new unique index is made before the old one goes: MariaDB keeps an index on
    # bot_id for its foreign key at every step
    with op.batch_alter_table("variable_values", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("connector_uid", sa.String(length=255), nullable=False, server_default="")
        )
        batch_op.add_column(sa.Column("created_at", UTCDateTime(), nullable=True))
        batch_op.create_index(
            "ux_variable_values_end_user",
            ["bot_id", "owner_id", "connector_id", "connector_uid", "keyword"],
            unique=True,
        )
        batch_op.drop_index("ux_variable_values_key")


def downgrade() -> None:
    with op.batch_alter_table("variable_values", schema=None) as batch_op:
        batch_op.create_index(
            "ux_variable_values_key", ["bot_id", "owner_id", "connector_id", "keyword"], unique=True
        )
        batch_op.drop_index("ux_variable_values_end_user")
        batch_op.drop_column("created_at")
        batch_op.drop_column("connector_uid")
