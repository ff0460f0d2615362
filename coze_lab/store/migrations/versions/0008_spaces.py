"""Team spaces: members with roles, and the space of every shared object.

``space_members`` holds who belongs to which workspace and as what (owner, admin,
member); every existing workspace is personal, so its owner becomes its only member.
Workflows, plugins and user tables get ``space_id`` (bots have ``workspace_id`` already),
back-filled with the owner's personal workspace; names are unique per space instead of
per owner, and each list is served by a ``(space, ...)`` index.

The new columns are added ``NOT NULL DEFAULT 0`` (SQLite adds a NOT NULL column only with a
default, and recreating these tables in batch mode would cascade-delete their children),
then filled; the default is dropped where the database can (PostgreSQL, MariaDB). A row
with space 0 would belong to no space and be visible to nobody.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from coze_lab.store.types import UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

#: the tables that get a space column
SPACED = ("workflows", "plugins", "user_tables")
#: the owner's personal workspace, for an UPDATE of ``table`` (correlated on owner_id)
PERSONAL = (
    "(select w.id from workspaces w where w.owner_id = {table}.owner_id "
    "and w.workspace_type = 'personal')"
)


def upgrade() -> None:
    op.create_table(
        "space_members",
        sa.Column("space_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["space_id"], ["workspaces.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("space_id", "user_id"),
    )
    op.create_index("ix_space_members_user_space", "space_members", ["user_id", "space_id"])
    op.execute(
        "insert into space_members (space_id, user_id, role, created_at) "
        "select id, owner_id, 'owner', created_at from workspaces"
    )
    dialect = op.get_bind().dialect.name
    for table in SPACED:
        op.add_column(
            table,
            sa.Column("space_id", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
        )
        op.execute(f"update {table} set space_id = {PERSONAL.format(table=table)}")
        if dialect != "sqlite":
            op.alter_column(
                table,
                "space_id",
                server_default=None,
                existing_type=sa.BigInteger(),
                existing_nullable=False,
            )
    # every bot so far was made in its owner's personal workspace
    op.execute(f"update bots set workspace_id = {PERSONAL.format(table='bots')}")

    op.create_index("ix_workflows_space_id_id", "workflows", ["space_id", "id"])
    op.create_index("ux_workflows_space_name", "workflows", ["space_id", "name"], unique=True)
    op.drop_index("ux_workflows_owner_name", table_name="workflows")
    op.create_index("ix_plugins_space_id_id", "plugins", ["space_id", "id"])
    op.create_index("ix_bots_space_updated_id", "bots", ["workspace_id", "updated_at", "id"])
    # created before the unique index goes: MariaDB wants an index for owner_id's foreign key
    op.create_index("ix_user_tables_owner_id_id", "user_tables", ["owner_id", "id"])
    op.create_index("ux_user_tables_space_name", "user_tables", ["space_id", "name"], unique=True)
    op.drop_index("ux_user_tables_owner_name", table_name="user_tables")


def downgrade() -> None:
    """Back to one owner per object: fails (unique names) if a user holds the same name in
    two spaces; objects of team spaces go back to the member who made them."""
    op.create_index("ux_user_tables_owner_name", "user_tables", ["owner_id", "name"], unique=True)
    op.drop_index("ux_user_tables_space_name", table_name="user_tables")
    op.drop_index("ix_user_tables_owner_id_id", table_name="user_tables")
    op.drop_index("ix_bots_space_updated_id", table_name="bots")
    op.drop_index("ix_plugins_space_id_id", table_name="plugins")
    op.create_index("ux_workflows_owner_name", "workflows", ["owner_id", "name"], unique=True)
    op.drop_index("ux_workflows_space_name", table_name="workflows")
    op.drop_index("ix_workflows_space_id_id", table_name="workflows")
    op.execute(f"update bots set workspace_id = {PERSONAL.format(table='bots')}")
    for table in SPACED:
        # not batch mode on SQLite: recreating the table would cascade-delete its children
        op.execute(f"alter table {table} drop column space_id")
    op.execute("delete from workspaces where workspace_type <> 'personal'")
    op.drop_table("space_members")
