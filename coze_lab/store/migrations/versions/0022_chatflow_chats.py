"""Chat-flow chats are stored like bot chats: ``chats.bot_id`` may be empty (a chat-flow's
chat has no bot; its workflow and run are in ``meta_data``).

Revision ID: 0022
Revises: 0019
Create Date: 2026-12-01 15:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("chats", schema=None) as batch_op:
        batch_op.alter_column("bot_id", existing_type=sa.BigInteger(), nullable=True)


def downgrade() -> None:
    op.execute("delete from chats where bot_id is null")
    with op.batch_alter_table("chats", schema=None) as batch_op:
        batch_op.alter_column("bot_id", existing_type=sa.BigInteger(), nullable=False)
