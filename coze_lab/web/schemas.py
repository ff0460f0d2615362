"""JSON schemas of the HTTP API's bodies, for the route table's operations (``routes.py``)."""

from __future__ import annotations

from typing import Any

#: a Coze id: a positive 64-bit integer written in decimal (Coze's ids have 19 digits)
ID = {"type": "string", "pattern": "^([1-9][0-9]{0,17}|[1-8][0-9]{18})$"}
#: the same, or empty (an optional id left out)
OPTIONAL_ID_PATTERN = "^([1-9][0-9]{0,17}|[1-8][0-9]{18})?$"
#: an id a body may leave out: empty or "0" mean none (as Coze clients send them)
OPTIONAL_ID = {"type": "string", "pattern": "^(0|[1-9][0-9]{0,17}|[1-8][0-9]{18})?$"}


def between(low: int, high: int) -> dict[str, Any]:
    """An integer within ``low..high`` (what ``web.params.int_value`` enforces)."""
    return {"type": "integer", "minimum": low, "maximum": high}


#: a page number (``page_num``, ``page_index``)
PAGE_NUM = between(1, 10**6)
#: which version of a table or plugin: the draft or the published one
SCENE = {"enum": ["draft", "online"]}
#: a definition's name (``max_name_chars``, default 100)
NAME = {"type": "string", "minLength": 1, "maxLength": 100}
#: a user table's or field's name
IDENTIFIER = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,62}$"}
#: a field's name: an identifier other than the system fields
FIELD_NAME = {**IDENTIFIER, "not": {"enum": ["id", "sys_uid", "created_at"]}}
#: what a client function answered (``tool_outputs`` of a requires_action chat)
TOOL_OUTPUTS = {
    "type": "array",
    "minItems": 1,
    "description": "each tool_call_id once",
    "items": {
        "type": "object",
        "required": ["tool_call_id", "output"],
        "properties": {"tool_call_id": {"type": "string"}, "output": {"type": "string"}},
    },
}
#: connectors a bot is published to (default: the API)
CONNECTOR_IDS = {"type": "array", "minItems": 1, "items": {"enum": ["1024", "999"]}}
#: a team space's name
SPACE_NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    "pattern": "^[^\\x00-\\x1f]*$",
    "not": {"anyOf": [{"pattern": "^[0-9]+$"}, {"const": "personal"}]},
    "description": "not a number nor `personal` (they name spaces); no control characters",
}
#: an id a body may leave empty (read as absent)
ID_OR_EMPTY = {"type": "string", "pattern": OPTIONAL_ID_PATTERN}
#: a published version as Coze writes it: 3, "3" or "v3" (empty: the newest)
VERSION = {
    "anyOf": [
        {"type": "integer", "minimum": 1, "maximum": 10**9},
        {"type": "string", "pattern": "^([vV]?[1-9][0-9]{0,8}|[vV]?1000000000)?$"},
    ]
}
#: the version a page of versions ended at (``page_token``)
VERSION_TOKEN = {"type": "string", "pattern": "^([vV]?[1-9][0-9]{0,8})?$"}
#: the publish_status filter of the workflow lists (empty: all)
WORKFLOW_PUBLISH_STATUS = {"enum": ["", "all", "published_online", "unpublished_draft"]}
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
            "items": {"enum": ["chat", "workflow", "files", "bots", "knowledge"]},
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
WORKSPACE_FLAG = {
    "type": "boolean",
    "description": "coze_lab: run in a workspace of its own (<space>/run-<id>/: input/, "
    "scratchpad/, output/ mounted into its code nodes)",
}
WORKSPACE_FILES = {
    "type": "array",
    "maxItems": 20,
    "items": ID,
    "description": "coze_lab: uploaded file ids copied to the run's input/ (with workspace)",
}
#: files for a run's input/ need the run's own workspace
WORKSPACE_RULE = {
    "if": {
        "required": ["workspace_files"],
        "properties": {"workspace_files": {"minItems": 1}},
    },
    "then": {"required": ["workspace"], "properties": {"workspace": {"const": True}}},
}
RUN_BODY = {
    **WORKSPACE_RULE,
    "type": "object",
    "required": ["workflow_id"],
    "properties": {
        "workflow_id": ID,
        "parameters": {"type": ["object", "string"]},
        "is_async": {"type": "boolean"},
        "bot_id": {
            "type": "string",
            "description": "the bot whose variables the run's variable and assign nodes use",
        },
        "ext": {
            "type": "object",
            "description": "user_id: the end user whose variables they are (default: you)",
        },
        "version": {
            **VERSION,
            "description": "run this published version ('3' or 'v3'; default: the newest)",
        },
        "workflow_version": {**VERSION, "description": "same as version"},
        "workspace": WORKSPACE_FLAG,
        "workspace_files": WORKSPACE_FILES,
    },
}
RETRY_BODY = {
    "type": "object",
    "properties": {
        "from_node": {
            "type": "string",
            "minLength": 1,
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
#: conditions on a user table's rows
TABLE_WHERE = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["field"],
        "properties": {
            "field": STR,
            "op": {
                "enum": [
                    "==",
                    "!=",
                    ">",
                    ">=",
                    "<",
                    "<=",
                    "contains",
                    "not_contains",
                    "empty",
                    "not_empty",
                ]
            },
            "value": {},
        },
    },
}
#: an object a body may leave null (read as absent)
OBJ_OR_NULL = {"type": ["object", "null"]}
#: text a definition may leave null (read as empty)
TEXT = {"type": ["string", "null"]}
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
        "content_type": {
            "enum": ["text", "object_string", "card", None],
            "description": "null: text",
        },
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
    # a chat that saves nothing can only be streamed (there would be nothing to poll)
    "if": {
        "required": ["auto_save_history"],
        "properties": {"auto_save_history": {"const": False}},
    },
    "then": {"required": ["stream"], "properties": {"stream": {"const": True}}},
}
BOT_BODY = {
    "type": "object",
    "properties": {
        "name": NAME,
        "description": TEXT,
        "prompt_info": OBJ_OR_NULL,
        "model_info_config": OBJ_OR_NULL,
        "workflow_id_list": OBJ_OR_NULL,
        "plugin_id_list": OBJ_OR_NULL,
        "onboarding_info": OBJ_OR_NULL,
        "variables": {
            "type": "array",
            "maxItems": 100,
            "description": "each keyword once, none starting with `sys_`",
            "items": {
                "type": "object",
                "required": ["keyword"],
                "properties": {
                    "keyword": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$"},
                    "default_value": TEXT,
                    "description": TEXT,
                    "enable": {"type": "boolean"},
                    "user_can_set": {
                        "type": "boolean",
                        "description": "the end user may set it (/v1/variables); default true",
                    },
                    "agent_can_set": {
                        "type": "boolean",
                        "description": "the bot may set it (save_variable tool, workflow"
                        " assign node); default true",
                    },
                },
            },
        },
        "functions": {
            "type": "array",
            "maxItems": 64,
            "description": "client-side tools (requires_action); each name once",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_-]{0,63}$"},
                    "description": TEXT,
                    "parameters": {"type": "object", "description": "a JSON schema of an object"},
                },
            },
        },
        "suggest_reply_info": {
            "type": ["object", "null"],
            "properties": {
                "reply_mode": {"enum": ["disable", "enable", "customized"]},
                "customized_prompt": {"type": ["string", "null"], "maxLength": 2000},
            },
            "description": "suggested follow-up questions after each answer "
            "(customized: a non-empty customized_prompt)",
        },
        "icon_file_id": {
            "type": ["string", "null"],
            "description": "not supported: a non-empty value is a 400 (set icon_url)",
        },
        "icon_url": {"type": ["string", "null"], "maxLength": 1024},
        "save_variables": {
            "type": "boolean",
            "description": "offer the model a save_variable tool (the bot's enabled variables)",
        },
        "file_tools": {
            "type": "boolean",
            "description": "list_files, read_file and write_file on the session's workspace",
        },
        "tables": {
            "type": "array",
            "maxItems": 10,
            "description": "user tables of the bot's space the model queries with SQL (one"
            " tool per table; allow_writes: it may also insert, update and delete)",
            "items": {
                "type": "object",
                "required": ["table_id"],
                "properties": {"table_id": ID, "allow_writes": {"type": "boolean"}},
            },
        },
        "memory": {
            "type": "boolean",
            "description": "long-term personal memory: user.md and skills in the prompt, "
            "memory signals consolidated after each chat",
        },
        "mcp_servers": {
            "type": "array",
            "maxItems": 16,
            "description": "MCP servers of the bot's space, each once; tools: the ones the "
            "model may call (all when left out)",
            "items": {
                "type": "object",
                "required": ["server_id"],
                "properties": {
                    "server_id": {"type": ["string", "integer"]},
                    "tools": {
                        "type": "array",
                        "maxItems": 64,
                        "items": {"type": "string", "minLength": 1, "maxLength": 128},
                    },
                },
            },
        },
        "knowledge": {
            "type": ["object", "null"],
            "properties": {
                "dataset_ids": {"type": ["array", "null"], "maxItems": 20, "items": ID},
                "auto_call": {"type": "boolean"},
                "search_strategy": {"enum": [0, 1, 20, None]},
            },
            "description": "knowledge bases of the bot's space; auto_call true: recall before "
            "answering, false: a recall_knowledge tool",
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
        "url": {"type": "string", "minLength": 1},
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

#: ``/v1/bot/create``: a name is needed
BOT_CREATE_BODY = {**BOT_BODY, "required": ["name"]}
#: ``/v1/bot/update``: which bot
BOT_UPDATE_BODY = {
    **BOT_BODY,
    "properties": {"bot_id": ID, **BOT_BODY["properties"]},
    "required": ["bot_id"],
}
#: ``/v1/variables``: an end user's values of a bot's variables
VARIABLE_VALUE = {
    "type": "object",
    "properties": {
        "keyword": {"type": "string"},
        "value": {"type": "string"},
        "create_time": {"type": "integer"},
        "update_time": {"type": "integer"},
    },
    "required": ["keyword", "value"],
}
VARIABLE_VALUES = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": VARIABLE_VALUE}},
}
VARIABLES_UPDATE = {
    "type": "object",
    "required": ["bot_id", "connector_uid", "data"],
    "properties": {
        "bot_id": ID,
        "app_id": {"type": "string"},
        "connector_id": {"type": "string"},
        "connector_uid": {"type": "string", "minLength": 1, "maxLength": 255},
        "data": {
            "type": "array",
            "minItems": 1,
            "maxItems": 100,
            "items": {
                "type": "object",
                "required": ["keyword", "value"],
                "properties": {
                    "keyword": {"type": "string", "minLength": 1},
                    "value": {"type": "string", "maxLength": 10000},
                },
            },
        },
    },
}
#: the studio's view of a bot's variables for an end user
VARIABLE_STATES = {
    "type": "object",
    "properties": {
        "variables": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "keyword": {"type": "string"},
                    "value": {"type": "string"},
                    "default_value": {"type": "string"},
                    "description": {"type": "string"},
                    "enable": {"type": "boolean"},
                    "user_can_set": {"type": "boolean"},
                    "agent_can_set": {"type": "boolean"},
                    "update_time": {"type": "integer"},
                },
                "required": ["keyword", "value", "user_can_set", "agent_can_set"],
            },
        }
    },
}
STUDIO_VARIABLES_UPDATE = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "connector_id": {"type": "string"},
        "connector_uid": {"type": "string", "maxLength": 255},
        "data": VARIABLES_UPDATE["properties"]["data"],
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
_MEMORY_DOC = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "path": {"type": "string", "description": "user.md or skills/<name>.md"},
        "content": {"type": "string", "description": "Markdown"},
        "updated_at": {"type": ["integer", "null"]},
    },
}
MEMORY = {
    "type": "object",
    "properties": {
        "space_id": ID,
        "user": _MEMORY_DOC,
        "skills": {"type": "array", "items": _MEMORY_DOC},
        "changes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"enum": ["add", "update", "delete"]},
                    "kind": {"enum": ["fact", "skill"]},
                    "name": {"type": "string"},
                    "text": {"type": "string"},
                    "source": {"enum": ["model", "rules"]},
                    "message_id": ID,
                    "applied_at": {"type": "integer"},
                },
            },
        },
        "jobs": {
            "type": "object",
            "properties": {k: {"type": "integer"} for k in ("queued", "running", "done")},
        },
    },
}
MEMORY_CONTENT = {
    "type": "object",
    "required": ["content"],
    "properties": {"content": {"type": "string", "maxLength": 20000}},
}

