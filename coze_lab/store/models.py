"""ORM models. Every table but ``users`` has an owner column; services filter on it.

The shared kinds (bots, workflows, plugins, user tables) also carry the space they belong
to (``space_id``; bots call it ``workspace_id`` as Coze does): who may read them is decided
by ``coze_lab.core.spaces`` from ``space_members``, not by the owner column, which names
the member who made the object."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.dialects import mysql
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

    __table_args__ = (
        Index("ix_workspaces_owner_type", "owner_id", "workspace_type"),
        Index("ix_workspaces_owner_id_id", "owner_id", "id"),
    )


class SpaceMember(Base):
    """A user's membership of a workspace with a role (owner, admin, member); a personal
    workspace has exactly one member, its owner."""

    __tablename__ = "space_members"

    space_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]

    __table_args__ = (Index("ix_space_members_user_space", "user_id", "space_id"),)


class PersonalAccessToken(Base):
    __tablename__ = "personal_access_tokens"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    hint: Mapped[str] = mapped_column(String(16))
    scopes: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    connector_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]

    __table_args__ = (Index("ix_personal_access_tokens_user_id_id", "user_id", "id"),)


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
    space_id: Mapped[int]
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(String(2000), default="")
    draft: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        Index("ux_workflows_space_name", "space_id", "name", unique=True),
        Index("ix_workflows_space_id_id", "space_id", "id"),
        Index("ix_workflows_owner_id_id", "owner_id", "id"),
    )


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
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    workflow_id: Mapped[int | None] = mapped_column(
        ForeignKey("workflows.id", ondelete="SET NULL"), nullable=True
    )
    version: Mapped[int | None]
    parent_run_id: Mapped[int | None] = mapped_column(
        ForeignKey("workflow_runs.id", ondelete="CASCADE"), nullable=True
    )
    parent_node_key: Mapped[str | None] = mapped_column(String(255), nullable=True)
    root_run_id: Mapped[int | None] = mapped_column(nullable=True, index=True)
    #: the run this one retries from a node (its upstream records were copied from it)
    retry_of: Mapped[int | None] = mapped_column(nullable=True)
    #: whose variables the run's variable and assign nodes use: {bot_id, connector_id,
    #: connector_uid} (None: a run without a bot)
    bot_context: Mapped[dict | None] = mapped_column(JSON, nullable=True)
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
        Index("ix_workflow_runs_status_id", "status", "id"),
        Index("ux_workflow_runs_child", "parent_run_id", "parent_node_key", unique=True),
        Index("ix_workflow_runs_owner_id_id", "owner_id", "id"),
        Index("ix_workflow_runs_workflow_owner_id", "workflow_id", "owner_id", "id"),
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
    root_run_id: Mapped[int]
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
        Index("ix_interrupts_owner_status_id", "owner_id", "status", "id"),
        Index("ix_interrupts_status_expires", "status", "expires_at"),
        Index("ix_interrupts_root_run_id_id", "root_run_id", "id"),
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


class BotRecord(Base):
    """A user's bot: the editable draft; published snapshots live in BotVersion."""

    __tablename__ = "bots"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    workspace_id: Mapped[int]
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(String(2000), default="")
    icon_url: Mapped[str] = mapped_column(String(1024), default="")
    draft: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        Index("ix_bots_owner_updated_id", "owner_id", "updated_at", "id"),
        Index("ix_bots_space_updated_id", "workspace_id", "updated_at", "id"),
    )


class BotVersion(Base):
    """An immutable published snapshot of a bot's configuration."""

    __tablename__ = "bot_versions"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"))
    version: Mapped[int]
    config: Mapped[dict] = mapped_column(JSON)
    connector_ids: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime]

    __table_args__ = (Index("ux_bot_versions_number", "bot_id", "version", unique=True),)


class BotConnector(Base):
    """Which published version of a bot a connector (API 1024, Web SDK 999) serves."""

    __tablename__ = "bot_connectors"

    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"), primary_key=True)
    connector_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    version: Mapped[int]
    published_at: Mapped[datetime]


