"""JSON schemas of the HTTP API's bodies, for the route table's operations (``routes.py``)."""

from __future__ import annotations

#: a Coze id: a positive 64-bit integer written in decimal (Coze's ids have 19 digits)
ID = {"type": "string", "pattern": "^([1-9][0-9]{0,17}|[1-8][0-9]{18})$"}
#: the same, or empty (an optional id left out)
OPTIONAL_ID_PATTERN = "^([1-9][0-9]{0,17}|[1-8][0-9]{18})?$"
#: an id a body may leave out: empty or "0" mean none (as Coze clients send them)
OPTIONAL_ID = {"type": "string", "pattern": "^(0|[1-9][0-9]{0,17}|[1-8][0-9]{18})?$"}
FILE = {
    "type": "object",
    "properties": {
        "id": ID,
        "bytes": {"type": "integer"},
        "created_at": {"type": "integer"},
        "file_name": {"type": "string"},
        "content_type": {"type": "string"},
    },
    "required": ["id", "bytes", "created_at", "file_name"],
}
WORKSPACE = {
    "type": "object",
    "properties": {
        "id": ID,
        "name": {"type": "string"},
        "icon_url": {"type": "string"},
        "role_type": {"enum": ["owner", "admin", "member"]},
        "workspace_type": {"enum": ["personal", "team"]},
        "enterprise_id": {"type": "string"},
    },
}
ROLE = {"enum": ["owner", "admin", "member"]}
#: the studio's ``?space_id=`` of lists and creates (default: the personal space)
SPACE_Q = (("space_id", "string", False),)
WORKSPACE_MEMBER = {
    "type": "object",
    "properties": {
        "user_id": ID,
        "role_type": ROLE,
        "user_nickname": {"type": "string"},
        "user_unique_name": {"type": "string"},
        "avatar_url": {"type": "string"},
    },
}
ID_LIST = {"type": "array", "items": ID}
SPACE = {
    "type": "object",
    "properties": {
        "id": ID,
        "name": {"type": "string"},
        "workspace_type": {"enum": ["personal", "team"]},
        "role": ROLE,
        "owner_id": ID,
        "created_at": {"type": "integer"},
    },
}
MEMBER = {
    "type": "object",
    "properties": {
        "user_id": ID,
        "name": {"type": "string"},
        "role": ROLE,
        "joined_at": {"type": "integer"},
    },
}
TOKEN = {
    "type": "object",
    "properties": {
        "id": ID,
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
RUN_BODY = {
    "type": "object",
    "required": ["workflow_id"],
    "properties": {
        "workflow_id": ID,
        "parameters": {"type": ["object", "string"]},
        "is_async": {"type": "boolean"},
        "bot_id": {"type": "string"},
        "ext": {"type": "object"},
        "version": {
            "type": ["string", "integer"],
            "description": "run this published version ('3' or 'v3'; default: the newest)",
        },
        "workflow_version": {"type": ["string", "integer"], "description": "same as version"},
    },
}
RETRY_BODY = {
    "type": "object",
    "properties": {
        "from_node": {
            "type": "string",
            "description": "the node to run again (default: the node the run failed on)",
        },
        "node_changes": {
            "type": "object",
            "description": "{node id: {key: value}}, the retried node only: 'inputs' and "
            "'outputs' replace its bindings and outputs, other keys ('code', 'prompt', "
            "'model', ...) replace those keys of its configuration",
            "additionalProperties": {"type": "object"},
        },
    },
}
CREATOR = {
    "type": "object",
    "properties": {"id": ID, "name": {"type": "string"}},
    "required": ["id", "name"],
}
WORKFLOW_BASIC = {
    "type": "object",
    "properties": {
        "workflow_id": ID,
        "workflow_name": {"type": "string"},
        "description": {"type": "string"},
        "icon_url": {"type": "string"},
        "app_id": {"type": "string"},
        "created_at": {"type": "integer"},
        "updated_at": {"type": "integer"},
        "creator": CREATOR,
        "published_version": {"type": "string"},
    },
    "required": ["workflow_id", "workflow_name", "description", "icon_url", "app_id"],
}
WORKFLOW_VERSION = {
    "type": "object",
    "properties": {
        "version": {"type": "string"},
        "description": {"type": "string"},
        "created_at": {"type": "string"},
        "updated_at": {"type": "string"},
        "workflow_id": ID,
        "creator": CREATOR,
    },
    "required": ["version", "description", "created_at", "updated_at", "workflow_id", "creator"],
}
USER = {
    "type": "object",
    "properties": {
        "id": ID,
        "name": {"type": "string"},
        "workspace_id": ID,
        "created_at": {"type": "integer"},
    },
}

OBJ = {"type": "object"}
STR = {"type": "string"}
MESSAGE = {
    "type": "object",
    "properties": {
        "id": ID,
        "conversation_id": ID,
        "section_id": ID,
        "chat_id": STR,
        "bot_id": STR,
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
        "content": STR,
        "content_type": {"enum": ["text", "object_string", "card"]},
        "meta_data": OBJ,
        "created_at": {"type": "integer"},
        "updated_at": {"type": "integer"},
    },
}
CHAT = {
    "type": "object",
    "properties": {
        "id": ID,
        "conversation_id": ID,
        "section_id": ID,
        "bot_id": ID,
        "status": {
            "enum": ["created", "in_progress", "completed", "failed", "requires_action", "canceled"]
        },
        "usage": OBJ,
        "last_error": OBJ,
        "required_action": OBJ,
        "created_at": {"type": "integer"},
        "completed_at": {"type": "integer"},
        "failed_at": {"type": "integer"},
    },
}
CONVERSATION = {
    "type": "object",
    "properties": {
        "id": ID,
        "last_section_id": ID,
        "name": STR,
        "meta_data": OBJ,
        "connector_id": STR,
        "created_at": {"type": "integer"},
    },
}
BOT = {"type": "object", "properties": {"bot_id": ID, "name": STR, "version": STR}}
MESSAGE_IN = {
    "type": "object",
    "required": ["role", "content"],
    "properties": {
        "role": {"enum": ["user", "assistant"]},
        "content": STR,
        "content_type": {"enum": ["text", "object_string", "card"]},
        "meta_data": {"type": ["object", "null"]},
    },
}
CHAT_BODY = {
    "type": "object",
    "required": ["bot_id"],
    "properties": {
        "bot_id": ID,
        "user_id": STR,
        "additional_messages": {"type": "array", "items": MESSAGE_IN},
        "stream": {"type": "boolean"},
        "custom_variables": OBJ,
        "auto_save_history": {"type": "boolean"},
        "meta_data": OBJ,
    },
}
BOT_BODY = {
    "type": "object",
    "properties": {
        "name": STR,
        "description": STR,
        "prompt_info": OBJ,
        "model_info_config": OBJ,
        "workflow_id_list": OBJ,
        "plugin_id_list": OBJ,
        "onboarding_info": OBJ,
        "suggest_reply_info": {
            "type": "object",
            "properties": {
                "reply_mode": {"enum": ["disable", "enable", "customized"]},
                "customized_prompt": STR,
            },
            "description": "suggested follow-up questions after each answer",
        },
        "icon_file_id": {
            "type": "string",
            "description": "not supported (400): set icon_url",
        },
        "icon_url": STR,
        "variables": {"type": "array"},
        "functions": {"type": "array", "description": "client-side tools (requires_action)"},
        "file_tools": {
            "type": "boolean",
            "description": "list_files, read_file and write_file on the session's workspace",
        },
    },
}
CONV_Q = (("conversation_id", "string", True),)
CHAT_Q = (("conversation_id", "string", True), ("chat_id", "string", True))
MSG_Q = (("conversation_id", "string", True), ("message_id", "string", True))
LIST = {"type": "array", "items": MESSAGE}

PLUGIN_TOOL = {
    "type": "object",
    "properties": {
        "id": ID,
        "name": {"type": "string"},
        "description": {"type": "string"},
        "method": {"type": "string"},
        "path": {"type": "string"},
        "parameters": {"type": "object", "description": "JSON schema of the arguments"},
    },
}
PLUGIN = {
    "type": "object",
    "properties": {
        "id": ID,
        "name": {"type": "string"},
        "description": {"type": "string"},
        "manifest": {"type": "object", "description": "without secrets"},
        "server_url": {"type": "string"},
        "online_version": {"type": ["integer", "null"]},
        "auth": {"type": "object", "description": "auth type and whether it is set up"},
        "tools": {"type": "array", "items": PLUGIN_TOOL},
        "openapi": {"type": ["object", "null"]},
        "warnings": {"type": "array", "items": {"type": "object"}},
    },
}
PLUGIN_SOURCE = {
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
TOOL_RESULT = {
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

FILE_EVENT = {
    "type": "object",
    "properties": {
        "id": ID,
        "space_id": ID,
        "conversation_id": ID,
        "path": {"type": "string", "description": "logical path, e.g. output/summary.md"},
        "action": {"enum": ["upload", "write"]},
        "size": {"type": "integer"},
        "user_id": ID,
        "chat_id": {"type": ["string", "null"]},
        "message_id": {"type": ["string", "null"]},
        "run_id": {"type": ["string", "null"]},
        "node_id": {"type": ["string", "null"]},
        "created_at": {"type": "integer"},
    },
}
