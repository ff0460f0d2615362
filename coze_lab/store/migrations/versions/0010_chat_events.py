"""Chat events, persisted: a client re-attaches to a running chat from any replica.

``chat_events`` keeps every event a chat streamed, numbered per chat from 1. One row holds
the events of one flush (``first_seq`` .. ``seq``): a streaming answer's deltas are written
together at most every half second, so the write rate does not grow with the token rate,
and a reader that asks for the events after any number gets exactly those. The one writer
of a chat's events is the replica running it; a chat failed by another replica (its server
stopped beating) gets its last events from that one, and numbers are never written twice.

Revision ID: 0010
Revises: 0008
Create Date: 2026-12-04 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from coze_lab.store.types import UTCDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chat_events",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("first_seq", sa.BigInteger(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["chat_id"], ["chats.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ux_chat_events_chat_seq", "chat_events", ["chat_id", "seq"], unique=True)
    # two writers of one chat (a replica taken for dead and the one that failed its chat)
    # both start at the next number: the second one's row is refused
    op.create_index(
        "ux_chat_events_chat_first", "chat_events", ["chat_id", "first_seq"], unique=True
    )


def downgrade() -> None:
    op.drop_index("ux_chat_events_chat_first", table_name="chat_events")
    op.drop_index("ux_chat_events_chat_seq", table_name="chat_events")
    op.drop_table("chat_events")