class Conversation(Base):
    """A conversation of one user with one bot on one connector; ``section_id`` is its
    current context window."""

    __tablename__ = "conversations"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    bot_id: Mapped[int | None] = mapped_column(
        ForeignKey("bots.id", ondelete="CASCADE"), nullable=True
    )
    connector_id: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(String(255), default="")
    meta_data: Mapped[dict] = mapped_column(JSON)
    section_id: Mapped[int]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        Index("ix_conversations_owner_bot", "owner_id", "bot_id", "connector_id", "id"),
        Index("ix_conversations_owner_connector_id", "owner_id", "connector_id", "id"),
    )


class Chat(Base):
    """One agent run in a conversation (Coze's chat); ``state`` holds what a
    ``requires_action`` chat needs to continue."""

    __tablename__ = "chats"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    section_id: Mapped[int]
    #: empty for a chat-flow's chat (its workflow and run are in ``meta_data``)
    bot_id: Mapped[int | None] = mapped_column(
        ForeignKey("bots.id", ondelete="CASCADE"), nullable=True
    )
    bot_version: Mapped[int | None]
    connector_id: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(24))
    usage: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    last_error: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    required_action: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    state: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    meta_data: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]
    failed_at: Mapped[datetime | None]

    __table_args__ = (
        Index("ix_chats_owner_status", "owner_id", "status"),
        Index("ix_chats_status_updated", "status", "updated_at"),
    )


class ChatEventBatch(Base):
    """Events a chat streamed, ``first_seq`` .. ``seq`` (numbered per chat from 1), written
    together: a client re-attaches from any replica with ``Last-Event-ID``."""

    __tablename__ = "chat_events"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    first_seq: Mapped[int]
    seq: Mapped[int]
    events: Mapped[list] = mapped_column(JSON)
    created_at: Mapped[datetime]

    __table_args__ = (
        Index("ux_chat_events_chat_seq", "chat_id", "seq", unique=True),
        Index("ux_chat_events_chat_first", "chat_id", "first_seq", unique=True),
    )


class Message(Base):
    """A message of a conversation, in the section that was current when it was written."""

    __tablename__ = "messages"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    conversation_id: Mapped[int] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    section_id: Mapped[int]
    chat_id: Mapped[int | None] = mapped_column(nullable=True)
    bot_id: Mapped[int | None] = mapped_column(nullable=True)
    role: Mapped[str] = mapped_column(String(16))
    type: Mapped[str] = mapped_column(String(24))
    content: Mapped[str] = mapped_column(Text)
    content_type: Mapped[str] = mapped_column(String(24))
    meta_data: Mapped[dict] = mapped_column(JSON)
    reasoning_content: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: the user's like or unlike of a bot's answer (Coze's message feedback)
    feedback: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    #: the tokens (and cost) a bot's answer took: token_count, input_count, output_count
    usage: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        Index("ix_messages_conversation", "conversation_id", "id"),
        Index("ix_messages_section", "conversation_id", "section_id", "id"),
        Index("ix_messages_chat_id_id", "chat_id", "id"),
    )


class VariableValue(Base):
    """A bot variable's value for one end user (``connector_uid``) of a token owner's app
    on one connector (``/v1/variables``)."""

    __tablename__ = "variable_values"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"))
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    connector_id: Mapped[str] = mapped_column(String(32))
    connector_uid: Mapped[str] = mapped_column(String(255), server_default="")
    keyword: Mapped[str] = mapped_column(String(255))
    value: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime | None] = mapped_column(nullable=True)
    updated_at: Mapped[datetime]

    __table_args__ = (
        Index(
            "ux_variable_values_end_user",
            "bot_id",
            "owner_id",
            "connector_id",
            "connector_uid",
            "keyword",
            unique=True,
        ),
    )


