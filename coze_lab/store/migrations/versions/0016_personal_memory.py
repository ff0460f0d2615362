"""Long-term personal memory: Markdown documents per user and space, the queue of messages
to consolidate (claimed with a lease), and the changes applied (each with its message,
unique so a change is never applied twice).

Revision ID: 0016
Revises: 0018
Create Date: 2026-12-01 14:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from coze_lab.store.types import UTCDateTime

revision = "0016"
down_revision = "0018"
branch_labels = None
depends_on = None


def _owner_and_space() -> list[sa.SchemaItem]:
    return [
        sa.Column("owner_id", sa.BigInteger(), nullable=False),
        sa.Column("space_id", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["space_id"], ["workspaces.id"], ondelete="CASCADE"),
    ]


def upgrade() -> None:
    op.create_table(
        "memory_documents",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        *_owner_and_space(),
        sa.Column("path", sa.String(length=128), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ux_memory_documents_path",
        "memory_documents",
        ["owner_id", "space_id", "path"],
        unique=True,
    )
    op.create_table(
        "memory_jobs",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        *_owner_and_space(),
        sa.Column("bot_id", sa.BigInteger(), nullable=True),
        sa.Column("chat_id", sa.BigInteger(), nullable=True),
        sa.Column("message_id", sa.BigInteger(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("model_id", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.BigInteger(), nullable=False),
        sa.Column("run_after", UTCDateTime(), nullable=False),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.Column("claimed_by", sa.String(length=64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ux_memory_jobs_message", "memory_jobs", ["message_id"], unique=True)
    op.create_index("ix_memory_jobs_due", "memory_jobs", ["status", "run_after"])
    op.create_index("ix_memory_jobs_owner_space", "memory_jobs", ["owner_id", "space_id"])
    op.create_table(
        "memory_changes",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        *_owner_and_space(),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("message_id", sa.BigInteger(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("op", sa.String(length=16), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("applied_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ux_memory_changes_message_seq", "memory_changes", ["message_id", "seq"], unique=True
    )
    op.create_index(
        "ix_memory_changes_owner_space",
        "memory_changes",
        ["owner_id", "space_id", "applied_at"],
    )


def downgrade() -> None:
    op.drop_table("memory_changes")
    op.drop_table("memory_jobs")
    op.drop_table("memory_documents")
