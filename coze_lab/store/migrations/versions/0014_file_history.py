"""File history: who wrote which file of a session workspace, when, from which message or
node (uploads copied to input/, and the bots' write_file tool).

Revision ID: 0014
Revises: 0012
Create Date: 2026-12-01 13:15:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from coze_lab.store.types import UTCDateTime

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "file_history",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("space_id", sa.BigInteger(), nullable=False),
        sa.Column("session_id", sa.BigInteger(), nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("actor_id", sa.BigInteger(), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=True),
        sa.Column("message_id", sa.BigInteger(), nullable=True),
        sa.Column("run_id", sa.BigInteger(), nullable=True),
        sa.Column("node_id", sa.String(length=128), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["actor_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_file_history_session", "file_history", ["session_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_file_history_session", table_name="file_history")
    op.drop_table("file_history")
