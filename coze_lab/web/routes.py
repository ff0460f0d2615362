"""The route table: every endpoint's path, handler, area, token scope and operation
description, in one place. The Jupyter extension and ``coze-lab serve`` mount it, and
``openapi.json`` is generated from it (``coze_lab.web.api_document``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tornado import web

from coze_lab.web import schemas as s
from coze_lab.web.api_document import document
from coze_lab.web.base import CozeHandler, NotFoundHandler, own_methods
from coze_lab.web.handlers.admin import UsageHandler
from coze_lab.web.handlers.bots import (
    AppsHandler,
    BotCreateHandler,
    BotItemHandler,
    BotOnlineInfoHandler,
    BotPublishHandler,
    BotsHandler,
    BotUnpublishHandler,
    BotUpdateHandler,
    ConnectorBotHandler,
    PublishedBotsListHandler,
    StudioBotChatHandler,
    StudioBotConversationsHandler,
    StudioBotHandler,
    StudioBotPublishHandler,
    StudioBotsHandler,
    StudioChatCancelHandler,
    StudioChatEventsHandler,
    StudioChatToolOutputsHandler,
    StudioConversationClearHandler,
    StudioConversationMessagesHandler,
    TemplateDuplicateHandler,
)
from coze_lab.web.handlers.chat import (
    ChatCancelHandler,
    ChatEventsHandler,
    ChatHandler,
    ChatMessagesHandler,
    ChatRetrieveHandler,
    ChatSubmitToolOutputsHandler,
    WorkflowChatHandler,
)
from coze_lab.web.handlers.conversations import (
    ConversationClearHandler,
    ConversationCreateHandler,
    ConversationHandler,
    ConversationRetrieveHandler,
    ConversationsHandler,
    MessageCreateHandler,
    MessageDeleteHandler,
    MessageFeedbackHandler,
    MessageListHandler,
    MessageModifyHandler,
    MessageRetrieveHandler,
)
from coze_lab.web.handlers.files import FileRetrieveHandler, FileUploadHandler
from coze_lab.web.handlers.knowledge import (
    DatasetHandler,
    DatasetProcessHandler,
    DatasetsHandler,
    DocumentCreateHandler,
    DocumentDeleteHandler,
    DocumentListHandler,
    DocumentUpdateHandler,
    KnowledgeSearchHandler,
    StudioDatasetsHandler,
    StudioDocumentsHandler,
)
from coze_lab.web.handlers.mcp import (
    McpCredentialsHandler,
    McpEndpointHandler,
    McpServerHandler,
    McpServersHandler,
    McpToolsHandler,
)
from coze_lab.web.handlers.memory import MemoryHandler, MemorySkillHandler, MemoryUserHandler
from coze_lab.web.handlers.meta import LivenessHandler, ServiceRootHandler
from coze_lab.web.handlers.plugins import (
    OAuthCallbackHandler,
    PluginAuthorizeHandler,
    PluginCallsHandler,
    PluginCredentialsHandler,
    PluginItemHandler,
    PluginPublishHandler,
    PluginsHandler,
    PluginToolDebugHandler,
)
from coze_lab.web.handlers.sdk import SdkAssetHandler
from coze_lab.web.handlers.studio import (
    ConversationActivityHandler,
    FileHistoryHandler,
    HealthHandler,
    MeHandler,
    RunActivityHandler,
    TokenHandler,
    TokensHandler,
)
from coze_lab.web.handlers.studio_workflows import (
    InterruptResumeHandler,
    InterruptsHandler,
    RunCancelHandler,
    RunEventsHandler,
    RunHandler,
    RunRetryHandler,
    RunsHandler,
    WorkflowDraftRunHandler,
    WorkflowItemHandler,
    WorkflowPublishHandler,
    WorkflowsHandler,
)
from coze_lab.web.handlers.tables import (
    TableFieldsHandler,
    TableHandler,
    TablePublishHandler,
    TableQueryHandler,
    TableRowsBatchHandler,
    TableRowsDeleteHandler,
    TableRowsHandler,
    TableRowsUpdateHandler,
    TablesHandler,
)
from coze_lab.web.handlers.users import UserMeHandler
from coze_lab.web.handlers.variables import StudioBotVariablesHandler, VariablesHandler
from coze_lab.web.handlers.workflows import (
    ExecuteNodeHandler,
    RunHistoryHandler,
    RunHistoryQueryHandler,
    WorkflowRetrieveHandler,
    WorkflowRunHandler,
    WorkflowsListHandler,
    WorkflowStreamResumeHandler,
    WorkflowStreamRunHandler,
    WorkflowVersionsHandler,
)
from coze_lab.web.handlers.workspaces import (
    SpaceHandler,
    SpaceMemberHandler,
    SpaceMembersHandler,
    SpacesHandler,
    WorkspaceMembersHandler,
    WorkspacesHandler,
)

#: the areas of the API: Coze-compatible (``/v1``, ``/v3``: personal access tokens),
#: the studio's own (``/coze_lab/api``) and public pages (no authentication)
COZE, STUDIO, PUBLIC = "coze", "studio", "public"


@dataclass(frozen=True)
class Op:
    """One operation of a route: its method and what the API document says of it.

    ``query`` lists ``(name, type or schema, required)``; ``data`` is the schema of the envelope's
    ``data``; ``status`` the success status; ``raw`` marks a body sent without the envelope.
    """

    method: str
    summary: str
    tag: str
    data: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    query: tuple[tuple[str, str | dict[str, Any], bool], ...] = ()
    body: dict[str, Any] | None = None
    multipart: bool = False
    stream: bool = False
    status: int = 200
    raw: bool = False
    content: str = "application/json"
    #: False: the body may be left out (every field is optional)
    body_required: bool = True
    #: an event stream when the body says ``"stream": true`` (then errors are a 200 + JSON)
    stream_when_asked: bool = False


@dataclass(frozen=True)
class Route:
    """A path (OpenAPI form, ``{name}`` for a path parameter) and what serves it."""

    path: str
    handler: type[CozeHandler]
    area: str
    scope: str | None = None
    ops: tuple[Op, ...] = ()

    @property
    def pattern(self) -> str:
        """The tornado pattern: each ``{name}`` matches one path segment."""
        return re.sub(r"\{[^}]+\}", "([^/]+)", self.path)

    @property
    def public(self) -> bool:
        return self.area == PUBLIC


class OpenApiDocHandler(CozeHandler):
    """``openapi.json``: the document of the route table (public)."""

    _document: dict[str, Any] | None = None

    def get(self) -> None:
        if OpenApiDocHandler._document is None:
            OpenApiDocHandler._document = document([*ROUTES, LIVENESS, SERVICE_ROOT])
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(OpenApiDocHandler._document)


ROUTES: tuple[Route, ...] = (
    # ---- coze ------------------------------------------------------------
    Route(
        "/v1/files/upload",
        FileUploadHandler,
        COZE,
        scope="files",
        ops=(
            Op(
                "post",
                "Upload a file (multipart field `file`)",
                "files",
                data=s.FILE,
                multipart=True,
            ),
        ),
    ),
    Route(
        "/v1/files/retrieve",
        FileRetrieveHandler,
        COZE,
        scope="files",
        ops=(
            Op(
                "get",
                "Describe an uploaded file",
                "files",
                data=s.FILE,
                query=(("file_id", "string", True),),
            ),
        ),
    ),
    Route(
        "/v1/workspaces",
        WorkspacesHandler,
        COZE,
        ops=(
            Op(
                "get",
                "The caller's workspaces (space_id)",
                "workspaces",
                data={
                    "type": "object",
                    "properties": {
                        "workspaces": {"type": "array", "items": s.WORKSPACE},
                        "total_count": {"type": "integer"},
                    },
                },
                query=(("page_num", s.PAGE_NUM, False), ("page_size", s.between(1, 100), False)),
            ),
        ),
    ),
    Route(
        "/v1/workspaces/{workspace_id}/members",
        WorkspaceMembersHandler,
        COZE,
        ops=(
            Op(
                "get",
                "A page of the workspace's members (any member may list them)",
                "workspaces",
                data={
                    "type": "object",
                    "properties": {
                        "items": {"type": "array", "items": s.WORKSPACE_MEMBER},
                        "total_count": {"type": "integer"},
                    },
                },
                query=(("page_num", s.PAGE_NUM, False), ("page_size", s.between(1, 50), False)),
            ),
            Op(
                "post",
                "Add members to a team workspace (owners and admins)",
                "workspaces",
                data={
                    "type": "object",
                    "properties": {
                        "added_success_user_ids": s.ID_LIST,
                        "invited_success_user_ids": s.ID_LIST,
                        "not_exist_user_ids": s.ID_LIST,
                        "already_joined_user_ids": s.ID_LIST,
                        "already_invited_user_ids": s.ID_LIST,
                    },
                },
                body={
                    "type": "object",
                    "required": ["users"],
                    "properties": {
                        "users": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": 20,
                            "items": {
                                "type": "object",
                                "properties": {
                                    "user_id": s.ID,
                                    "role_type": {"enum": ["admin", "member"]},
                                },
                            },
                        }
                    },
                },
            ),
            Op(
                "delete",
                "Remove members (owners and admins; anyone may remove themselves)",
                "workspaces",
                data={
                    "type": "object",
                    "properties": {
                        "removed_success_user_ids": s.ID_LIST,
                        "not_in_workspace_user_ids": s.ID_LIST,
                        "owner_not_support_remove_user_ids": s.ID_LIST,
                    },
                },
                body={
                    "type": "object",
                    "required": ["user_ids"],
                    "properties": {
                        "user_ids": {"type": "array", "minItems": 1, "maxItems": 5, "items": s.ID}
                    },
                },
            ),
        ),
    ),
    Route(
        "/v1/users/me",
        UserMeHandler,
        COZE,
        ops=(
            Op(
                "get",
                "The token's owner (Coze's User)",
                "users",
                data={
                    "type": "object",
                    "properties": {
                        "user_id": s.ID,
                        "user_name": {"type": "string"},
                        "nick_name": {"type": "string"},
                        "avatar_url": {"type": "string"},
                    },
                    "required": ["user_id", "user_name", "nick_name", "avatar_url"],
                },
            ),
        ),
    ),
    Route(
        "/v1/workflow/run",
        WorkflowRunHandler,
        COZE,
        scope="workflow",
        ops=(
            Op(
                "post",
                "Run the published workflow; waits for the outputs unless is_async",
                "workflow",
                data={"type": "string", "description": "the end node's outputs as JSON text"},
                body=s.RUN_BODY,
            ),
        ),
    ),
    Route(
        "/v1/workflow/stream_run",
        WorkflowStreamRunHandler,
        COZE,
        scope="workflow",
        ops=(
            Op(
                "post",
                "Run and stream events (SSE: Message, Interrupt, Error, Done)",
                "workflow",
                body=s.RUN_BODY,
                stream=True,
            ),
        ),
    ),
    Route(
        "/v1/workflow/stream_resume",
        WorkflowStreamResumeHandler,
        COZE,
        scope="workflow",
        ops=(
            Op(
                "post",
                "Answer an interrupt and stream on",
                "workflow",
                body={
                    "type": "object",
                    "required": ["workflow_id", "event_id"],
                    "properties": {
                        "workflow_id": s.ID,
                        "event_id": s.ID,
                        "resume_data": {},
                        "interrupt_type": {"type": "integer"},
                    },
                },
                stream=True,
            ),
        ),
    ),
    Route(
        "/v1/workflows/chat",
        WorkflowChatHandler,
        COZE,
        scope="workflow",
        ops=(
            Op(
                "post",
                "A chat-flow chat: run a workflow whose start takes USER_INPUT in a "
                "conversation, streamed with Coze's chat events",
                "workflow",
                body={
                    "type": "object",
                    "required": ["workflow_id", "additional_messages"],
                    "properties": {
                        "workflow_id": s.ID,
                        "additional_messages": {
                            "type": "array",
                            "items": s.MESSAGE_IN,
                            "minItems": 1,
                        },
                        "parameters": {"type": ["object", "string"]},
                        "conversation_id": s.OPTIONAL_ID,
                        "bot_id": {"type": "string"},
                        "app_id": {"type": "string"},
                        "ext": {"type": "object"},
                    },
                },
                stream=True,
            ),
        ),
    ),
    Route(
        "/v1/workflow/get_run_history",
        RunHistoryQueryHandler,
        COZE,
        scope="workflow",
        ops=(
            Op(
                "get",
                "A run's status, outputs and node states (Coze's older query form)",
                "workflow",
                data={"type": "array", "items": s.OBJ},
                query=(("workflow_id", "string", True), ("execute_id", "string", True)),
            ),
        ),
    ),
    Route(
        "/v1/workflows",
        WorkflowsListHandler,
        COZE,
        scope="workflow",
        ops=(
            Op(
                "get",
                "A page of a space's workflows (default: your personal space)",
                "workflow",
                data={
                    "type": "object",
                    "properties": {
                        "items": {"type": "array", "items": s.WORKFLOW_BASIC},
                        "has_more": {"type": "boolean"},
                    },
                    "required": ["items", "has_more"],
                },
                query=(
                    ("workspace_id", "string", False),
                    ("workflow_mode", {"enum": ["", "workflow", "chatflow"]}, False),
                    ("app_id", {"type": "string", "description": "any: no workflows"}, False),
                    ("publish_status", s.WORKFLOW_PUBLISH_STATUS, False),
                    ("page_num", s.PAGE_NUM, False),
                    ("page_size", s.between(1, 100), False),
                ),
            ),
        ),
    ),
    Route(
        "/v1/workflows/{workflow_id}",
        WorkflowRetrieveHandler,
        COZE,
        scope="workflow",
        ops=(
            Op(
                "get",
                "A workflow (Coze's WorkflowInfo)",
                "workflow",
                data={
                    "type": "object",
                    "properties": {"workflow_detail": s.WORKFLOW_BASIC},
                    "required": ["workflow_detail"],
                },
            ),
        ),
    ),
    Route(
        "/v1/workflows/{workflow_id}/versions",
        WorkflowVersionsHandler,
        COZE,
        scope="workflow",
        ops=(
            Op(
                "get",
                "A workflow's published versions, newest first",
                "workflow",
                data={
                    "type": "object",
                    "properties": {
                        "items": {"type": "array", "items": s.WORKFLOW_VERSION},
                        "has_more": {"type": "boolean"},
                        "next_page_token": {"type": "string"},
                    },
                    "required": ["items", "has_more"],
                },
                query=(
                    ("publish_status", s.WORKFLOW_PUBLISH_STATUS, False),
                    ("page_size", s.between(1, 30), False),
                    ("page_token", s.VERSION_TOKEN, False),
                ),
            ),
        ),
    ),
    Route(
        "/v1/workflows/{workflow_id}/run_histories/{execute_id}",
        RunHistoryHandler,
        COZE,
        scope="workflow",
        ops=(
            Op(
                "get",
                "A run's status, outputs and node states",
                "workflow",
                data={"type": "array", "items": s.OBJ},
            ),
        ),
    ),
    Route(
        "/v1/workflows/{workflow_id}/run_histories/{execute_id}/execute_nodes/{node_execute_uuid}",
        ExecuteNodeHandler,
        COZE,
        scope="workflow",
        ops=(
            Op(
                "get",
                "One node's output in a run",
                "workflow",
                data=s.OBJ,
            ),
        ),
    ),
    Route(
        "/v1/bot/create",
        BotCreateHandler,
        COZE,
        scope="bots",
        ops=(Op("post", "Create a bot (draft)", "bots", data=s.BOT, body=s.BOT_CREATE_BODY),),
    ),
    Route(
        "/v1/bot/update",
        BotUpdateHandler,
        COZE,
        scope="bots",
        ops=(Op("post", "Update a bot's draft", "bots", body=s.BOT_UPDATE_BODY),),
    ),
    Route(
        "/v1/bot/publish",
        BotPublishHandler,
        COZE,
        scope="bots",
        ops=(
            Op(
                "post",
                "Publish the draft as a new version to connectors",
                "bots",
                data=s.BOT,
                body={
                    "type": "object",
                    "required": ["bot_id"],
                    "properties": {"bot_id": s.ID, "connector_ids": s.CONNECTOR_IDS},
                },
            ),
        ),
    ),
    Route(
        "/v1/bot/get_online_info",
        BotOnlineInfoHandler,
        COZE,
        scope="bots",
        ops=(
            Op(
                "get",
                "The newest published configuration",
                "bots",
                data=s.BOT,
                query=(("bot_id", "string", True),),
            ),
        ),
    ),
    Route(
        "/v1/bots",
        BotsHandler,
        COZE,
        scope="bots",
        ops=(
            Op(
                "get",
                "A page of your bots",
                "bots",
                query=(
                    ("workspace_id", "string", False),
                    (
                        "publish_status",
                        {
                            "enum": [
                                "all",
                                "published_online",
                                "published_draft",
                                "unpublished_draft",
                            ]
                        },
                        False,
                    ),
                    ("connector_id", "string", False),
                    ("page_num", s.PAGE_NUM, False),
                    ("page_size", s.between(1, 100), False),
                ),
            ),
        ),
    ),
    Route(
        "/v1/bots/{bot_id}",
        BotItemHandler,
        COZE,
        scope="bots",
        ops=(
            Op(
                "get",
                "A bot: published (default) or draft",
                "bots",
                data=s.BOT,
                query=(("is_published", "boolean", False),),
            ),
        ),
    ),
    Route(
        "/v1/bots/{bot_id}/unpublish",
        BotUnpublishHandler,
        COZE,
        scope="bots",
        ops=(
            Op(
                "post",
                "Stop serving a bot on a connector",
                "bots",
                body={
                    "type": "object",
                    "required": ["connector_id"],
                    "properties": {"connector_id": {"enum": ["1024", "999"]}},
                },
            ),
        ),
    ),
    Route(
        "/v1/connectors/{connector_id}/bots/{bot_id}",
        ConnectorBotHandler,
        COZE,
        scope="bots",
        ops=(
            Op(
                "put",
                "A connector's review of a published bot (2 approved; 3 rejected: no longer "
                "served there)",
                "bots",
                body={
                    "type": "object",
                    "required": ["audit_status"],
                    "properties": {
                        "audit_status": {
                            "enum": [2, 3],
                            "description": "1 (pending) is not supported: no review queue",
                        },
                        "reason": {"type": "string", "maxLength": 1000},
                    },
                    # a rejection says why
                    "if": {"properties": {"audit_status": {"const": 3}}},
                    "then": {
                        "required": ["reason"],
                        "properties": {"reason": {"pattern": "\\S"}},
                    },
                },
            ),
        ),
    ),
    Route(
        "/v1/templates/{template_id}/duplicate",
        TemplateDuplicateHandler,
        COZE,
        scope="bots",
        ops=(
            Op(
                "post",
                "Copy a bot you can read (the template) as a new draft bot in a space",
                "bots",
                data={
                    "type": "object",
                    "properties": {"entity_id": s.ID, "entity_type": {"enum": ["agent"]}},
                    "required": ["entity_id", "entity_type"],
                },
                body={
                    "type": "object",
                    "required": ["workspace_id"],
                    "properties": {"workspace_id": s.ID, "name": {"type": ["string", "null"]}},
                },
            ),
        ),
    ),
    Route(
        "/v1/apps",
        AppsHandler,
        COZE,
        scope="bots",
        ops=(
            Op(
                "get",
                "Coze's apps: there are none in coze_lab (an empty list for your space)",
                "bots",
                data={
                    "type": "object",
                    "properties": {
                        "items": {"type": "array", "maxItems": 0},
                        "total": {"type": "integer"},
                    },
                    "required": ["items", "total"],
                },
                query=(
                    ("workspace_id", "string", True),
                    ("publish_status", "string", False),
                    ("connector_id", "string", False),
                    ("page_index", "integer", False),
                    ("page_size", "integer", False),
                ),
            ),
        ),
    ),
    Route(
        "/v1/space/published_bots_list",
        PublishedBotsListHandler,
        COZE,
        scope="bots",
        ops=(
            Op(
                "get",
                "Bots published to the API connector",
                "bots",
                query=(
                    ("space_id", "string", True),
                    ("page_index", s.PAGE_NUM, False),
                    ("page_size", s.between(1, 100), False),
                ),
            ),
        ),
    ),
    Route(
        "/v1/conversation/create",
        ConversationCreateHandler,
        COZE,
        scope="chat",
        ops=(
            Op(
                "post",
                "Create a conversation",
                "conversations",
                data=s.CONVERSATION,
                body={
                    "type": "object",
                    "properties": {
                        "bot_id": {"anyOf": [s.OPTIONAL_ID, {"enum": [0, None]}]},
                        "messages": {"type": ["array", "null"], "items": s.MESSAGE_IN},
                    },
                },
                body_required=False,
            ),
        ),
    ),
    Route(
        "/v1/conversation/retrieve",
        ConversationRetrieveHandler,
        COZE,
        scope="chat",
        ops=(Op("get", "A conversation", "conversations", data=s.CONVERSATION, query=s.CONV_Q),),
    ),
    Route(
        "/v1/datasets",
        DatasetsHandler,
        COZE,
        scope="knowledge",
        ops=(
            Op(
                "post",
                "Create a knowledge base (format_type 0: text documents)",
                "knowledge",
                body=s.DATASET_CREATE,
                data={"type": "object", "properties": {"dataset_id": s.ID}},
            ),
            Op(
                "get",
                "A page of a space's knowledge bases (name: a part of the name)",
                "knowledge",
                query=(
                    ("space_id", "string", False),
                    ("name", "string", False),
                    ("format_type", {"enum": ["", "0", "1", "2"]}, False),
                    ("page_num", s.PAGE_NUM, False),
                    ("page_size", s.between(1, 300), False),
                ),
                data={
                    "type": "object",
                    "properties": {
                        "total_count": {"type": "integer"},
                        "dataset_list": {"type": "array", "items": s.DATASET},
                    },
                },
            ),
        ),
    ),
    Route(
        "/v1/datasets/{dataset_id}",
        DatasetHandler,
        COZE,
        scope="knowledge",
        ops=(
            Op(
                "put",
                "Replace a knowledge base's name, description and icon",
                "knowledge",
                body=s.DATASET_EDIT,
            ),
            Op("delete", "Delete a knowledge base with its documents", "knowledge"),
        ),
    ),
    Route(
        "/v1/datasets/{dataset_id}/process",
        DatasetProcessHandler,
        COZE,
        scope="knowledge",
        ops=(
            Op(
                "post",
                "Processing status and progress of documents (status 0 processing, 1 done, "
                "9 failed with status_descript)",
                "knowledge",
                body=s.DOCUMENT_IDS,
                data={
                    "type": "object",
                    "properties": {"data": {"type": "array", "items": s.DOCUMENT_PROGRESS}},
                },
            ),
        ),
    ),
    Route(
        "/open_api/knowledge/document/create",
        DocumentCreateHandler,
        COZE,
        scope="knowledge",
        ops=(
            Op(
                "post",
                "Add up to ten documents (txt, md, csv, pdf, docx, html; base64 or an uploaded "
                "file id); processed in the background; `document_infos` beside `data`",
                "knowledge",
                body=s.DOCUMENTS_CREATE,
            ),
        ),
    ),
    Route(
        "/open_api/knowledge/document/list",
        DocumentListHandler,
        COZE,
        scope="knowledge",
        ops=(
            Op(
                "post",
                "A page of a knowledge base's documents (`document_infos`, `total` beside `data`)",
                "knowledge",
                body={
                    "type": "object",
                    "required": ["dataset_id"],
                    "properties": {
                        "dataset_id": s.ID,
                        "page": s.PAGE_NUM,
                        "size": s.between(1, 300),
                    },
                },
            ),
        ),
    ),
    Route(
        "/open_api/knowledge/document/update",
        DocumentUpdateHandler,
        COZE,
        scope="knowledge",
        ops=(
            Op(
                "post",
                "Rename a document",
                "knowledge",
                body={
                    "type": "object",
                    "required": ["document_id", "document_name"],
                    "properties": {
                        "document_id": s.ID,
                        "document_name": s.NAME,
                        "update_rule": s.OBJ_OR_NULL,
                    },
                },
            ),
        ),
    ),
    Route(
        "/open_api/knowledge/document/delete",
        DocumentDeleteHandler,
        COZE,
        scope="knowledge",
        ops=(
            Op(
                "post",
                "Delete documents with their chunks (all or none)",
                "knowledge",
                body=s.DOCUMENT_IDS,
            ),
        ),
    ),
    Route(
        "/v1/variables",
        VariablesHandler,
        COZE,
        scope="chat",
        ops=(
            Op(
                "get",
                "An end user's values of a bot's variables (defaults for those never set)",
                "variables",
                data=s.VARIABLE_VALUES,
                query=(
                    ("bot_id", "string", True),
                    ("connector_uid", {"type": "string", "minLength": 1, "maxLength": 255}, True),
                    ("connector_id", "string", False),
                    ("keywords", "string", False),
                    ("app_id", "string", False),
                ),
            ),
            Op(
                "put",
                "Set an end user's values of a bot's variables (all or none)",
                "variables",
                body=s.VARIABLES_UPDATE,
            ),
        ),
    ),
    Route(
        "/v1/conversations",
        ConversationsHandler,
        COZE,
        scope="chat",
        ops=(
            Op(
                "get",
                "Your conversations with a bot",
                "conversations",
                query=(
                    ("bot_id", "string", True),
                    ("page_num", s.PAGE_NUM, False),
                    ("page_size", s.between(1, 100), False),
                    ("sort_order", {"enum": ["ASC", "DESC"]}, False),
                ),
            ),
        ),
    ),
    Route(
        "/v1/conversations/{conversation_id}",
        ConversationHandler,
        COZE,
        scope="chat",
        ops=(
            Op(
                "put",
                "Rename a conversation and/or replace its meta_data",
                "conversations",
                data=s.CONVERSATION,
                body={
                    "type": "object",
                    "properties": {
                        "name": s.STR,
                        "meta_data": {
                            "type": ["object", "null"],
                            "additionalProperties": {"type": "string"},
                        },
                    },
                },
            ),
            Op("delete", "Delete a conversation", "conversations"),
        ),
    ),
    Route(
        "/v1/conversations/{conversation_id}/messages/{message_id}/feedback",
        MessageFeedbackHandler,
        COZE,
        scope="chat",
        ops=(
            Op(
                "post",
                "Like or unlike one of the bot's answers",
                "conversations",
                body={
                    "type": "object",
                    "required": ["feedback_type"],
                    "properties": {
                        "feedback_type": {"enum": ["like", "unlike"]},
                        "reason_types": {
                            "type": "array",
                            "items": {"type": "string", "minLength": 1, "maxLength": 100},
                            "maxItems": 10,
                        },
                        "comment": s.STR,
                    },
                },
            ),
            Op("delete", "Take the feedback on an answer back", "conversations"),
        ),
    ),
    Route(
        "/v1/conversations/{conversation_id}/clear",
        ConversationClearHandler,
        COZE,
        scope="chat",
        ops=(Op("post", "Clear the context: start a new section", "conversations"),),
    ),
    Route(
        "/v1/conversation/message/create",
        MessageCreateHandler,
        COZE,
        scope="chat",
        ops=(
            Op(
                "post",
                "Add a message",
                "messages",
                data=s.MESSAGE,
                query=s.CONV_Q,
                body=s.MESSAGE_IN,
            ),
        ),
    ),
    Route(
        "/v1/conversation/message/list",
        MessageListHandler,
        COZE,
        scope="chat",
        ops=(
            Op(
                "post",
                "Messages, cursor pages both ways (first_id, last_id, has_more)",
                "messages",
                data=s.LIST,
                query=s.CONV_Q,
                body={
                    "type": "object",
                    "properties": {
                        "order": {"enum": ["asc", "desc"]},
                        "chat_id": s.ID_OR_EMPTY,
                        "before_id": s.ID_OR_EMPTY,
                        "after_id": s.ID_OR_EMPTY,
                        "limit": s.between(1, 50),
                    },
                },
            ),
        ),
    ),
    Route(
        "/v1/conversation/message/retrieve",
        MessageRetrieveHandler,
        COZE,
        scope="chat",
        ops=(Op("get", "A message", "messages", data=s.MESSAGE, query=s.MSG_Q),),
    ),
    Route(
        "/v1/conversation/message/modify",
        MessageModifyHandler,
        COZE,
        scope="chat",
        ops=(
            Op(
                "post",
                "Edit a message",
                "messages",
                data=s.MESSAGE,
                query=s.MSG_Q,
                body=s.MESSAGE_IN,
            ),
        ),
    ),
    Route(
        "/v1/conversation/message/delete",
        MessageDeleteHandler,
        COZE,
        scope="chat",
        ops=(Op("post", "Delete a message", "messages", data=s.MESSAGE, query=s.MSG_Q),),
    ),
    Route(
        "/v3/chat",
        ChatHandler,
        COZE,
        scope="chat",
        ops=(
            Op(
                "post",
                "Chat with a bot (stream: SSE with Coze's chat events)",
                "chat",
                data=s.CHAT,
                query=(("conversation_id", "string", False),),
                body=s.CHAT_BODY,
                stream_when_asked=True,
            ),
        ),
    ),
    Route(
        "/v3/chat/retrieve",
        ChatRetrieveHandler,
        COZE,
        scope="chat",
        ops=(
            Op("get", "A chat's status and usage", "chat", data=s.CHAT, query=s.CHAT_Q),
            Op(
                "post",
                "A chat's status and usage (cozepy's method)",
                "chat",
                data=s.CHAT,
                query=s.CHAT_Q,
            ),
        ),
    ),
    Route(
        "/v3/chat/events",
        ChatEventsHandler,
        COZE,
        scope="chat",
        ops=(
            Op(
                "get",
                "Re-attach to a chat's stream from any replica (SSE with ids; "
                "Last-Event-ID or after replays)",
                "chat",
                query=(*s.CHAT_Q, ("after", "integer", False)),
                stream=True,
            ),
        ),
    ),
    Route(
        "/v3/chat/message/list",
        ChatMessagesHandler,
        COZE,
        scope="chat",
        ops=(Op("get", "What a chat wrote", "chat", data=s.LIST, query=s.CHAT_Q),),
    ),
    Route(
        "/v3/chat/cancel",
        ChatCancelHandler,
        COZE,
        scope="chat",
        ops=(
            Op(
                "post",
                "Stop a running chat",
                "chat",
                data=s.CHAT,
                body={
                    "type": "object",
                    "required": ["conversation_id", "chat_id"],
                    "properties": {"conversation_id": s.ID, "chat_id": s.ID},
                },
            ),
        ),
    ),
    Route(
        "/v3/chat/submit_tool_outputs",
        ChatSubmitToolOutputsHandler,
        COZE,
        scope="chat",
        ops=(
            Op(
                "post",
                "Continue a requires_action chat",
                "chat",
                data=s.CHAT,
                query=s.CHAT_Q,
                body={
                    "type": "object",
                    "required": ["tool_outputs"],
                    "properties": {"tool_outputs": s.TOOL_OUTPUTS, "stream": {"type": "boolean"}},
                },
                stream_when_asked=True,
            ),
        ),
    ),
    # ---- studio ------------------------------------------------------------
    Route(
        "/coze_lab/api/health",
        HealthHandler,
        STUDIO,
        ops=(Op("get", "Version, user, database and sandbox health", "studio"),),
    ),
    Route(
        "/coze_lab/api/datasets",
        StudioDatasetsHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "The knowledge bases of a space, with their documents' status",
                "studio",
                query=(
                    ("space_id", "string", False),
                    ("name", "string", False),
                    ("page_num", s.PAGE_NUM, False),
                ),
                data={
                    "type": "object",
                    "properties": {
                        "datasets": {"type": "array", "items": s.DATASET},
                        "total": {"type": "integer"},
                    },
                },
            ),
            Op(
                "post",
                "Create a knowledge base in a space (?space_id=; default personal)",
                "studio",
                query=(("space_id", "string", False),),
                body=s.DATASET_EDIT,
                data=s.DATASET,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/datasets/{dataset_id}/documents",
        StudioDocumentsHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "A knowledge base's documents with status, progress and failure reason",
                "studio",
                data={
                    "type": "object",
                    "properties": {
                        "documents": {"type": "array", "items": s.DOCUMENT},
                        "total": {"type": "integer"},
                    },
                },
            ),
            Op(
                "post",
                "Add documents (document_bases, chunk_strategy), processed in the background",
                "studio",
                body={
                    **s.DOCUMENTS_CREATE,
                    "required": ["document_bases"],
                    "properties": {
                        k: v
                        for k, v in s.DOCUMENTS_CREATE["properties"].items()
                        if k != "dataset_id"
                    },
                },
                data={
                    "type": "object",
                    "properties": {"documents": {"type": "array", "items": s.DOCUMENT}},
                },
            ),
        ),
    ),
    Route(
        "/coze_lab/api/knowledge/search",
        KnowledgeSearchHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Hybrid recall from knowledge bases: chunks with their source and score",
                "studio",
                body=s.KNOWLEDGE_SEARCH,
                data={
                    "type": "object",
                    "properties": {"chunks": {"type": "array", "items": s.CHUNK_HIT}},
                },
            ),
        ),
    ),
    Route(
        "/coze_lab/api/me",
        MeHandler,
        STUDIO,
        ops=(Op("get", "The current user", "studio", data=s.USER),),
    ),
    Route(
        "/coze_lab/api/admin/usage",
        UsageHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "Runs, chats and model tokens per user (hub admins only; counts, no content)",
                "studio",
                query=(("since", s.between(0, 2**40), False),),
                data={
                    "type": "object",
                    "properties": {
                        "users": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "user_id": s.ID,
                                    "name": {"type": "string"},
                                    "runs": {"type": "integer"},
                                    "chats": {"type": "integer"},
                                    "chat_tokens": {"type": "integer"},
                                    "run_tokens": {"type": "integer"},
                                    "tokens": {"type": "integer"},
                                },
                            },
                        }
                    },
                },
            ),
        ),
    ),
    Route(
        "/coze_lab/api/spaces",
        SpacesHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "Your spaces (personal and team) and your role in each",
                "spaces",
                data={
                    "type": "object",
                    "properties": {"spaces": {"type": "array", "items": s.SPACE}},
                },
            ),
            Op(
                "post",
                "Create a team space (you are its owner)",
                "spaces",
                data=s.SPACE,
                body={"type": "object", "required": ["name"], "properties": {"name": s.SPACE_NAME}},
                status=201,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/spaces/{space_id}",
        SpaceHandler,
        STUDIO,
        ops=(
            Op("get", "A space and your role in it", "spaces", data=s.SPACE),
            Op(
                "put",
                "Rename a team space (owner, admins)",
                "spaces",
                data=s.SPACE,
                body={"type": "object", "required": ["name"], "properties": {"name": s.SPACE_NAME}},
            ),
            Op("delete", "Delete an empty team space (owner)", "spaces"),
        ),
    ),
    Route(
        "/coze_lab/api/spaces/{space_id}/members",
        SpaceMembersHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "The space's members",
                "spaces",
                data={
                    "type": "object",
                    "properties": {
                        "members": {"type": "array", "items": s.MEMBER},
                        "total": {"type": "integer"},
                    },
                },
            ),
            Op(
                "post",
                "Add a user by name (owner, admins; 4201 if a member already)",
                "spaces",
                data=s.MEMBER,
                body={
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "role": {"enum": ["admin", "member"]},
                    },
                },
                status=201,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/spaces/{space_id}/members/{user_id}",
        SpaceMemberHandler,
        STUDIO,
        ops=(Op("delete", "Remove a member (owner, admins; or yourself: leave)", "spaces"),),
    ),
    Route(
        "/coze_lab/api/conversations/{conversation_id}/activity",
        ConversationActivityHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "The conversation's timeline (chats, messages, tool calls with inputs and "
                "outputs, workflow nodes, files written, durations, token usage) and its run "
                "state (running, waiting, done, failed)",
                "studio",
                data=s.ACTIVITY,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/runs/{run_id}/activity",
        RunActivityHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "A workflow run's timeline (nodes, questions, files written) and its state",
                "studio",
                data=s.ACTIVITY,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/conversations/{conversation_id}/file_history",
        FileHistoryHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "Who wrote which file of the conversation's workspace, when, from which "
                "message or node (oldest first)",
                "studio",
                data={
                    "type": "object",
                    "properties": {"items": {"type": "array", "items": s.FILE_EVENT}},
                },
            ),
        ),
    ),
    Route(
        "/coze_lab/api/memory",
        MemoryHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "Your long-term memory in a space (default personal): user.md, skills, the "
                "last changes with the message each came from, the queue",
                "memory",
                query=s.SPACE_Q,
                data=s.MEMORY,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/memory/user",
        MemoryUserHandler,
        STUDIO,
        ops=(
            Op(
                "put",
                "Replace your user.md",
                "memory",
                query=s.SPACE_Q,
                body=s.MEMORY_CONTENT,
                data=s.MEMORY,
            ),
            Op("delete", "Forget your user.md", "memory", query=s.SPACE_Q),
        ),
    ),
    Route(
        "/coze_lab/api/memory/skills/{skill}",
        MemorySkillHandler,
        STUDIO,
        ops=(
            Op(
                "put",
                "Create or replace one of your skills (skills/<name>.md)",
                "memory",
                query=s.SPACE_Q,
                body=s.MEMORY_CONTENT,
                data=s.MEMORY,
            ),
            Op("delete", "Forget one of your skills", "memory", query=s.SPACE_Q),
        ),
    ),
    Route(
        "/coze_lab/api/tokens",
        TokensHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "List personal access tokens",
                "studio",
                data={
                    "type": "object",
                    "properties": {"tokens": {"type": "array", "items": s.TOKEN}},
                },
            ),
            Op(
                "post",
                "Create a personal access token",
                "studio",
                data=s.TOKEN,
                body={
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": s.NAME,
                        "expires_in_days": {
                            "type": ["integer", "null"],
                            "minimum": 1,
                            "maximum": 3650,
                        },
                        "scopes": {
                            "type": ["array", "null"],
                            "minItems": 1,
                            "items": {"enum": ["chat", "workflow", "files", "bots", "knowledge"]},
                            "description": "left out or null: every scope",
                        },
                        "connector_id": {"enum": ["1024", "999", None]},
                    },
                },
                status=201,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/tokens/{token_id}",
        TokenHandler,
        STUDIO,
        ops=(Op("delete", "Revoke a personal access token", "studio", data=s.TOKEN),),
    ),
    Route(
        "/coze_lab/api/workflows",
        WorkflowsHandler,
        STUDIO,
        ops=(
            Op("get", "A space's workflows (default: personal)", "studio", query=s.SPACE_Q),
            Op(
                "post",
                "Save a definition as the draft (upsert by name); publish=true also publishes",
                "studio",
                body=s.OBJ,
                status=201,
                query=s.SPACE_Q,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/workflows/{workflow_id}",
        WorkflowItemHandler,
        STUDIO,
        ops=(
            Op("get", "A workflow and its draft", "studio"),
            Op("delete", "Delete a workflow", "studio"),
        ),
    ),
    Route(
        "/coze_lab/api/workflows/{workflow_id}/publish",
        WorkflowPublishHandler,
        STUDIO,
        ops=(Op("post", "Publish the draft as the next version", "studio"),),
    ),
    Route(
        "/coze_lab/api/workflows/{workflow_id}/runs",
        WorkflowDraftRunHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Run the draft (``workspace: true``: in a workspace of its own)",
                "studio",
                body={
                    **s.WORKSPACE_RULE,
                    "type": "object",
                    "properties": {
                        "parameters": s.OBJ,
                        "workspace": s.WORKSPACE_FLAG,
                        "workspace_files": s.WORKSPACE_FILES,
                    },
                },
                status=201,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/runs",
        RunsHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "Your runs, newest first",
                "studio",
                query=(("workflow_id", "string", False), ("limit", s.between(1, 100), False)),
            ),
        ),
    ),
    Route(
        "/coze_lab/api/runs/{run_id}",
        RunHandler,
        STUDIO,
        ops=(Op("get", "A run's trace: every node's record", "studio"),),
    ),
    Route(
        "/coze_lab/api/runs/{run_id}/cancel",
        RunCancelHandler,
        STUDIO,
        ops=(Op("post", "Stop a run", "studio"),),
    ),
    Route(
        "/coze_lab/api/runs/{run_id}/retry",
        RunRetryHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Retry a failed or canceled run from a node, reusing its upstream outputs",
                "studio",
                body=s.RETRY_BODY,
                status=201,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/runs/{run_id}/events",
        RunEventsHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "Every event of a run (SSE; Last-Event-ID replays)",
                "studio",
                query=(("after", s.between(0, 2**31), False),),
                stream=True,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/interrupts",
        InterruptsHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "Pending questions across your runs",
                "studio",
                query=(("run_id", "string", False),),
            ),
        ),
    ),
    Route(
        "/coze_lab/api/interrupts/{event_id}/resume",
        InterruptResumeHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Answer a question",
                "studio",
                body={"type": "object", "required": ["data"], "properties": {"data": {}}},
            ),
        ),
    ),
    Route(
        "/coze_lab/api/bots",
        StudioBotsHandler,
        STUDIO,
        ops=(
            Op("get", "A space's bots (drafts; default: personal)", "studio", query=s.SPACE_Q),
            Op(
                "post",
                "Create a bot",
                "studio",
                data=s.BOT,
                body=s.BOT_BODY,
                status=201,
                query=s.SPACE_Q,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/bots/{bot_id}",
        StudioBotHandler,
        STUDIO,
        ops=(
            Op("get", "A bot's draft", "studio", data=s.BOT),
            Op("put", "Edit a bot's draft", "studio", data=s.BOT, body=s.BOT_BODY),
            Op("delete", "Delete a bot", "studio"),
        ),
    ),
    Route(
        "/coze_lab/api/bots/{bot_id}/publish",
        StudioBotPublishHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Publish a bot",
                "studio",
                data=s.BOT,
                body={"type": "object", "properties": {"connector_ids": s.CONNECTOR_IDS}},
            ),
        ),
    ),
    Route(
        "/coze_lab/api/bots/{bot_id}/variables",
        StudioBotVariablesHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "A bot's variables with an end user's values (default: yours, Playground)",
                "studio",
                data=s.VARIABLE_STATES,
                query=(
                    ("connector_id", "string", False),
                    ("connector_uid", {"type": "string", "maxLength": 255}, False),
                ),
            ),
            Op(
                "put",
                "Set an end user's values, as the end user (all or none)",
                "studio",
                data=s.VARIABLE_STATES,
                body=s.STUDIO_VARIABLES_UPDATE,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/bots/{bot_id}/chat",
        StudioBotChatHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Chat with the draft on the Playground (SSE, Coze's chat events)",
                "studio",
                body={
                    "type": "object",
                    "properties": {
                        "message": {"type": "string", "minLength": 1},
                        "conversation_id": s.ID,
                        "custom_variables": s.OBJ,
                        "stream": {"type": "boolean"},
                    },
                },
                stream=True,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/bots/{bot_id}/conversations",
        StudioBotConversationsHandler,
        STUDIO,
        ops=(
            Op(
                "get", "A bot's conversations", "studio", query=(("connector_id", "string", False),)
            ),
        ),
    ),
    Route(
        "/coze_lab/api/conversations/{conversation_id}/messages",
        StudioConversationMessagesHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "A Playground conversation's messages, oldest first",
                "studio",
                query=(("after_id", "string", False), ("limit", s.between(1, 50), False)),
            ),
        ),
    ),
    Route(
        "/coze_lab/api/conversations/{conversation_id}/clear",
        StudioConversationClearHandler,
        STUDIO,
        ops=(Op("post", "Clear a Playground conversation's context", "studio"),),
    ),
    Route(
        "/coze_lab/api/chats/{chat_id}/events",
        StudioChatEventsHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "Re-attach to a Playground chat's stream (SSE; Last-Event-ID replays)",
                "studio",
                query=(("conversation_id", "string", False), ("after", s.between(0, 2**31), False)),
                stream=True,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/chats/{chat_id}/cancel",
        StudioChatCancelHandler,
        STUDIO,
        ops=(Op("post", "Stop a Playground chat", "studio", data=s.CHAT),),
    ),
    Route(
        "/coze_lab/api/chats/{chat_id}/submit_tool_outputs",
        StudioChatToolOutputsHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Continue a Playground chat that waits for its client functions' outputs",
                "studio",
                data=s.CHAT,
                body={
                    "type": "object",
                    "properties": {
                        "conversation_id": s.ID,
                        "tool_outputs": s.TOOL_OUTPUTS,
                        "stream": {"type": "boolean"},
                    },
                    "required": ["conversation_id", "tool_outputs"],
                },
                stream_when_asked=True,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/tables",
        TablesHandler,
        STUDIO,
        ops=(
            Op("get", "A space's user tables (default: personal)", "studio", query=s.SPACE_Q),
            Op(
                "post",
                "Create a user table (real SQL)",
                "studio",
                query=s.SPACE_Q,
                body={
                    "type": "object",
                    "required": ["name", "fields"],
                    "properties": {
                        "name": s.IDENTIFIER,
                        "description": {"type": ["string", "null"]},
                        "bot_id": {**s.ID_OR_EMPTY, "type": ["string", "null"]},
                        "fields": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": 50,
                            "items": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": s.FIELD_NAME,
                                    "type": {
                                        "enum": ["text", "number", "float", "boolean", "date"]
                                    },
                                    "description": s.STR,
                                    "required": {"type": "boolean"},
                                },
                            },
                        },
                    },
                },
                status=201,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/tables/{table_id}",
        TableHandler,
        STUDIO,
        ops=(
            Op("get", "A user table", "studio"),
            Op("delete", "Delete a table and its rows", "studio"),
        ),
    ),
    Route(
        "/coze_lab/api/tables/{table_id}/fields",
        TableFieldsHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Add fields to the draft",
                "studio",
                body={
                    "type": "object",
                    "properties": {
                        "fields": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": 50,
                            "items": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": s.FIELD_NAME,
                                    "type": {
                                        "enum": ["text", "number", "float", "boolean", "date"]
                                    },
                                    "description": s.STR,
                                    "required": {"type": "boolean"},
                                },
                            },
                        }
                    },
                },
            ),
        ),
    ),
    Route(
        "/coze_lab/api/tables/{table_id}/publish",
        TablePublishHandler,
        STUDIO,
        ops=(Op("post", "Give the online table the draft's fields", "studio"),),
    ),
    Route(
        "/coze_lab/api/tables/{table_id}/rows",
        TableRowsHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "Your rows",
                "studio",
                query=(("scene", s.SCENE, False), ("limit", s.between(1, 1000), False)),
            ),
            Op(
                "post",
                "Add a row",
                "studio",
                body={"type": "object", "properties": {"values": s.OBJ, "scene": s.SCENE}},
                status=201,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/tables/{table_id}/rows/batch",
        TableRowsBatchHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Add rows in one transaction (a bad row adds none)",
                "studio",
                body={
                    "type": "object",
                    "required": ["rows"],
                    "properties": {
                        "rows": {"type": "array", "minItems": 1, "maxItems": 10000, "items": s.OBJ},
                        "scene": s.SCENE,
                    },
                },
                status=201,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/tables/{table_id}/query",
        TableQueryHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Your rows by SQL (one checked SELECT) or by conditions",
                "studio",
                body={
                    "type": "object",
                    "properties": {
                        "sql": s.STR,
                        "params": s.OBJ,
                        "fields": {"type": "array", "items": s.STR},
                        "where": s.TABLE_WHERE,
                        "logic": {"enum": ["and", "or"]},
                        "order_by": {"type": "array", "items": s.OBJ},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                        "scene": s.SCENE,
                    },
                },
            ),
        ),
    ),
    Route(
        "/coze_lab/api/tables/{table_id}/rows/update",
        TableRowsUpdateHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Change your rows that match the conditions",
                "studio",
                body={
                    "type": "object",
                    "required": ["where", "values"],
                    "properties": {
                        "where": {**s.TABLE_WHERE, "minItems": 1},
                        "values": s.OBJ,
                        "logic": {"enum": ["and", "or"]},
                        "scene": s.SCENE,
                    },
                },
            ),
        ),
    ),
    Route(
        "/coze_lab/api/tables/{table_id}/rows/delete",
        TableRowsDeleteHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Delete your rows that match the conditions",
                "studio",
                body={
                    "type": "object",
                    "required": ["where"],
                    "properties": {
                        "where": {**s.TABLE_WHERE, "minItems": 1},
                        "logic": {"enum": ["and", "or"]},
                        "scene": s.SCENE,
                    },
                },
            ),
        ),
    ),
    Route(
        "/coze_lab/api/plugins",
        PluginsHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "A space's plugins (default: personal)",
                "plugins",
                query=s.SPACE_Q,
                data={
                    "type": "object",
                    "properties": {"plugins": {"type": "array", "items": s.PLUGIN}},
                },
            ),
            Op(
                "post",
                "Import a plugin from an OpenAPI 3.0/3.1 document and a manifest",
                "plugins",
                query=s.SPACE_Q,
                data=s.PLUGIN,
                body=s.PLUGIN_SOURCE,
                status=201,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/plugins/{plugin_id}",
        PluginItemHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "A plugin: draft, or the online version with scene=online",
                "plugins",
                data=s.PLUGIN,
                query=(("scene", s.SCENE, False),),
            ),
            Op(
                "put",
                "Replace the draft's document and/or manifest",
                "plugins",
                data=s.PLUGIN,
                body=s.PLUGIN_SOURCE,
            ),
            Op("delete", "Delete a plugin", "plugins"),
        ),
    ),
    Route(
        "/coze_lab/api/plugins/{plugin_id}/publish",
        PluginPublishHandler,
        STUDIO,
        ops=(Op("post", "Copy the draft to the next online version (atomically)", "plugins"),),
    ),
    Route(
        "/coze_lab/api/plugins/{plugin_id}/credentials",
        PluginCredentialsHandler,
        STUDIO,
        ops=(
            Op(
                "put",
                "Store your credentials (encrypted; never returned)",
                "plugins",
                body={
                    "type": "object",
                    "required": ["credentials"],
                    "properties": {
                        "credentials": {
                            "type": "object",
                            "minProperties": 1,
                            "additionalProperties": {"type": "string", "minLength": 1},
                        }
                    },
                },
            ),
            Op("delete", "Forget your credentials and OAuth authorization", "plugins"),
        ),
    ),
    Route(
        "/coze_lab/api/plugins/{plugin_id}/oauth/authorize",
        PluginAuthorizeHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "A fresh OAuth authorization URL (state + PKCE)",
                "plugins",
                body={"type": "object", "properties": {"scene": {"enum": ["draft", "online"]}}},
            ),
        ),
    ),
    Route(
        "/coze_lab/api/plugins/{plugin_id}/calls",
        PluginCallsHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "Recorded tool calls, newest first (no secrets)",
                "plugins",
                query=(("limit", s.between(1, 100), False),),
            ),
        ),
    ),
    Route(
        "/coze_lab/api/plugins/{plugin_id}/tools/{tool_id}/debug",
        PluginToolDebugHandler,
        STUDIO,
        ops=(
            Op(
                "post",
                "Call a tool from the studio",
                "plugins",
                data=s.TOOL_RESULT,
                body={
                    "type": "object",
                    "properties": {"arguments": s.OBJ, "scene": {"enum": ["draft", "online"]}},
                },
            ),
        ),
    ),
    Route(
        "/coze_lab/api/mcp/servers",
        McpServersHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "A space's MCP servers (default: personal)",
                "mcp",
                query=s.SPACE_Q,
                data={
                    "type": "object",
                    "properties": {"servers": {"type": "array", "items": s.MCP_SERVER}},
                },
            ),
            Op(
                "post",
                "Add an MCP server: a stdio command or a streamable-HTTP URL",
                "mcp",
                query=s.SPACE_Q,
                data=s.MCP_SERVER,
                body=s.MCP_SERVER_BODY,
                status=201,
            ),
        ),
    ),
    Route(
        "/coze_lab/api/mcp/servers/{server_id}",
        McpServerHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "An MCP server (the names of its env, never the values)",
                "mcp",
                data=s.MCP_SERVER,
            ),
            Op("delete", "Delete an MCP server", "mcp"),
        ),
    ),
    Route(
        "/coze_lab/api/mcp/servers/{server_id}/tools",
        McpToolsHandler,
        STUDIO,
        ops=(
            Op(
                "get",
                "The server's tools (starts a stdio server; asks an HTTP one with your headers)",
                "mcp",
                data={
                    "type": "object",
                    "properties": {"tools": {"type": "array", "items": s.MCP_TOOL}},
                },
            ),
        ),
    ),
    Route(
        "/coze_lab/api/mcp/servers/{server_id}/credentials",
        McpCredentialsHandler,
        STUDIO,
        ops=(
            Op(
                "put",
                "Store your headers for an HTTP server (encrypted; never returned)",
                "mcp",
                body={
                    "type": "object",
                    "required": ["headers"],
                    "properties": {
                        "headers": s.MCP_HEADERS,
                    },
                },
            ),
            Op("delete", "Forget your headers for the server", "mcp"),
        ),
    ),
    # ---- public ------------------------------------------------------------
    Route(
        "/coze_lab/openapi.json",
        OpenApiDocHandler,
        PUBLIC,
        ops=(Op("get", "This document", "meta", raw=True),),
    ),
    Route(
        "/coze_lab/api/plugins/oauth/callback",
        OAuthCallbackHandler,
        PUBLIC,
        ops=(
            Op(
                "get",
                "Where OAuth providers send users back (checks the state)",
                "plugins",
                query=(
                    ("state", {"type": "string", "minLength": 1}, True),
                    ("code", "string", False),
                    ("error", "string", False),
                ),
                data={"type": "string"},
                raw=True,
                content="text/html",
            ),
        ),
    ),
    Route(
        "/coze_lab/sdk/{asset}",
        SdkAssetHandler,
        PUBLIC,
        ops=(
            Op(
                "get",
                "Web SDK: the chat page (`chat?bot_id=...#token=pat_...`) and `embed.js`",
                "meta",
                data={"type": "string"},
                raw=True,
                content="text/*",
            ),
        ),
    ),
)

#: (pattern, handler) of each area, before binding
COZE_ROUTES = [(r.pattern, r.handler) for r in ROUTES if r.area == COZE]
STUDIO_ROUTES = [(r.pattern, r.handler) for r in ROUTES if r.area == STUDIO]

#: the liveness probe of ``coze-lab serve`` (load balancers, JupyterHub)
LIVENESS = Route(
    "/healthz",
    LivenessHandler,
    PUBLIC,
    ops=(Op("get", "Liveness: the database answers", "meta", raw=True),),
)
#: the root of ``coze-lab serve`` (a hub's Services menu links here)
SERVICE_ROOT = Route(
    "/",
    ServiceRootHandler,
    STUDIO,
    ops=(Op("get", "Who you are and where the API lives (coze-lab serve)", "meta"),),
)
#: coze_lab as an MCP server (JSON-RPC over streamable HTTP, described by the MCP
#: specification, not by openapi.json); personal access tokens, in both servers
MCP_ENDPOINT = Route("/coze_lab/mcp", McpEndpointHandler, PUBLIC)
TornadoRoute = tuple[str, type[web.RequestHandler]]


def bind(route: Route | type[CozeHandler], base: type[CozeHandler]) -> type:
    """A route's handler on top of a deployment's ``base`` class, with the route's scope;
    public routes skip Jupyter's authentication."""
    handler = route.handler if isinstance(route, Route) else route
    namespace: dict[str, Any] = {"__module__": handler.__module__}
    if isinstance(route, Route):
        namespace["SCOPE"] = route.scope
    unauthenticated = not isinstance(route, Route) or route.public or route.area == COZE
    if unauthenticated and _in_jupyter(base):
        from jupyter_server.auth.decorator import allow_unauthenticated

        for name in own_methods(handler):
            namespace[name] = allow_unauthenticated(getattr(handler, name))
    return type(handler.__name__, (handler, base), namespace)


