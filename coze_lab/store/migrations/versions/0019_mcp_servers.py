"""MCP servers a space configured (stdio commands, streamable-HTTP URLs) and each user's
encrypted headers for them.

Revision ID: 0019
Revises: 0021
Create Date: 2026-12-01 14:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from coze_lab.store.types import UTCDateTime

revision = "0019"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mcp_servers",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("owner_id", sa.BigInteger(), nullable=False),
        sa.Column("space_id", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("transport", sa.String(length=16), nullable=False),
        sa.Column("command", sa.String(length=1024), nullable=True),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=True),
        sa.Column("env_secret", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ux_mcp_servers_space_name", "mcp_servers", ["space_id", "name"], unique=True)
    op.create_table(
        "mcp_credentials",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("server_id", sa.BigInteger(), nullable=False),
        sa.Column("owner_id", sa.BigInteger(), nullable=False),
        sa.Column("secret", sa.Text(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["server_id"], ["mcp_servers.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["owner_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ux_mcp_credentials_owner", "mcp_credentials", ["server_id", "owner_id"], unique=True
    )


def downgrade() -> None:
    # dropping a table drops its indexes; MySQL/MariaDB refuse to drop first an index that
    # backs a foreign key
    op.drop_table("mcp_credentials")
    op.drop_table("mcp_servers")
