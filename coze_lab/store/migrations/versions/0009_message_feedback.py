"""Message feedback: a user's like or unlike of a bot's answer, with reasons and a comment
(Coze's ``/v1/conversations/{id}/messages/{id}/feedback``).

One nullable JSON column on ``messages`` (a message belongs to one user's conversation, so
it has at most one feedback): ``{"feedback_type", "reason_types", "comment", "created_at"}``.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("feedback", sa.JSON(), nullable=True))


def downgrade() -> None:
    # not batch mode on SQLite: recreating the table is not needed to drop a plain column
    op.execute("alter table messages drop column feedback")
