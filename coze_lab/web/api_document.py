"""The OpenAPI 3.1 document served at ``openapi.json``, built from one table of operations."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from coze_lab._version import __version__


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    tag: str
    data: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    query: tuple[tuple[str, str, bool], ...] = ()
    body: dict[str, Any] | None = None
    multipart: bool = False
    scope: str | None = None
    public: bool = False
    stream: bool = False


_ID = {"type": "string", "pattern": "^[0-9]+$"}
_FILE = {
    "type": "object",
    "properties": {
        "id": _ID,
        "bytes": {"type": "integer"},
        "created_at": {"type": "integer"},
        "file_name": {"type": "string"},
        "content_type": {"type": "string"},
    },
    "required": ["id", "bytes", "created_at", "file_name"],
}
_WORKSPACE = {
    "type": "object",
    "properties": {
        "id": _ID,
        "name": {"type": "string"},
        "icon_url": {"type": "string"},
        "role_type": {"enum": ["owner", "admin", "member"]},
        "workspace_type": {"enum": ["personal", "team"]},
        "enterprise_id": {"type": "string"},
    },
}
_TOKEN = {
    "type": "object",
    "properties": {
        "id": _ID,
        "name": {"type": "string"},
        "hint": {"type": "string"},
        "scopes": {
            "type": ["array", "null"],
            "items": {"enum": ["chat", "workflow", "files", "bots"]},
        },
        "connector_id": {"type": ["string", "null"]},
        "created_at": {"type": "integer"},
        "expires_at": {"type": ["integer", "null"]},
        "last_used_at": {"type": ["integer", "null"]},
        "revoked_at": {"type": ["integer", "null"]},
        "status": {"enum": ["active", "expired", "revoked"]},
        "token": {"type": "string", "description": "only in the response that creates it"},
    },
}
_RUN_BODY = {
    "type": "object",
    "required": ["workflow_id"],
    "properties": {
        "workflow_id": _ID,
        "parameters": {"type": ["object", "string"]},
        "is_async": {"type": "boolean"},
        "bot_id": {"type": "string"},
        "ext": {"type": "object"},
    },
}
_USER = {
    "type": "object",
    "properties": {
        "id": _ID,
        "name": {"type": "string"},
        "workspace_id": _ID,
        "created_at": {"type": "integer"},
    },
}

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "post",
        "/v1/files/upload",
        "Upload a file (multipart field `file`)",
        "files",
        data=_FILE,
        multipart=True,
        scope="files",
    ),
    Operation(
        "get",
        "/v1/files/retrieve",
        "Describe an uploaded file",
        "files",
        data=_FILE,
        query=(("file_id", "string", True),),
        scope="files",
    ),
    Operation(
        "get",
        "/v1/workspaces",
        "The caller's workspaces (space_id)",
        "workspaces",
        data={
            "type": "object",
            "properties": {
                "workspaces": {"type": "array", "items": _WORKSPACE},
                "total_count": {"type": "integer"},
            },
        },
        query=(("page_num", "integer", False), ("page_size", "integer", False)),
    ),
    Operation(
        "get", "/coze_lab/api/health", "Version, user, database and sandbox health", "studio"
    ),
    Operation("get", "/coze_lab/api/me", "The current user", "studio", data=_USER),
    Operation(
        "get",
        "/coze_lab/api/tokens",
        "List personal access tokens",
        "studio",
        data={"type": "object", "properties": {"tokens": {"type": "array", "items": _TOKEN}}},
    ),
    Operation(
        "post",
        "/coze_lab/api/tokens",
        "Create a personal access token",
        "studio",
        data=_TOKEN,
        body={
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "maxLength": 100},
                "expires_in_days": {"type": ["integer", "null"], "minimum": 1, "maximum": 3650},
                "scopes": {
                    "type": "array",
                    "items": {"enum": ["chat", "workflow", "files", "bots"]},
                },
                "connector_id": {"enum": ["1024", "999", None]},
            },
        },
    ),
    Operation(
        "delete",
        "/coze_lab/api/tokens/{token_id}",
        "Revoke a personal access token",
        "studio",
        data=_TOKEN,
    ),
    Operation(
        "post",
        "/v1/workflow/run",
        "Run the published workflow; waits for the outputs unless is_async",
        "workflow",
        data={"type": "string", "description": "the end node's outputs as JSON text"},
        body=_RUN_BODY,
        scope="workflow",
    ),
    Operation(
        "post",
        "/v1/workflow/stream_run",
        "Run and stream events (SSE: Message, Interrupt, Error, Done)",
        "workflow",
        body=_RUN_BODY,
        scope="workflow",
        stream=True,
    ),
    Operation(
        "post",
        "/v1/workflow/stream_resume",
        "Answer an interrupt and stream on",
        "workflow",
        body={
            "type": "object",
            "required": ["workflow_id", "event_id"],
            "properties": {
                "workflow_id": _ID,
                "event_id": _ID,
                "resume_data": {},
                "interrupt_type": {"type": "integer"},
            },
        },
        scope="workflow",
        stream=True,
    ),
    Operation(
        "get",
        "/v1/workflows/{workflow_id}/run_histories/{execute_id}",
        "A run's status, outputs and node states",
        "workflow",
        data={"type": "array", "items": {"type": "object"}},
        scope="workflow",
    ),
    Operation(
        "get",
        "/v1/workflows/{workflow_id}/run_histories/{execute_id}/execute_nodes/{node_execute_uuid}",
        "One node's output in a run",
        "workflow",
        data={"type": "array", "items": {"type": "object"}},
        scope="workflow",
    ),
    Operation("get", "/coze_lab/api/workflows", "Your workflows", "studio"),
    Operation(
        "post",
        "/coze_lab/api/workflows",
        "Save a definition as the draft (upsert by name); publish=true also publishes",
        "studio",
        body={"type": "object"},
    ),
    Operation("get", "/coze_lab/api/workflows/{workflow_id}", "A workflow and its draft", "studio"),
    Operation("delete", "/coze_lab/api/workflows/{workflow_id}", "Delete a workflow", "studio"),
    Operation(
        "post",
        "/coze_lab/api/workflows/{workflow_id}/publish",
        "Publish the draft as the next version",
        "studio",
    ),
    Operation(
        "post",
        "/coze_lab/api/workflows/{workflow_id}/runs",
        "Run the draft",
        "studio",
        body={"type": "object", "properties": {"parameters": {"type": "object"}}},
    ),
    Operation(
        "get",
        "/coze_lab/api/runs",
        "Your runs, newest first",
        "studio",
        query=(("workflow_id", "string", False), ("limit", "integer", False)),
    ),
    Operation("get", "/coze_lab/api/runs/{run_id}", "A run's trace: every node's record", "studio"),
    Operation("post", "/coze_lab/api/runs/{run_id}/cancel", "Stop a run", "studio"),
    Operation(
        "get",
        "/coze_lab/api/runs/{run_id}/events",
        "Every event of a run (SSE; Last-Event-ID replays)",
        "studio",
        query=(("after", "integer", False),),
        stream=True,
    ),
    Operation(
        "get",
        "/coze_lab/api/interrupts",
        "Pending questions across your runs",
        "studio",
        query=(("run_id", "string", False),),
    ),
    Operation(
        "post",
        "/coze_lab/api/interrupts/{event_id}/resume",
        "Answer a question",
        "studio",
        body={"type": "object", "required": ["data"], "properties": {"data": {}}},
    ),
    Operation("get", "/coze_lab/openapi.json", "This document", "meta", public=True),
    Operation(
        "get",
        "/coze_lab/sdk/{asset}",
        "Web SDK: the chat page (`chat?bot_id=...#token=pat_...`) and `embed.js`",
        "meta",
        public=True,
    ),
)


# ---- bots, conversations, chats -----------------------------------------------------------
_OBJ = {"type": "object"}
_STR = {"type": "string"}
_MESSAGE = {
    "type": "object",
    "properties": {
        "id": _ID,
        "conversation_id": _ID,
        "section_id": _ID,
        "chat_id": _STR,
        "bot_id": _STR,
        "role": {"enum": ["user", "assistant"]},
        "type": {
            "enum": [
                "question",
                "answer",
                "function_call",
                "tool_output",
                "tool_response",
                "follow_up",
                "verbose",
            ]
        },
        "content": _STR,
        "content_type": {"enum": ["text", "object_string", "card"]},
        "meta_data": _OBJ,
        "created_at": {"type": "integer"},
        "updated_at": {"type": "integer"},
    },
}
_CHAT = {
    "type": "object",
    "properties": {
        "id": _ID,
        "conversation_id": _ID,
        "section_id": _ID,
        "bot_id": _ID,
        "status": {
            "enum": ["created", "in_progress", "completed", "failed", "requires_action", "canceled"]
        },
        "usage": _OBJ,
        "last_error": _OBJ,
        "required_action": _OBJ,
        "created_at": {"type": "integer"},
        "completed_at": {"type": "integer"},
        "failed_at": {"type": "integer"},
    },
}
_CONVERSATION = {
    "type": "object",
    "properties": {
        "id": _ID,
        "last_section_id": _ID,
        "name": _STR,
        "meta_data": _OBJ,
        "connector_id": _STR,
        "created_at": {"type": "integer"},
    },
}
_BOT = {"type": "object", "properties": {"bot_id": _ID, "name": _STR, "version": _STR}}
_MESSAGE_IN = {
    "type": "object",
    "required": ["role", "content"],
    "properties": {
        "role": {"enum": ["user", "assistant"]},
        "content": _STR,
        "content_type": {"enum": ["text", "object_string", "card"]},
        "meta_data": _OBJ,
    },
}
_CHAT_BODY = {
    "type": "object",
    "required": ["bot_id"],
    "properties": {
        "bot_id": _ID,
        "user_id": _STR,
        "additional_messages": {"type": "array", "items": _MESSAGE_IN},
        "stream": {"type": "boolean"},
        "custom_variables": _OBJ,
        "auto_save_history": {"type": "boolean"},
        "meta_data": _OBJ,
    },
}
_BOT_BODY = {
    "type": "object",
    "properties": {
        "name": _STR,
        "description": _STR,
        "prompt_info": _OBJ,
        "model_info_config": _OBJ,
        "workflow_id_list": _OBJ,
        "plugin_id_list": _OBJ,
        "onboarding_info": _OBJ,
        "variables": {"type": "array"},
        "functions": {"type": "array", "description": "client-side tools (requires_action)"},
    },
}
_CONV_Q = (("conversation_id", "string", True),)
_CHAT_Q = (("conversation_id", "string", True), ("chat_id", "string", True))
_MSG_Q = (("conversation_id", "string", True), ("message_id", "string", True))
_LIST = {"type": "array", "items": _MESSAGE}


def _chat_ops() -> tuple[Operation, ...]:
    op = Operation
    return (
        op(
            "post",
            "/v1/bot/create",
            "Create a bot (draft)",
            "bots",
            _BOT,
            body=_BOT_BODY,
            scope="bots",
        ),
        op("post", "/v1/bot/update", "Update a bot's draft", "bots", body=_BOT_BODY, scope="bots"),
        op(
            "post",
            "/v1/bot/publish",
            "Publish the draft as a new version to connectors",
            "bots",
            _BOT,
            body={
                "type": "object",
                "properties": {"bot_id": _ID, "connector_ids": {"type": "array"}},
            },
            scope="bots",
        ),
        op(
            "get",
            "/v1/bot/get_online_info",
            "The newest published configuration",
            "bots",
            _BOT,
            query=(("bot_id", "string", True),),
            scope="bots",
        ),
        op(
            "get",
            "/v1/bots",
            "A page of your bots",
            "bots",
            query=(
                ("workspace_id", "string", False),
                ("publish_status", "string", False),
                ("connector_id", "string", False),
                ("page_num", "integer", False),
                ("page_size", "integer", False),
            ),
            scope="bots",
        ),
        op(
            "get",
            "/v1/bots/{bot_id}",
            "A bot: published (default) or draft",
            "bots",
            _BOT,
            query=(("is_published", "boolean", False),),
            scope="bots",
        ),
        op(
            "post",
            "/v1/bots/{bot_id}/unpublish",
            "Stop serving a bot on a connector",
            "bots",
            body={"type": "object", "properties": {"connector_id": _STR}},
            scope="bots",
        ),
        op(
            "get",
            "/v1/space/published_bots_list",
            "Bots published to the API connector",
            "bots",
            query=(
                ("space_id", "string", True),
                ("page_index", "integer", False),
                ("page_size", "integer", False),
            ),
            scope="bots",
        ),
        op(
            "post",
            "/v1/conversation/create",
            "Create a conversation",
            "conversations",
            _CONVERSATION,
            body={
                "type": "object",
                "properties": {"bot_id": _ID, "messages": {"type": "array", "items": _MESSAGE_IN}},
            },
            scope="chat",
        ),
        op(
            "get",
            "/v1/conversation/retrieve",
            "A conversation",
            "conversations",
            _CONVERSATION,
            query=_CONV_Q,
            scope="chat",
        ),
        op(
            "get",
            "/v1/conversations",
            "Your conversations with a bot",
            "conversations",
            query=(
                ("bot_id", "string", True),
                ("page_num", "integer", False),
                ("page_size", "integer", False),
                ("sort_order", "string", False),
            ),
            scope="chat",
        ),
        op(
            "put",
            "/v1/conversations/{conversation_id}",
            "Rename a conversation",
            "conversations",
            _CONVERSATION,
            body={"type": "object", "properties": {"name": _STR}},
            scope="chat",
        ),
        op(
            "delete",
            "/v1/conversations/{conversation_id}",
            "Delete a conversation",
            "conversations",
            scope="chat",
        ),
        op(
            "post",
            "/v1/conversations/{conversation_id}/clear",
            "Clear the context: start a new section",
            "conversations",
            scope="chat",
        ),
        op(
            "post",
            "/v1/conversation/message/create",
            "Add a message",
            "messages",
            _MESSAGE,
            query=_CONV_Q,
            body=_MESSAGE_IN,
            scope="chat",
        ),
        op(
            "post",
            "/v1/conversation/message/list",
            "Messages, cursor pages both ways (first_id, last_id, has_more)",
            "messages",
            _LIST,
            query=_CONV_Q,
            body={
                "type": "object",
                "properties": {
                    "order": {"enum": ["asc", "desc"]},
                    "chat_id": _STR,
                    "before_id": _STR,
                    "after_id": _STR,
                    "limit": {"type": "integer"},
                },
            },
            scope="chat",
        ),
        op(
            "get",
            "/v1/conversation/message/retrieve",
            "A message",
            "messages",
            _MESSAGE,
            query=_MSG_Q,
            scope="chat",
        ),
        op(
            "post",
            "/v1/conversation/message/modify",
            "Edit a message",
            "messages",
            _MESSAGE,
            query=_MSG_Q,
            body=_MESSAGE_IN,
            scope="chat",
        ),
        op(
            "post",
            "/v1/conversation/message/delete",
            "Delete a message",
            "messages",
            _MESSAGE,
            query=_MSG_Q,
            scope="chat",
        ),
        op(
            "post",
            "/v3/chat",
            "Chat with a bot (stream: SSE with Coze's chat events)",
            "chat",
            _CHAT,
            query=(("conversation_id", "string", False),),
            body=_CHAT_BODY,
            scope="chat",
        ),
        op(
            "get",
            "/v3/chat/retrieve",
            "A chat's status and usage",
            "chat",
            _CHAT,
            query=_CHAT_Q,
            scope="chat",
        ),
        op(
            "post",
            "/v3/chat/retrieve",
            "A chat's status and usage (cozepy's method)",
            "chat",
            _CHAT,
            query=_CHAT_Q,
            scope="chat",
        ),
        op(
            "get",
            "/v3/chat/message/list",
            "What a chat wrote",
            "chat",
            _LIST,
            query=_CHAT_Q,
            scope="chat",
        ),
        op(
            "post",
            "/v3/chat/cancel",
            "Stop a running chat",
            "chat",
            _CHAT,
            body={"type": "object", "properties": {"conversation_id": _ID, "chat_id": _ID}},
            scope="chat",
        ),
        op(
            "post",
            "/v3/chat/submit_tool_outputs",
            "Continue a requires_action chat",
            "chat",
            _CHAT,
            query=_CHAT_Q,
            body={
                "type": "object",
                "properties": {"tool_outputs": {"type": "array"}, "stream": {"type": "boolean"}},
            },
            scope="chat",
        ),
        op("get", "/coze_lab/api/bots", "Your bots (drafts)", "studio"),
        op("post", "/coze_lab/api/bots", "Create a bot", "studio", _BOT, body=_BOT_BODY),
        op("get", "/coze_lab/api/bots/{bot_id}", "A bot's draft", "studio", _BOT),
        op(
            "put",
            "/coze_lab/api/bots/{bot_id}",
            "Edit a bot's draft",
            "studio",
            _BOT,
            body=_BOT_BODY,
        ),
        op("delete", "/coze_lab/api/bots/{bot_id}", "Delete a bot", "studio"),
        op(
            "post",
            "/coze_lab/api/bots/{bot_id}/publish",
            "Publish a bot",
            "studio",
            _BOT,
            body={"type": "object", "properties": {"connector_ids": {"type": "array"}}},
        ),
        op(
            "post",
            "/coze_lab/api/bots/{bot_id}/chat",
            "Chat with the draft on the Playground (SSE, Coze's chat events)",
            "studio",
            body={
                "type": "object",
                "properties": {
                    "message": _STR,
                    "conversation_id": _ID,
                    "custom_variables": _OBJ,
                    "stream": {"type": "boolean"},
                },
            },
            stream=True,
        ),
        op(
            "get",
            "/coze_lab/api/bots/{bot_id}/conversations",
            "A bot's conversations",
            "studio",
            query=(("connector_id", "string", False),),
        ),
        op(
            "get",
            "/coze_lab/api/conversations/{conversation_id}/messages",
            "A Playground conversation's messages, oldest first",
            "studio",
            query=(("after_id", "string", False), ("limit", "integer", False)),
        ),
        op(
            "post",
            "/coze_lab/api/conversations/{conversation_id}/clear",
            "Clear a Playground conversation's context",
            "studio",
        ),
        op(
            "post",
            "/coze_lab/api/chats/{chat_id}/cancel",
            "Stop a Playground chat",
            "studio",
            _CHAT,
        ),
        *_table_ops(),
    )


def _table_ops() -> tuple[Operation, ...]:
    op = Operation
    field = {
        "type": "object",
        "properties": {
            "name": _STR,
            "type": {"enum": ["text", "number", "float", "boolean", "date"]},
            "description": _STR,
            "required": {"type": "boolean"},
        },
    }
    create = {
        "type": "object",
        "required": ["name", "fields"],
        "properties": {
            "name": _STR,
            "description": _STR,
            "bot_id": _ID,
            "fields": {"type": "array", "items": field},
        },
    }
    path = "/coze_lab/api/tables/{table_id}"
    return (
        op("get", "/coze_lab/api/tables", "Your user tables", "studio"),
        op("post", "/coze_lab/api/tables", "Create a user table (real SQL)", "studio", body=create),
        op("get", path, "A user table", "studio"),
        op("delete", path, "Delete a table and its rows", "studio"),
        op(
            "post",
            path + "/fields",
            "Add fields to the draft",
            "studio",
            body={"type": "object", "properties": {"fields": {"type": "array", "items": field}}},
        ),
        op("post", path + "/publish", "Give the online table the draft's fields", "studio"),
        op(
            "get",
            path + "/rows",
            "Your rows",
            "studio",
            query=(("scene", "string", False), ("limit", "integer", False)),
        ),
        op(
            "post",
            path + "/rows",
            "Add a row",
            "studio",
            body={"type": "object", "properties": {"values": _OBJ, "scene": _STR}},
        ),
    )


OPERATIONS = OPERATIONS + _chat_ops()

_PLUGIN_TOOL = {
    "type": "object",
    "properties": {
        "id": _ID,
        "name": {"type": "string"},
        "description": {"type": "string"},
        "method": {"type": "string"},
        "path": {"type": "string"},
        "parameters": {"type": "object", "description": "JSON schema of the arguments"},
    },
}
_PLUGIN = {
    "type": "object",
    "properties": {
        "id": _ID,
        "name": {"type": "string"},
        "description": {"type": "string"},
        "manifest": {"type": "object", "description": "without secrets"},
        "server_url": {"type": "string"},
        "online_version": {"type": ["integer", "null"]},
        "auth": {"type": "object", "description": "auth type and whether it is set up"},
        "tools": {"type": "array", "items": _PLUGIN_TOOL},
        "openapi": {"type": ["object", "null"]},
        "warnings": {"type": "array", "items": {"type": "object"}},
    },
}
_PLUGIN_SOURCE = {
    "type": "object",
    "description": "`openapi` (JSON/YAML text or object) or `url`; invalid input answers 400 "
    "with every problem and its JSON pointer in `detail.problems`",
    "properties": {
        "openapi": {"type": ["string", "object"]},
        "url": {"type": "string"},
        "manifest": {"type": "object"},
        "server_url": {"type": "string"},
        "credentials": {"type": "object"},
    },
}
_TOOL_RESULT = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "output": {"type": "string"},
        "status_code": {"type": ["integer", "null"]},
        "latency_ms": {"type": "number"},
        "error": {"type": ["string", "null"]},
        "authorization_url": {"type": ["string", "null"]},
        "data": {},
        "call_id": {"type": ["string", "null"]},
        "request": {"type": ["object", "null"], "description": "summary without secrets"},
    },
}
_PLUGIN_OPS = (
    Operation(
        "get",
        "/coze_lab/api/plugins",
        "Your plugins",
        "plugins",
        {"type": "object", "properties": {"plugins": {"type": "array", "items": _PLUGIN}}},
    ),
    Operation(
        "post",
        "/coze_lab/api/plugins",
        "Import a plugin from an OpenAPI 3.0/3.1 document and a manifest",
        "plugins",
        _PLUGIN,
        body=_PLUGIN_SOURCE,
    ),
    Operation(
        "get",
        "/coze_lab/api/plugins/{plugin_id}",
        "A plugin: draft, or the online version with scene=online",
        "plugins",
        _PLUGIN,
        query=(("scene", "string", False),),
    ),
    Operation(
        "put",
        "/coze_lab/api/plugins/{plugin_id}",
        "Replace the draft's document and/or manifest",
        "plugins",
        _PLUGIN,
        body=_PLUGIN_SOURCE,
    ),
    Operation("delete", "/coze_lab/api/plugins/{plugin_id}", "Delete a plugin", "plugins"),
    Operation(
        "post",
        "/coze_lab/api/plugins/{plugin_id}/publish",
        "Copy the draft to the next online version (atomically)",
        "plugins",
    ),
    Operation(
        "put",
        "/coze_lab/api/plugins/{plugin_id}/credentials",
        "Store your credentials (encrypted; never returned)",
        "plugins",
        body={
            "type": "object",
            "required": ["credentials"],
            "properties": {"credentials": {"type": "object"}},
        },
    ),
    Operation(
        "delete",
        "/coze_lab/api/plugins/{plugin_id}/credentials",
        "Forget your credentials and OAuth authorization",
        "plugins",
    ),
    Operation(
        "post",
        "/coze_lab/api/plugins/{plugin_id}/oauth/authorize",
        "A fresh OAuth authorization URL (state + PKCE)",
        "plugins",
        body={"type": "object", "properties": {"scene": {"enum": ["draft", "online"]}}},
    ),
    Operation(
        "get",
        "/coze_lab/api/plugins/{plugin_id}/calls",
        "Recorded tool calls, newest first (no secrets)",
        "plugins",
        query=(("limit", "integer", False),),
    ),
    Operation(
        "post",
        "/coze_lab/api/plugins/{plugin_id}/tools/{tool_id}/debug",
        "Call a tool from the studio",
        "plugins",
        _TOOL_RESULT,
        body={
            "type": "object",
            "properties": {
                "arguments": {"type": "object"},
                "scene": {"enum": ["draft", "online"]},
            },
        },
    ),
    Operation(
        "get",
        "/coze_lab/api/plugins/oauth/callback",
        "Where OAuth providers send users back (checks the state)",
        "plugins",
        query=(("state", "string", True), ("code", "string", False), ("error", "string", False)),
        public=True,
    ),
)
OPERATIONS = (*OPERATIONS, *_PLUGIN_OPS)


def _operation(op: Operation) -> dict[str, Any]:
    envelope = {
        "type": "object",
        "properties": {"code": {"const": 0}, "msg": {"type": "string"}, "data": op.data},
        "required": ["code", "msg"],
    }
    spec: dict[str, Any] = {
        "summary": op.summary,
        "tags": [op.tag],
        "operationId": op.method + "_" + re.sub(r"[^a-z0-9]+", "_", op.path.lower()).strip("_"),
        "responses": {
            "200": {
                "description": "success",
                "content": {"application/json": {"schema": envelope}},
            },
            "4XX": {"$ref": "#/components/responses/Error"},
        },
    }
    params = [
        {"name": name, "in": "query", "required": required, "schema": {"type": kind}}
        for name, kind, required in op.query
    ]
    params += [
        {"name": part[1:-1], "in": "path", "required": True, "schema": _ID}
        for part in op.path.split("/")
        if part.startswith("{")
    ]
    if params:
        spec["parameters"] = params
    if op.body is not None:
        spec["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": op.body}},
        }
    if op.multipart:
        spec["requestBody"] = {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {"file": {"type": "string", "format": "binary"}},
                        "required": ["file"],
                    }
                }
            },
        }
    if op.stream:
        spec["responses"]["200"] = {
            "description": "server-sent events",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    if op.public:
        spec["security"] = []
    elif op.scope:
        spec["description"] = f"Needs a token with the `{op.scope}` scope (or no scopes)."
    return spec


def document() -> dict[str, Any]:
    """The OpenAPI document of every coze_lab endpoint."""
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "coze_lab",
            "version": __version__,
            "description": "Coze-compatible OpenAPI (`/v1`, `/v3`, personal access tokens) and the "
            "coze_lab studio API. Inside Jupyter every path is under `<base_url>coze_lab/`.",
        },
        "security": [{"personalAccessToken": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"personalAccessToken": {"type": "http", "scheme": "bearer"}},
            "responses": {
                "Error": {
                    "description": "Coze-style error",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "code": {"type": "integer"},
                                    "msg": {"type": "string"},
                                },
                                "required": ["code", "msg"],
                            }
                        }
                    },
                }
            },
        },
    }