def _in_jupyter(base: type) -> bool:
    return any(k.__module__.startswith("jupyter_server") for k in base.__mro__)


def jupyter_routes() -> list[TornadoRoute]:
    """Routes inside jupyter_server (relative to its base_url): everything under coze_lab/.
    The Coze API uses tokens (not Jupyter's login); the studio API uses Jupyter's identity."""
    from coze_lab.web.jupyter import JupyterCozeApiBase, JupyterStudioBase

    routes: list[TornadoRoute] = []
    for route in ROUTES:
        if route.area == STUDIO:
            routes.append((route.pattern, bind(route, JupyterStudioBase)))
        elif route.area == COZE:
            routes.append((r"/coze_lab" + route.pattern, bind(route, JupyterCozeApiBase)))
        else:
            routes.append((route.pattern, bind(route, JupyterCozeApiBase)))
    routes.append((MCP_ENDPOINT.pattern, bind(MCP_ENDPOINT, JupyterCozeApiBase)))
    routes.append((r"/coze_lab/.*", bind(NotFoundHandler, JupyterCozeApiBase)))
    return routes


def standalone_routes() -> list[TornadoRoute]:
    """Routes of ``coze-lab serve``: the Coze API at the root and under /coze_lab too."""
    from coze_lab.web.standalone import StandaloneBase

    routes: list[TornadoRoute] = []
    for route in ROUTES:
        bound = bind(route, StandaloneBase)
        if route.area == COZE:
            routes.append((route.pattern, bound))
            routes.append((r"/coze_lab" + route.pattern, bound))
        else:
            routes.append((route.pattern, bound))
    routes.append((MCP_ENDPOINT.pattern, bind(MCP_ENDPOINT, StandaloneBase)))
    routes.append((r"/openapi.json", bind(OpenApiDocHandler, StandaloneBase)))
    routes.append((LIVENESS.pattern, bind(LIVENESS, StandaloneBase)))
    routes.append((SERVICE_ROOT.pattern, bind(SERVICE_ROOT, StandaloneBase)))
    return routes


def standalone_not_found() -> type:
    from coze_lab.web.standalone import StandaloneBase

    return bind(NotFoundHandler, StandaloneBase)
