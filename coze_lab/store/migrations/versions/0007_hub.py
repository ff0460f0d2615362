"""Lists that do not grow with history: every list query is served by an index.

Each list filters on its owner (or parent) and walks the primary key (or ``updated_at``)
in order, so the index is ``(owner, ..., id)``: a page of 20 reads 20 index entries
whatever the table's size. A single-column index that a composite one now leads with is
dropped (the composite serves its foreign key too; it is created first, as MariaDB wants
an index for every foreign key at all times).

Revision ID: 0007
Revises: 0005
Create Date: 2026-12-01 07:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0005"
branch_labels = None
depends_on = None

#: (table, new index, its columns, the index it replaces or None)
INDEXES: list[tuple[str, str, list[str], str | None]] = [
    (
        "personal_access_tokens",
        "ix_personal_access_tokens_user_id_id",
        ["user_id", "id"],
        "ix_personal_access_tokens_user_id",
    ),
    ("workspaces", "ix_workspaces_owner_id_id", ["owner_id", "id"], None),
    ("workflows", "ix_workflows_owner_id_id", ["owner_id", "id"], None),
    (
        "workflow_runs",
        "ix_workflow_runs_owner_id_id",
        ["owner_id", "id"],
        "ix_workflow_runs_owner_id",
    ),
    (
        "workflow_runs",
        "ix_workflow_runs_workflow_owner_id",
        ["workflow_id", "owner_id", "id"],
        "ix_workflow_runs_workflow_id",
    ),
    (
        "interrupts",
        "ix_interrupts_owner_status_id",
        ["owner_id", "status", "id"],
        "ix_interrupts_owner_status",
    ),
    ("bots", "ix_bots_owner_updated_id", ["owner_id", "updated_at", "id"], "ix_bots_owner_id"),
    (
        "conversations",
        "ix_conversations_owner_connector_id",
        ["owner_id", "connector_id", "id"],
        None,
    ),
    ("messages", "ix_messages_chat_id_id", ["chat_id", "id"], "ix_messages_chat_id"),
    (
        "workflow_runs",
        "ix_workflow_runs_status_id",
        ["status", "id"],
        "ix_workflow_runs_status_lease",
    ),
    (
        "interrupts",
        "ix_interrupts_root_run_id_id",
        ["root_run_id", "id"],
        "ix_interrupts_root_run_id",
    ),
    ("chats", "ix_chats_status_updated", ["status", "updated_at"], None),
    ("interrupts", "ix_interrupts_status_expires", ["status", "expires_at"], None),
    ("plugins", "ix_plugins_owner_id_id", ["owner_id", "id"], "ix_plugins_owner_id"),
    ("plugin_tools", "ix_plugin_tools_plugin_id_id", ["plugin_id", "id"], None),
    # leads with plugin_id: MariaDB drops its implicit foreign-key index on plugin_id,
    # which it otherwise intersected with the owner index and then sorted
    ("plugin_calls", "ix_plugin_calls_plugin_owner_id", ["plugin_id", "owner_id", "id"], None),
]

#: the columns of a replaced index that is not just the new one's first column
REPLACED_COLUMNS = {
    "ix_interrupts_owner_status": ["owner_id", "status"],
    "ix_workflow_runs_status_lease": ["status", "lease_until"],
}


def upgrade() -> None:
    for table, name, columns, replaces in INDEXES:
        op.create_index(name, table, columns)
        if replaces is not None:
            op.drop_index(replaces, table_name=table)
    for physical in _user_row_tables():
        op.create_index(f"ix_{physical}_uid_id", physical, ["sys_uid", "id"])
        op.drop_index(f"ix_{physical}_sys_uid", table_name=physical)


def downgrade() -> None:
    for physical in _user_row_tables():
        op.create_index(f"ix_{physical}_sys_uid", physical, ["sys_uid"])
        op.drop_index(f"ix_{physical}_uid_id", table_name=physical)
    for table, name, columns, replaces in reversed(INDEXES):
        if replaces is not None:
            op.create_index(replaces, table, REPLACED_COLUMNS.get(replaces, [columns[0]]))
        elif name == "ix_plugin_calls_plugin_owner_id" and op.get_bind().dialect.name == "mysql":
            op.create_index("plugin_id", table, ["plugin_id"])  # MariaDB's foreign-key index
        op.drop_index(name, table_name=table)


def _user_row_tables() -> list[str]:
    """The row tables of existing user tables (``ut_<id>_draft`` / ``ut_<id>_online``)."""
    bind = op.get_bind()
    existing = set(sa.inspect(bind).get_table_names())
    ids = bind.execute(sa.text("select id from user_tables")).scalars().all()
    return [
        name
        for table_id in ids
        for name in (f"ut_{table_id}_draft", f"ut_{table_id}_online")
        if name in existing
    ]
