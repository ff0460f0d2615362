"""Retrying a run from a node: the new run names the run it retries (``retry_of``).

One nullable column on ``workflow_runs``; no foreign key (the old run may be deleted with
its workflow's history while the retry stays readable).

Revision ID: 0012
Revises: 0009
Create Date: 2026-12-01 13:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("workflow_runs", sa.Column("retry_of", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    # not batch mode on SQLite: recreating the table is not needed to drop a plain column
    op.execute("alter table workflow_runs drop column retry_of")
