"""ORM models. Every table but ``users`` has an owner column; services filter on it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from coze_lab.store.types import UTCDateTime


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime, int: BigInteger}


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    created_at: Mapped[datetime]


class Workspace(Base):
    __tablename__ = "workspaces"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    workspace_type: Mapped[str] = mapped_column(String(16), default="personal")
    created_at: Mapped[datetime]

    __table_args__ = (Index("ix_workspaces_owner_type", "owner_id", "workspace_type"),)


class PersonalAccessToken(Base):
    __tablename__ = "personal_access_tokens"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    hint: Mapped[str] = mapped_column(String(16))
    scopes: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    connector_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


class File(Base):
    __tablename__ = "files"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    file_name: Mapped[str] = mapped_column(String(255))
    bytes: Mapped[int]
    content_type: Mapped[str] = mapped_column(String(255))
    sha256: Mapped[str] = mapped_column(String(64))
    storage_key: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime]


class WorkflowRecord(Base):
    """A user's workflow: the editable draft; published versions live in WorkflowVersion."""

    __tablename__ = "workflows"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(String(2000), default="")
    draft: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (Index("ux_workflows_owner_name", "owner_id", "name", unique=True),)


class WorkflowVersion(Base):
    """An immutable published snapshot of a workflow's definition."""

    __tablename__ = "workflow_versions"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    workflow_id: Mapped[int] = mapped_column(ForeignKey("workflows.id", ondelete="CASCADE"))
    version: Mapped[int]
    definition: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime]

    __table_args__ = (Index("ux_workflow_versions_number", "workflow_id", "version", unique=True),)


class WorkflowRun(Base):
    """One execution (Coze's execute_id); it carries the definition it runs."""

    __tablename__ = "workflow_runs"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    workflow_id: Mapped[int | None] = mapped_column(
        ForeignKey("workflows.id", ondelete="SET NULL"), nullable=True, index=True
    )
    version: Mapped[int | None]
    parent_run_id: Mapped[int | None] = mapped_column(
        ForeignKey("workflow_runs.id", ondelete="CASCADE"), nullable=True
    )
    parent_node_key: Mapped[str | None] = mapped_column(String(255), nullable=True)
    root_run_id: Mapped[int | None] = mapped_column(nullable=True, index=True)
    definition: Mapped[dict] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))
    inputs: Mapped[dict] = mapped_column(JSON)
    outputs: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    error: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    usage: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    lease_owner: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lease_until: Mapped[datetime | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]

    __table_args__ = (
        Index("ix_workflow_runs_status_lease", "status", "lease_until"),
        Index("ux_workflow_runs_child", "parent_run_id", "parent_node_key", unique=True),
    )


class NodeRun(Base):
    """A node's durable record in a run: committed before its successors start."""

    __tablename__ = "node_runs"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    run_id: Mapped[int] = mapped_column(ForeignKey("workflow_runs.id", ondelete="CASCADE"))
    node_key: Mapped[str] = mapped_column(String(255))
    node_id: Mapped[str] = mapped_column(String(64))
    node_type: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16))
    inputs: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    outputs: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    port: Mapped[str | None] = mapped_column(String(64), nullable=True)
    error: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    attempts: Mapped[int] = mapped_column(default=0)
    usage: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]

    __table_args__ = (Index("ux_node_runs_run_key", "run_id", "node_key", unique=True),)


class Interrupt(Base):
    """A question waiting for a person; ``id`` is the event_id a resume names."""

    __tablename__ = "interrupts"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    run_id: Mapped[int] = mapped_column(ForeignKey("workflow_runs.id", ondelete="CASCADE"))
    root_run_id: Mapped[int] = mapped_column(index=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    node_key: Mapped[str] = mapped_column(String(255))
    node_id: Mapped[str] = mapped_column(String(64))
    type: Mapped[str] = mapped_column(String(16))
    data: Mapped[dict] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))
    resume_data: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    resolved_at: Mapped[datetime | None]

    __table_args__ = (
        Index("ix_interrupts_run", "run_id"),
        Index("ix_interrupts_owner_status", "owner_id", "status"),
    )


class RunEvent(Base):
    """Every event a run emitted, numbered: a reconnecting client replays from its last id."""

    __tablename__ = "run_events"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    run_id: Mapped[int] = mapped_column(ForeignKey("workflow_runs.id", ondelete="CASCADE"))
    seq: Mapped[int]
    event: Mapped[str] = mapped_column(String(32))
    data: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime]

    __table_args__ = (Index("ux_run_events_run_seq", "run_id", "seq", unique=True),)