class PluginRecord(Base):
    """A user's plugin: the draft (manifest, OpenAPI document); tools in PluginTool."""

    __tablename__ = "plugins"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    space_id: Mapped[int]
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(Text)
    manifest: Mapped[dict] = mapped_column(JSON)
    openapi: Mapped[dict] = mapped_column(JSON)
    server_url: Mapped[str] = mapped_column(String(2048))
    online_version: Mapped[int | None]
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        Index("ix_plugins_owner_id_id", "owner_id", "id"),
        Index("ix_plugins_space_id_id", "space_id", "id"),
    )


class PluginTool(Base):
    """A draft tool (one OpenAPI operation); its id stays the same across versions."""

    __tablename__ = "plugin_tools"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    plugin_id: Mapped[int] = mapped_column(ForeignKey("plugins.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    spec: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    #: set when the draft no longer has it (published versions may still use it)
    deleted_at: Mapped[datetime | None]

    __table_args__ = (
        Index("ux_plugin_tools_name", "plugin_id", "name", unique=True),
        Index("ix_plugin_tools_plugin_id_id", "plugin_id", "id"),
    )


class PluginVersion(Base):
    """An immutable published snapshot of a plugin: manifest, document and tools."""

    __tablename__ = "plugin_versions"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    plugin_id: Mapped[int] = mapped_column(ForeignKey("plugins.id", ondelete="CASCADE"))
    version: Mapped[int]
    manifest: Mapped[dict] = mapped_column(JSON)
    openapi: Mapped[dict] = mapped_column(JSON)
    server_url: Mapped[str] = mapped_column(String(2048))
    tools: Mapped[list] = mapped_column(JSON)
    created_at: Mapped[datetime]

    __table_args__ = (Index("ux_plugin_versions_number", "plugin_id", "version", unique=True),)


class PluginCredential(Base):
    """A user's secret for a plugin (service token, OAuth client secret or token), encrypted."""

    __tablename__ = "plugin_credentials"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    plugin_id: Mapped[int] = mapped_column(ForeignKey("plugins.id", ondelete="CASCADE"))
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(32))
    secret: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime | None]
    updated_at: Mapped[datetime]

    __table_args__ = (
        Index("ux_plugin_credentials_kind", "plugin_id", "owner_id", "kind", unique=True),
    )


class PluginOAuthState(Base):
    """A pending OAuth authorization: the state's hash and the encrypted PKCE verifier."""

    __tablename__ = "plugin_oauth_states"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    state_hash: Mapped[str] = mapped_column(String(64), unique=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    plugin_id: Mapped[int] = mapped_column(ForeignKey("plugins.id", ondelete="CASCADE"))
    secret: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]


class PluginCall(Base):
    """One tool call: a request summary without secrets, the status, latency and error."""

    __tablename__ = "plugin_calls"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    plugin_id: Mapped[int] = mapped_column(ForeignKey("plugins.id", ondelete="CASCADE"))
    tool_id: Mapped[int]
    tool_name: Mapped[str] = mapped_column(String(64))
    scene: Mapped[str] = mapped_column(String(16))
    version: Mapped[int | None]
    ok: Mapped[bool]
    status_code: Mapped[int | None]
    latency_ms: Mapped[float]
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    request: Mapped[dict] = mapped_column(JSON)
    trace: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime]

    __table_args__ = (
        Index("ix_plugin_calls_owner_plugin", "owner_id", "plugin_id", "id"),
        Index("ix_plugin_calls_plugin_owner_id", "plugin_id", "owner_id", "id"),
    )


class McpServer(Base):
    """An MCP server a space configured: a command (stdio) or a URL (streamable HTTP); the
    stdio server's environment is encrypted (it may hold keys)."""

    __tablename__ = "mcp_servers"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    space_id: Mapped[int]
    name: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(Text)
    transport: Mapped[str] = mapped_column(String(16))
    command: Mapped[str | None] = mapped_column(String(1024), nullable=True)
    args: Mapped[list] = mapped_column(JSON)
    url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    env_secret: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (Index("ux_mcp_servers_space_name", "space_id", "name", unique=True),)


