"""Chat usage per message: the tokens (and cost) a bot's answer took, on its message.

One nullable JSON column on ``messages``.

Revision ID: 0021
Revises: 0016
Create Date: 2026-12-01 14:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("usage", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("messages", "usage")