MCP_SERVER = {
    "type": "object",
    "properties": {
        "id": ID,
        "name": {"type": "string"},
        "description": {"type": "string"},
        "transport": {"enum": ["stdio", "http"]},
        "command": {"type": ["string", "null"]},
        "args": {"type": "array", "items": {"type": "string"}},
        "url": {"type": ["string", "null"]},
        "env": {"type": "array", "items": {"type": "string"}},
        "has_credentials": {"type": "boolean"},
        "space_id": ID,
        "owner_id": ID,
        "created_at": {"type": "integer"},
        "updated_at": {"type": "integer"},
    },
    "required": ["id", "name", "transport"],
}
_PORT = "(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
_MCP_COMMON = {
    "name": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_-]{0,63}$"},
    "description": {"type": "string", "maxLength": 2000},
}
#: an env value or a header value: one line of text
_LINE = {"type": "string", "maxLength": 8192, "pattern": "^[^\\r\\n]*$"}
MCP_SERVER_BODY = {
    "description": "`command` (+ `args`, `env`: a stdio server) or `url` (streamable HTTP)",
    "oneOf": [
        {
            "type": "object",
            "required": ["name", "command"],
            "properties": {
                **_MCP_COMMON,
                "command": {"type": "string", "maxLength": 1024, "pattern": "\\S"},
                "args": {
                    "type": "array",
                    "maxItems": 64,
                    "items": {"type": "string", "maxLength": 8192},
                },
                "env": {
                    "type": "object",
                    "maxProperties": 64,
                    "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]{0,127}$"},
                    "additionalProperties": _LINE,
                },
            },
            "not": {"required": ["url"]},
        },
        {
            "type": "object",
            "required": ["name", "url"],
            "properties": {
                **_MCP_COMMON,
                "url": {
                    "type": "string",
                    "maxLength": 2048,
                    "pattern": "^https?://[A-Za-z0-9.-]+"
                    + _PORT
                    + "(/[^\\s\\u0000-\\u001f\\u007f]*)?$",
                },
            },
            "not": {
                "anyOf": [{"required": ["command"]}, {"required": ["args"]}, {"required": ["env"]}]
            },
        },
    ],
}
MCP_HEADERS = {
    "type": "object",
    "minProperties": 1,
    "maxProperties": 32,
    "propertyNames": {"pattern": "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$"},
    "additionalProperties": _LINE,
}
MCP_TOOL = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "input_schema": OBJ,
    },
}
SESSION_STATE = {"enum": ["idle", "running", "waiting", "done", "failed", "canceled"]}
ACTIVITY = {
    "type": "object",
    "properties": {
        "state": SESSION_STATE,
        "chat_id": {"type": ["string", "null"]},
        "run_id": {"type": ["string", "null"]},
        "usage": {"type": "object"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {
                        "enum": [
                            "chat",
                            "message",
                            "tool_call",
                            "tool_result",
                            "answer",
                            "run",
                            "node",
                            "question",
                            "file",
                        ]
                    },
                    "at_ms": {"type": "integer"},
                    "title": {"type": "string"},
                    "detail": {"type": "string"},
                    "status": {"type": "string"},
                    "duration_ms": {"type": ["number", "null"]},
                    "usage": {"type": ["object", "null"]},
                    "chat_id": {"type": ["string", "null"]},
                    "run_id": {"type": ["string", "null"]},
                    "node_id": {"type": ["string", "null"]},
                    "path": {"type": ["string", "null"]},
                },
            },
        },
    },
}