class McpCredential(Base):
    """A user's HTTP headers for an MCP server (an API key, a bearer token), encrypted."""

    __tablename__ = "mcp_credentials"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    server_id: Mapped[int] = mapped_column(ForeignKey("mcp_servers.id", ondelete="CASCADE"))
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    secret: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime]

    __table_args__ = (Index("ux_mcp_credentials_owner", "server_id", "owner_id", unique=True),)


class UserTable(Base):
    """A table of a space (Coze's database memory): its fields; the rows live in two real
    tables, ``ut_<id>_draft`` and ``ut_<id>_online``, each row private to its user."""

    __tablename__ = "user_tables"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    space_id: Mapped[int]
    bot_id: Mapped[int | None] = mapped_column(
        ForeignKey("bots.id", ondelete="SET NULL"), nullable=True
    )
    name: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(String(2000), default="")
    fields: Mapped[list] = mapped_column(JSON)
    online_fields: Mapped[list | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    published_at: Mapped[datetime | None]

    __table_args__ = (
        Index("ux_user_tables_space_name", "space_id", "name", unique=True),
        Index("ix_user_tables_owner_id_id", "owner_id", "id"),
    )


class FileHistoryEntry(Base):
    """Who wrote which file of a session workspace, when, and from which message or node."""

    __tablename__ = "file_history"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    space_id: Mapped[int]
    #: the session: a conversation id
    session_id: Mapped[int]
    path: Mapped[str] = mapped_column(String(1024))
    #: upload (a chat's file copied to input/) | write (the write_file tool)
    action: Mapped[str] = mapped_column(String(16))
    size: Mapped[int]
    actor_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    chat_id: Mapped[int | None] = mapped_column(nullable=True)
    message_id: Mapped[int | None] = mapped_column(nullable=True)
    run_id: Mapped[int | None] = mapped_column(nullable=True)
    node_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    created_at: Mapped[datetime]

    __table_args__ = (Index("ix_file_history_session", "session_id", "created_at"),)


class MemoryDocument(Base):
    """One Markdown document of a user's long-term memory in a space: ``user.md`` or
    ``skills/<name>.md`` (the source of truth; files under the Jupyter root mirror it)."""

    __tablename__ = "memory_documents"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    space_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    #: user.md or skills/<name>.md
    path: Mapped[str] = mapped_column(String(128))
    content: Mapped[str] = mapped_column(Text)
    #: sha256 of content (what a file mirror compares against)
    content_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (
        Index("ux_memory_documents_path", "owner_id", "space_id", "path", unique=True),
    )


class MemoryJob(Base):
    """A user message queued for memory consolidation (detect, merge, apply), claimed by
    one worker at a time with a lease; one job per message."""

    __tablename__ = "memory_jobs"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    space_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    bot_id: Mapped[int | None] = mapped_column(nullable=True)
    chat_id: Mapped[int | None] = mapped_column(nullable=True)
    #: the user message the job reads (unique: a message is queued once)
    message_id: Mapped[int]
    text: Mapped[str] = mapped_column(Text)
    model_id: Mapped[str] = mapped_column(String(255))
    #: queued | running | done (a job that runs out of model attempts ends with the rules)
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(default=0)
    run_after: Mapped[datetime]
    lease_until: Mapped[datetime | None] = mapped_column(nullable=True)
    claimed_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)

    __table_args__ = (
        Index("ux_memory_jobs_message", "message_id", unique=True),
        Index("ix_memory_jobs_due", "status", "run_after"),
        Index("ix_memory_jobs_owner_space", "owner_id", "space_id"),
    )


