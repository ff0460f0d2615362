"""A workflow run's bot context: whose variables its variable and assign nodes use.

One nullable JSON column on ``workflow_runs``: ``{bot_id, connector_id, connector_uid}``
for a run a chat with that bot started, or one ``/v1/workflow/run`` started with
``bot_id``; NULL for a run without a bot.

Revision ID: 0018
Revises: 0014
Create Date: 2026-12-01 15:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("workflow_runs", sa.Column("bot_context", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.execute("alter table workflow_runs drop column bot_context")