# ---- knowledge (cozepy datasets) --------------------------------------------------------
CHUNK_STRATEGY = {
    "anyOf": [
        {"type": "null"},
        {
            "type": "object",
            "properties": {
                "chunk_type": {"enum": [0, None]},
                "caption_type": {"type": ["integer", "null"]},
            },
        },
        {
            "type": "object",
            "required": ["chunk_type", "separator", "max_tokens"],
            "properties": {
                "chunk_type": {"const": 1},
                "separator": {"type": "string", "minLength": 1, "maxLength": 100},
                "max_tokens": between(100, 2000),
                "overlap": {"anyOf": [between(0, 99), {"type": "null"}]},
                "remove_extra_spaces": {"type": ["boolean", "null"]},
                "remove_urls_emails": {"type": ["boolean", "null"]},
                "caption_type": {"type": ["integer", "null"]},
            },
        },
    ]
}
DATASET = {
    "type": "object",
    "properties": {
        "dataset_id": ID,
        "name": STR,
        "description": STR,
        "space_id": ID,
        "status": {"enum": [1, 3]},
        "format_type": {"type": "integer"},
        "doc_count": {"type": "integer"},
        "slice_count": {"type": "integer"},
        "file_list": {"type": "array", "items": STR},
        "failed_file_list": {"type": "array", "items": STR},
        "processing_file_list": {"type": "array", "items": STR},
        "chunk_strategy": CHUNK_STRATEGY,
        "create_time": {"type": "integer"},
        "update_time": {"type": "integer"},
    },
}
DOCUMENT = {
    "type": "object",
    "properties": {
        "document_id": ID,
        "name": STR,
        "type": STR,
        "status": {"enum": [0, 1, 9]},
        "size": {"type": "integer"},
        "char_count": {"type": "integer"},
        "slice_count": {"type": "integer"},
        "source_type": {"type": "integer"},
        "chunk_strategy": CHUNK_STRATEGY,
        "create_time": {"type": "integer"},
        "update_time": {"type": "integer"},
    },
}
DOCUMENT_PROGRESS = {
    "type": "object",
    "properties": {
        "document_id": ID,
        "document_name": STR,
        "status": {"enum": [0, 1, 9]},
        "progress": between(0, 100),
        "status_descript": STR,
        "type": STR,
        "size": {"type": "integer"},
    },
}
DATASET_EDIT = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": NAME,
        "description": {"type": ["string", "null"], "maxLength": 2000},
        "file_id": {"anyOf": [OPTIONAL_ID, {"type": "null"}]},
    },
}
DATASET_CREATE = {
    **DATASET_EDIT,
    "properties": {
        **DATASET_EDIT["properties"],
        "space_id": {"anyOf": [OPTIONAL_ID, {"type": "null"}]},
        "format_type": {"enum": [0, None]},
    },
}
DOCUMENT_IDS = {
    "type": "object",
    "required": ["document_ids"],
    "properties": {"document_ids": {"type": "array", "minItems": 1, "maxItems": 100, "items": ID}},
}
BASE64 = {
    "type": "string",
    "pattern": "^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
}
FILE_TYPE = {"enum": ["txt", "md", "csv", "pdf", "docx", "html", "markdown", "htm", "text"]}
DOCUMENT_BASE = {
    "type": "object",
    "required": ["name", "source_info"],
    "properties": {
        "name": NAME,
        "source_info": {
            "anyOf": [
                {
                    "type": "object",
                    "required": ["file_base64", "file_type"],
                    "properties": {
                        "file_base64": BASE64,
                        "file_type": FILE_TYPE,
                        "document_source": {"enum": [0, None]},
                    },
                },
                {
                    "type": "object",
                    "required": ["source_file_id"],
                    "properties": {
                        "source_file_id": ID,
                        "file_type": {"anyOf": [FILE_TYPE, {"type": "null"}]},
                        "document_source": {"enum": [5, None]},
                    },
                },
            ]
        },
        "update_rule": OBJ_OR_NULL,
    },
}
DOCUMENTS_CREATE = {
    "type": "object",
    "required": ["dataset_id", "document_bases"],
    "properties": {
        "dataset_id": ID,
        "document_bases": {"type": "array", "minItems": 1, "maxItems": 10, "items": DOCUMENT_BASE},
        "chunk_strategy": CHUNK_STRATEGY,
        "format_type": {"enum": [0, None]},
    },
}
KNOWLEDGE_SEARCH = {
    "type": "object",
    "required": ["dataset_ids", "query"],
    "properties": {
        "dataset_ids": {"type": "array", "minItems": 1, "maxItems": 20, "items": ID},
        "query": {"type": "string", "minLength": 1, "maxLength": 4000},
        "top_k": between(1, 100),
        "min_score": {"type": "number", "minimum": 0, "maximum": 1},
    },
}
CHUNK_HIT = {
    "type": "object",
    "properties": {
        "chunk_id": ID,
        "document_id": ID,
        "dataset_id": ID,
        "document_name": STR,
        "seq": {"type": "integer"},
        "content": STR,
        "score": {"type": "number"},
    },
}