class MemoryChange(Base):
    """One change a job applied to a user's memory, with the message it came from; the
    unique (message, seq) key means a change is never applied twice."""

    __tablename__ = "memory_changes"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    space_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    job_id: Mapped[int]
    message_id: Mapped[int]
    seq: Mapped[int]
    #: add | update | delete
    op: Mapped[str] = mapped_column(String(16))
    #: fact | skill
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(128), default="")
    text: Mapped[str] = mapped_column(Text)
    #: model | rules (the fallback when the model kept failing)
    source: Mapped[str] = mapped_column(String(16))
    applied_at: Mapped[datetime]

    __table_args__ = (
        Index("ux_memory_changes_message_seq", "message_id", "seq", unique=True),
        Index("ix_memory_changes_owner_space", "owner_id", "space_id", "applied_at"),
    )


class Dataset(Base):
    """A knowledge base (Coze's dataset) of a space: documents, chunked and embedded."""

    __tablename__ = "datasets"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    space_id: Mapped[int]
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(255))
    description: Mapped[str] = mapped_column(String(2000), default="")
    #: 0 text documents, 2 images (Coze's format_type)
    format_type: Mapped[int] = mapped_column(Integer, default=0)
    #: 1 enabled, 3 disabled
    status: Mapped[int] = mapped_column(Integer, default=1)
    chunk_strategy: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    icon_file_id: Mapped[int | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (Index("ix_datasets_space_id", "space_id", "id"),)


class DatasetDocument(Base):
    """A document of a knowledge base: processing, done or failed (with its reason)."""

    __tablename__ = "dataset_documents"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    space_id: Mapped[int]
    owner_id: Mapped[int]
    name: Mapped[str] = mapped_column(String(255))
    file_type: Mapped[str] = mapped_column(String(16))
    source_type: Mapped[int] = mapped_column(Integer, default=0)
    size: Mapped[int] = mapped_column(default=0)
    char_count: Mapped[int] = mapped_column(default=0)
    slice_count: Mapped[int] = mapped_column(Integer, default=0)
    hit_count: Mapped[int] = mapped_column(Integer, default=0)
    #: processing | done | failed
    status: Mapped[str] = mapped_column(String(16))
    progress: Mapped[int] = mapped_column(Integer, default=0)
    failure: Mapped[str | None] = mapped_column(Text, nullable=True)
    chunk_strategy: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    __table_args__ = (Index("ix_dataset_documents_dataset", "dataset_id", "id"),)


class DatasetChunk(Base):
    """A chunk of a document: its text and its embedding (float32, little-endian)."""

    __tablename__ = "dataset_chunks"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    document_id: Mapped[int] = mapped_column(ForeignKey("dataset_documents.id", ondelete="CASCADE"))
    dataset_id: Mapped[int]
    space_id: Mapped[int]
    seq: Mapped[int] = mapped_column(Integer)
    content: Mapped[str] = mapped_column(
        Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
    )
    embedding: Mapped[bytes | None] = mapped_column(
        LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb"), nullable=True
    )

    __table_args__ = (
        Index("ix_dataset_chunks_document", "document_id", "seq"),
        Index("ix_dataset_chunks_dataset", "dataset_id", "id"),
    )


class KnowledgeJob(Base):
    """A document waiting to be ingested: the source bytes and who holds it (a lease)."""

    __tablename__ = "knowledge_jobs"

    document_id: Mapped[int] = mapped_column(
        ForeignKey("dataset_documents.id", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    )
    payload: Mapped[bytes] = mapped_column(
        LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")
    )
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lease_until: Mapped[datetime | None]
    created_at: Mapped[datetime]


#: full-text search objects that only the knowledge migration declares (per dialect): the
#: FTS5 table (and its shadow tables) on SQLite, the ``tsv`` column on PostgreSQL, the
#: FULLTEXT index on MySQL/MariaDB
SEARCH_ONLY = ("dataset_chunks_fts", "tsv", "ix_dataset_chunks_tsv", "ft_dataset_chunks_content")


def in_models(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    """Alembic's ``include_object`` for comparing the models with the database: leaves out
    the search objects the models cannot express (:data:`SEARCH_ONLY`)."""
    return not (name or "").startswith(SEARCH_ONLY)
