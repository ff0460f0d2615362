"""Request bodies → the core's commands (``ChatRequest``, ``NewMessage``, ``MessageEdit``,
``BotEdit``, tool outputs, run parameters, plugin sources). The wire format is read here;
the core checks what needs the database (the files a message names, a bot's workflows)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from coze_lab.core import connectors
from coze_lab.core.bots.config import (
    MAX_FUNCTIONS,
    MAX_HISTORY_ROUNDS,
    MAX_PROLOGUE_CHARS,
    MAX_PROMPT_CHARS,
    MAX_QUESTION_CHARS,
    MAX_QUESTIONS,
    MAX_SUGGEST_PROMPT_CHARS,
    MAX_TABLES,
    MAX_TOOL_ROUNDS,
    MAX_VALUE_CHARS,
    MAX_VARIABLES,
    MODEL_PARAMS,
    RESPONSE_FORMATS,
    SUGGEST_MODES,
    BotEdit,
    BotTable,
    ClientFunction,
    McpServerRef,
    PluginTool,
    Variable,
)
from coze_lab.core.chat import ChatRequest
from coze_lab.core.chat.flow import ChatflowRequest
from coze_lab.core.chat.prompt import check_custom_variables
from coze_lab.core.conversations import MessageEdit, NewMessage
from coze_lab.core.conversations.content import (
    CONTENT_TYPES,
    ROLES,
    check_content,
    check_meta_data,
)
from coze_lab.core.conversations.service import (
    FEEDBACK_TYPES,
    MAX_FEEDBACK_COMMENT_CHARS,
    MAX_FEEDBACK_REASONS,
    MAX_INITIAL_MESSAGES,
    ConversationEdit,
    Feedback,
)
from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import parse_id
from coze_lab.core.json_input import parse_json
from coze_lab.core.limits import Limits, text
from coze_lab.core.memory.variables import check_uid, check_values

MAX_ADDITIONAL_MESSAGES = 100
_FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_KEYWORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def parse_message(raw: Any, where: str) -> NewMessage:
    """A message of a request body (``additional_messages[i]``, ``messages[i]``, the body
    of ``/v1/conversation/message/create``).

    Example:
        >>> parse_message({"role": "user", "content": "hi"}, "m").message_type
        'question'
    """
    if not isinstance(raw, Mapping):
        raise InvalidParameter(f"{where} must be an object")
    role = raw.get("role")
    if role not in ROLES:
        raise InvalidParameter(f"{where}.role must be 'user' or 'assistant'")
    content, content_type = check_content(raw.get("content"), raw.get("content_type"))
    kind = raw.get("type") or ""
    allowed = ("", "question") if role == "user" else ("", "answer")
    if kind not in allowed:
        raise InvalidParameter(f"{where}.type '{kind}' is not allowed for role {role}")
    return NewMessage(role, content, content_type, kind, check_meta_data(raw.get("meta_data")))


def parse_initial_messages(raw: Any) -> list[NewMessage]:
    """The ``messages`` a new conversation starts with."""
    if raw is None:
        raw = []
    if not isinstance(raw, list):  # {} too (it was read as "no messages")
        raise InvalidParameter("messages must be a list")
    if len(raw) > MAX_INITIAL_MESSAGES:
        raise InvalidParameter(f"messages allows at most {MAX_INITIAL_MESSAGES} items")
    return [parse_message(m, f"messages[{i}]") for i, m in enumerate(raw)]


def parse_conversation_edit(body: Mapping[str, Any]) -> ConversationEdit:
    """A ``PUT /v1/conversations/{id}`` body: ``name`` and/or ``meta_data``."""
    name = body.get("name") if "name" in body else None
    if name is not None and not isinstance(name, str):
        raise InvalidParameter("name must be a string")
    meta = check_meta_data(body["meta_data"]) if "meta_data" in body else None
    return ConversationEdit(name=name, meta_data=meta)


def parse_feedback(body: Mapping[str, Any]) -> Feedback:
    """A message feedback body: ``feedback_type`` (like, unlike), ``reason_types`` (labels),
    ``comment``.

    Example:
        >>> parse_feedback({"feedback_type": "like", "reason_types": ["clear"]}).reason_types
        ('clear',)
    """
    kind = body.get("feedback_type")
    if kind not in FEEDBACK_TYPES:
        raise InvalidParameter(f"feedback_type must be one of {', '.join(FEEDBACK_TYPES)}")
    reasons = body.get("reason_types") or []
    if (
        not isinstance(reasons, list)
        or len(reasons) > MAX_FEEDBACK_REASONS
        or not all(isinstance(r, str) and 0 < len(r) <= 100 for r in reasons)
    ):
        raise InvalidParameter(
            f"reason_types must be a list of at most {MAX_FEEDBACK_REASONS} labels "
            "(1 to 100 characters each)"
        )
    comment = text(body.get("comment"), "comment", MAX_FEEDBACK_COMMENT_CHARS)
    return Feedback(kind, tuple(reasons), comment)


def parse_message_edit(body: Mapping[str, Any]) -> MessageEdit:
    """A ``/v1/conversation/message/modify`` body: the fields it names change."""
    content_type = content = meta_data = None
    if "content_type" in body:
        content_type = body["content_type"]
        if content_type is None or content_type == "":
            content_type = "text"
        if not isinstance(content_type, str) or content_type not in CONTENT_TYPES:
            raise InvalidParameter(f"content_type must be one of {', '.join(CONTENT_TYPES)}")
    if "content" in body:
        content = body["content"]
        if not isinstance(content, str):
            raise InvalidParameter("content must be a string")
    if "meta_data" in body:
        meta_data = check_meta_data(body["meta_data"])
    return MessageEdit(content, content_type, meta_data)


def parse_chat_request(
    body: Mapping[str, Any],
    conversation_id: Any = None,
) -> ChatRequest:
    """Validate a Coze chat body (``conversation_id`` comes from the query string).

    Example:
        >>> request = parse_chat_request({"bot_id": "7", "user_id": "u1", "stream": True,
        ...     "additional_messages": [{"role": "user", "content": "Hi",
        ...                              "content_type": "text"}]})
        >>> request.bot_id, request.messages[0].message_type
        (7, 'question')
    """
    bot_id = parse_id(body.get("bot_id"), "bot_id")
    raw_messages = body.get("additional_messages") or []
    if not isinstance(raw_messages, list) or len(raw_messages) > MAX_ADDITIONAL_MESSAGES:
        raise InvalidParameter(
            f"additional_messages must be a list of at most {MAX_ADDITIONAL_MESSAGES} messages"
        )
    messages = [parse_message(m, f"additional_messages[{i}]") for i, m in enumerate(raw_messages)]
    stream = body.get("stream", False)
    auto_save = body.get("auto_save_history", True)
    if not isinstance(stream, bool) or not isinstance(auto_save, bool):
        raise InvalidParameter("stream and auto_save_history must be booleans")
    if not auto_save and not stream:
        raise InvalidParameter("auto_save_history=false needs stream=true (nothing to poll)")
    user_id = body.get("user_id") or ""
    if not isinstance(user_id, str) or len(user_id) > 255:
        raise InvalidParameter("user_id must be a string")
    return ChatRequest(
        bot_id=bot_id,
        conversation_id=None
        if conversation_id in (None, "")
        else parse_id(conversation_id, "conversation_id"),
        messages=messages,
        custom_variables=check_custom_variables(body.get("custom_variables")),
        meta_data=check_meta_data(body.get("meta_data")),
        user_id=user_id,
        stream=stream,
        auto_save_history=auto_save,
    )


def parse_chatflow_request(body: Mapping[str, Any]) -> ChatflowRequest:
    """Validate a ``/v1/workflows/chat`` body (``parameters`` as an object or JSON text;
    ``bot_id``, ``app_id`` and ``ext`` are not used by a chat-flow here).

    Example:
        >>> request = parse_chatflow_request({"workflow_id": "7", "additional_messages": [
        ...     {"role": "user", "content": "Hi", "content_type": "text"}]})
        >>> request.workflow_id, request.messages[-1].content
        (7, 'Hi')
    """
    raw_messages = body.get("additional_messages") or []
    if not isinstance(raw_messages, list) or len(raw_messages) > MAX_ADDITIONAL_MESSAGES:
        raise InvalidParameter(
            f"additional_messages must be a list of at most {MAX_ADDITIONAL_MESSAGES} messages"
        )
    parameters = body.get("parameters") or {}
    if isinstance(parameters, str):
        parameters = parse_json(parameters, "parameters")
    if not isinstance(parameters, dict):
        raise InvalidParameter("parameters must be an object")
    conversation_id = body.get("conversation_id")
    return ChatflowRequest(
        workflow_id=parse_id(body.get("workflow_id"), "workflow_id"),
        messages=[
            parse_message(m, f"additional_messages[{i}]") for i, m in enumerate(raw_messages)
        ],
        conversation_id=None
        if conversation_id in (None, "")
        else parse_id(conversation_id, "conversation_id"),
        parameters=parameters,
    )


def parse_playground_chat(body: dict[str, Any], bot_id: Any) -> ChatRequest:
    """The studio's chat body: ``{"message": "...", "conversation_id"?, ...}`` or
    ``additional_messages`` as in ``/v3/chat``; streamed unless it says ``"stream": false``."""
    body = dict(body)
    if "message" in body:
        if not isinstance(body["message"], str) or not body["message"]:
            raise InvalidParameter("message must be a non-empty string")
        body["additional_messages"] = [
            {"role": "user", "content": body.pop("message"), "content_type": "text"}
        ]
    body["bot_id"] = bot_id
    body.setdefault("stream", True)
    return parse_chat_request(body, body.get("conversation_id"))


def parse_tool_outputs(body: Mapping[str, Any]) -> dict[str, str]:
    raw = body.get("tool_outputs")
    if not isinstance(raw, list) or not raw:
        raise InvalidParameter("tool_outputs must be a non-empty list")
    outputs: dict[str, str] = {}
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise InvalidParameter(f"tool_outputs[{i}] must be an object")
        call_id, output = item.get("tool_call_id"), item.get("output")
        if not isinstance(call_id, str) or not isinstance(output, str):
            raise InvalidParameter(f"tool_outputs[{i}] needs string tool_call_id and output")
        if call_id in outputs:
            raise InvalidParameter(f"tool_outputs[{i}] repeats tool_call_id {call_id}")
        outputs[call_id] = output
    return outputs


def parse_workflow_parameters(body: Mapping[str, Any]) -> dict[str, Any]:
    """A workflow run's ``parameters``: an object, or that object as a JSON string (some
    clients send it so)."""
    parameters = body.get("parameters") or {}
    if isinstance(parameters, str):
        parameters = parse_json(parameters, "parameters")
    if not isinstance(parameters, dict):
        raise InvalidParameter("parameters must be an object")
    return parameters


def parse_workflow_bot(body: Mapping[str, Any]) -> tuple[int, str | None] | None:
    """A workflow run's bot (Coze's ``bot_id``) and end user (``ext.user_id``; None: the
    caller), whose variables its variable and assign nodes use; None without a bot.

    Example:
        >>> parse_workflow_bot({"bot_id": "7", "ext": {"user_id": "u1"}})
        (7, 'u1')
    """
    if body.get("bot_id") in (None, ""):
        return None
    ext = body.get("ext") or {}
    if not isinstance(ext, Mapping):
        raise InvalidParameter("ext must be an object")
    uid = ext.get("user_id")
    return parse_id(body["bot_id"], "bot_id"), None if uid in (None, "") else check_uid(uid)


def parse_retry(body: Mapping[str, Any]) -> tuple[str | None, dict[str, dict[str, Any]]]:
    """A run's retry: ``from_node`` (default: the node it failed on) and ``node_changes``
    ({node id: {key: value}})."""
    from_node = body.get("from_node")
    if from_node is not None and (not isinstance(from_node, str) or not from_node):
        raise InvalidParameter("from_node must be a node id")
    changes = body.get("node_changes") or {}
    if not isinstance(changes, dict) or not all(isinstance(c, dict) for c in changes.values()):
        raise InvalidParameter("node_changes must be an object of objects: {node id: changes}")
    return from_node, changes


def parse_plugin_source(body: Mapping[str, Any]) -> dict[str, Any]:
    """The document, manifest and server URL fields of a plugin import or update body."""
    openapi, url = body.get("openapi"), body.get("url")
    if openapi is not None and not isinstance(openapi, (str, dict)):
        raise InvalidParameter("openapi must be the document's text or object")
    if url is not None and not isinstance(url, str):
        raise InvalidParameter("url must be a string")
    if body.get("manifest") is not None and not isinstance(body["manifest"], dict):
        raise InvalidParameter("manifest must be an object")
    if body.get("server_url") is not None and not isinstance(body["server_url"], str):
        raise InvalidParameter("server_url must be a string")
    return {
        "openapi": openapi,
        "url": url,
        "manifest": body.get("manifest"),
        "server_url": body.get("server_url"),
    }


# ---- bots --------------------------------------------------------------------------------
def parse_bot_edit(
    body: Mapping[str, Any], limits: Limits | None = None, *, create: bool = False
) -> BotEdit:
    """A ``/v1/bot/create`` (``create``: a name is required) or ``/v1/bot/update`` body
    (plus coze_lab's ``variables`` and ``functions``) → the command the bot service
    applies; texts are bounded by ``limits``.

    Example:
        >>> edit = parse_bot_edit({"name": "Helper", "prompt_info": {"prompt": "Be brief."},
        ...                        "model_info_config": {"model_id": "default",
        ...                                              "temperature": 0.2}})
        >>> edit.name, edit.changes["prompt"], edit.changes["model_params"]
        ('Helper', 'Be brief.', {'temperature': 0.2})
    """
    limits = limits or Limits()
    _refuse_unsupported(body)
    given = {"name", "description", "icon_url"} if create else set(body)
    return BotEdit(
        name=limits.name(body.get("name"), "name") if "name" in given else None,
        description=limits.description(body.get("description"), "description")
        if "description" in given
        else None,
        icon_url=text(body.get("icon_url"), "icon_url", 1024) if "icon_url" in given else None,
        changes=_config_changes(body, limits),
    )


#: fields of Coze's bot bodies coze_lab does not keep, with what to do instead
UNSUPPORTED_BOT_FIELDS = {
    "icon_file_id": "bot icons from uploaded files are not kept here; set icon_url instead",
}


def _refuse_unsupported(body: Mapping[str, Any]) -> None:
    """400 naming a field we would otherwise drop silently."""
    for name, instead in UNSUPPORTED_BOT_FIELDS.items():
        if body.get(name) not in (None, ""):
            raise InvalidParameter(f"{name} is not supported: {instead}")


def _config_changes(body: Mapping[str, Any], limits: Limits) -> dict[str, Any]:
    """The :class:`BotConfig` fields a create/update body sets (absent fields unchanged);
    every text is bounded (``limits`` for descriptions)."""
    changes: dict[str, Any] = {}
    if (prompt_info := _object(body, "prompt_info")) is not None:
        prompt = prompt_info.get("prompt", "")
        if not isinstance(prompt, str) or len(prompt) > MAX_PROMPT_CHARS:
            raise InvalidParameter(
                f"prompt_info.prompt must be a string of at most {MAX_PROMPT_CHARS} characters"
            )
        changes["prompt"] = prompt
    if (model := _object(body, "model_info_config")) is not None:
        changes.update(_model(model))
    if (onboarding := _object(body, "onboarding_info")) is not None:
        prologue = text(onboarding.get("prologue"), "onboarding_info.prologue", MAX_PROLOGUE_CHARS)
        questions = onboarding.get("suggested_questions") or []
        if not _str_list(questions):
            raise InvalidParameter("onboarding_info.suggested_questions must be a list of strings")
        if len(questions) > MAX_QUESTIONS or any(len(q) > MAX_QUESTION_CHARS for q in questions):
            raise InvalidParameter(
                f"onboarding_info.suggested_questions allows {MAX_QUESTIONS} questions "
                f"of at most {MAX_QUESTION_CHARS} characters"
            )
        changes["prologue"] = prologue
        changes["suggested_questions"] = tuple(questions)
    if (workflows := _object(body, "workflow_id_list")) is not None:
        changes["workflow_ids"] = _unique(
            parse_id(_field(item, "id", "workflow_id_list.ids[]"), "workflow id")
            for item in _list(workflows.get("ids") or [], "workflow_id_list.ids")
        )
    if (plugins := _object(body, "plugin_id_list")) is not None:
        changes["plugin_tools"] = _unique(
            PluginTool(
                parse_id(_field(item, "plugin_id", "plugin_id_list.id_list[]"), "plugin_id"),
                parse_id(_field(item, "api_id", "plugin_id_list.id_list[]"), "api_id"),
            )
            for item in _list(plugins.get("id_list") or [], "plugin_id_list.id_list")
        )
    if (suggest := _object(body, "suggest_reply_info")) is not None:
        changes.update(_suggest(suggest))
    if "variables" in body:
        changes["variables"] = _variables(body["variables"], limits)
    if "mcp_servers" in body:
        changes["mcp_servers"] = _mcp_servers(body["mcp_servers"])
    if "functions" in body:
        changes["functions"] = _functions(body["functions"], limits)
    if "save_variables" in body:
        if not isinstance(body["save_variables"], bool):
            raise InvalidParameter("save_variables must be true or false")
        changes["save_variables"] = body["save_variables"]
    if "file_tools" in body:
        if not isinstance(body["file_tools"], bool):
            raise InvalidParameter("file_tools must be true or false")
        changes["file_tools"] = body["file_tools"]
    if "tables" in body:
        changes["tables"] = _tables(body["tables"])
    if "memory" in body:
        if not isinstance(body["memory"], bool):
            raise InvalidParameter("memory must be true or false")
        changes["memory"] = body["memory"]
    if (knowledge := _object(body, "knowledge")) is not None:
        changes.update(_knowledge(knowledge))
    return changes


def _knowledge(knowledge: Mapping[str, Any]) -> dict[str, Any]:
    """Coze's ``knowledge``: ``dataset_ids`` (knowledge bases of the bot's space, at most
    20), ``auto_call`` (true: recall before answering; false: a tool the model calls) and
    ``search_strategy`` (0, 1 or 20; recall here is always hybrid)."""
    raw = knowledge.get("dataset_ids")
    ids = [] if raw is None else _list(raw, "knowledge.dataset_ids")
    if len(ids) > 20:
        raise InvalidParameter("knowledge.dataset_ids names at most 20 knowledge bases")
    auto_call = knowledge.get("auto_call", True)
    if not isinstance(auto_call, bool):
        raise InvalidParameter("knowledge.auto_call must be true or false")
    strategy = knowledge.get("search_strategy", 0)
    if isinstance(strategy, bool) or strategy not in (0, 1, 20, None):
        raise InvalidParameter("knowledge.search_strategy must be 0, 1 or 20")
    return {
        "dataset_ids": _unique(parse_id(i, "knowledge.dataset_ids") for i in ids),
        "knowledge_auto_call": auto_call,
    }


def _model(model: Mapping[str, Any]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    model_id = model.get("model_id", "default")
    if not isinstance(model_id, str) or not model_id.strip() or len(model_id) > 200:
        raise InvalidParameter(
            "model_info_config.model_id must be a non-empty string (200 at most)"
        )
    changes["model_id"] = model_id.strip()
    params: dict[str, Any] = {}
    for name, (low, high) in MODEL_PARAMS.items():
        value = model.get(name)
        if value is None:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not low <= value <= high
        ):
            raise InvalidParameter(f"model_info_config.{name} must be a number in {low}..{high}")
        params[name] = int(value) if name == "max_tokens" else value
    changes["model_params"] = params
    response_format = model.get("response_format")
    if response_format is not None and response_format not in RESPONSE_FORMATS:
        raise InvalidParameter(
            f"model_info_config.response_format must be one of {', '.join(RESPONSE_FORMATS)}"
        )
    changes["response_format"] = response_format or "text"
    for name, key, high in (
        ("context_round", "history_rounds", MAX_HISTORY_ROUNDS),
        ("max_tool_rounds", "max_tool_rounds", MAX_TOOL_ROUNDS),
    ):
        value = model.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
            raise InvalidParameter(f"model_info_config.{name} must be an integer in 0..{high}")
        changes[key] = value
    return changes


def _suggest(suggest: Mapping[str, Any]) -> dict[str, Any]:
    mode = suggest.get("reply_mode", "disable")
    if mode not in SUGGEST_MODES:
        raise InvalidParameter(
            f"suggest_reply_info.reply_mode must be one of {', '.join(SUGGEST_MODES)}"
        )
    prompt = text(
        suggest.get("customized_prompt", ""),
        "suggest_reply_info.customized_prompt",
        MAX_SUGGEST_PROMPT_CHARS,
    )
    if mode == "customized" and not prompt.strip():
        raise InvalidParameter("suggest_reply_info.customized_prompt is required when customized")
    return {"suggest_reply_mode": mode, "suggest_reply_prompt": prompt}


def _variables(raw: Any, limits: Limits) -> tuple[Variable, ...]:
    seen: set[str] = set()
    result = []
    if len(_list(raw, "variables")) > MAX_VARIABLES:
        raise InvalidParameter(f"variables allows at most {MAX_VARIABLES} variables")
    for i, item in enumerate(raw):
        where = f"variables[{i}]"
        if not isinstance(item, Mapping):
            raise InvalidParameter(f"{where} must be an object")
        keyword = item.get("keyword")
        if not isinstance(keyword, str) or not _KEYWORD.fullmatch(keyword):
            raise InvalidParameter(f"{where}.keyword must be an identifier")
        if keyword in seen or keyword.startswith("sys_"):
            raise InvalidParameter(f"{where}.keyword '{keyword}' is duplicated or reserved")
        seen.add(keyword)
        default = text(item.get("default_value", ""), f"{where}.default_value", MAX_VALUE_CHARS)
        description = limits.description(item.get("description", ""), f"{where}.description")
        flags = {}
        for name in ("enable", "user_can_set", "agent_can_set"):
            flags[name] = item.get(name, True)
            if not isinstance(flags[name], bool):
                raise InvalidParameter(f"{where}.{name} must be a boolean")
        result.append(Variable(keyword, default, description, **flags))
    return tuple(result)


MAX_MCP_SERVERS, MAX_MCP_TOOLS = 16, 64


def _mcp_servers(raw: Any) -> tuple[McpServerRef, ...]:
    """``[{"server_id": "...", "tools": ["add"]}]``: MCP servers and (optionally) which of
    their tools the bot may use."""
    items = _list(raw, "mcp_servers")
    if len(items) > MAX_MCP_SERVERS:
        raise InvalidParameter(f"mcp_servers allows at most {MAX_MCP_SERVERS} servers")
    refs = []
    for i, item in enumerate(items):
        where = f"mcp_servers[{i}]"
        server_id = parse_id(_field(item, "server_id", where), f"{where}.server_id")
        tools = item.get("tools", [])
        if (
            not _str_list(tools)
            or len(tools) > MAX_MCP_TOOLS
            or not all(0 < len(t) <= 128 for t in tools)
        ):
            raise InvalidParameter(f"{where}.tools must be a list of at most {MAX_MCP_TOOLS} names")
        refs.append(McpServerRef(server_id, tuple(dict.fromkeys(tools))))
    if len({r.server_id for r in refs}) != len(refs):
        raise InvalidParameter("mcp_servers names a server twice")
    return tuple(refs)


def _functions(raw: Any, limits: Limits) -> tuple[ClientFunction, ...]:
    seen: set[str] = set()
    result = []
    if len(_list(raw, "functions")) > MAX_FUNCTIONS:
        raise InvalidParameter(f"functions allows at most {MAX_FUNCTIONS} functions")
    for i, item in enumerate(raw):
        where = f"functions[{i}]"
        if not isinstance(item, Mapping):
            raise InvalidParameter(f"{where} must be an object")
        name = item.get("name")
        if not isinstance(name, str) or not _FUNCTION_NAME.fullmatch(name) or name in seen:
            raise InvalidParameter(f"{where}.name must be a unique function name")
        seen.add(name)
        description = limits.description(item.get("description", ""), f"{where}.description")
        parameters = item.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
            raise InvalidParameter(f"{where}.parameters must be a JSON schema of type object")
        result.append(ClientFunction(name, description, parameters))
    return tuple(result)


def _tables(raw: Any) -> tuple[BotTable, ...]:
    """``[{table_id, allow_writes?}]``: the user tables the model may query (NL2SQL)."""
    items = _list(raw, "tables")
    if len(items) > MAX_TABLES:
        raise InvalidParameter(f"tables allows at most {MAX_TABLES} tables")
    result: dict[int, BotTable] = {}
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidParameter(f"tables[{i}] must be an object {{table_id, allow_writes}}")
        table_id = parse_id(item.get("table_id"), f"tables[{i}].table_id")
        writes = item.get("allow_writes", False)
        if not isinstance(writes, bool):
            raise InvalidParameter(f"tables[{i}].allow_writes must be true or false")
        if table_id in result:
            raise InvalidParameter(f"tables[{i}]: table {table_id} is listed twice")
        result[table_id] = BotTable(table_id, writes)
    return tuple(result.values())


def _object(body: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidParameter(f"{name} must be an object")
    return value


def _list(value: Any, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidParameter(f"{name} must be a list")
    return value


def _field(item: Any, key: str, where: str) -> Any:
    if not isinstance(item, Mapping) or key not in item:
        raise InvalidParameter(f"{where} needs '{key}'")
    return item[key]


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _unique(items: Any) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(items))


@dataclass(frozen=True)
class VariablesRequest:
    """A ``/v1/variables`` request: the bot, the connector asked for (None: the token's),
    the end user, and the keywords (retrieve) or the values (update)."""

    bot_id: int
    connector_id: str | None
    connector_uid: str
    keywords: tuple[str, ...] = ()
    values: Mapping[str, str] = field(default_factory=dict)


def _variables_target(fields: Mapping[str, Any]) -> tuple[int, str | None, str]:
    if fields.get("app_id") and not fields.get("bot_id"):
        raise InvalidParameter("app_id: coze_lab has no apps; name the bot_id")
    connector = fields.get("connector_id")
    if connector is not None and not isinstance(connector, str):
        raise InvalidParameter("connector_id must be a string")
    return (
        parse_id(fields.get("bot_id"), "bot_id"),
        connector or None,
        check_uid(fields.get("connector_uid")),
    )


def parse_variables_query(query: Mapping[str, str | None]) -> VariablesRequest:
    """``GET /v1/variables?bot_id=&connector_id=&connector_uid=&keywords=a,b``.

    Example:
        >>> parse_variables_query({"bot_id": "7", "connector_uid": "u1", "keywords": "a,b"})
        ... # doctest: +ELLIPSIS
        VariablesRequest(bot_id=7, connector_id=None, connector_uid='u1', keywords=('a', 'b'), ...)
    """
    bot_id, connector, uid = _variables_target(query)
    raw = query.get("keywords") or ""
    keywords = tuple(k.strip() for k in raw.split(",") if k.strip())
    if len(keywords) > MAX_VARIABLES:
        raise InvalidParameter(f"keywords names at most {MAX_VARIABLES} variables")
    return VariablesRequest(bot_id, connector, uid, keywords=keywords)


def parse_variables_update(body: Mapping[str, Any]) -> VariablesRequest:
    """``PUT /v1/variables``: ``{bot_id, connector_id?, connector_uid, data: [{keyword,
    value}]}``; a value is at most ``MAX_VALUE_CHARS`` (10,000) characters."""
    bot_id, connector, uid = _variables_target(body)
    return VariablesRequest(bot_id, connector, uid, values=check_values(body.get("data")))


def parse_studio_variables(
    fields: Mapping[str, Any], bot_id: str, user_id: int, *, update: bool = False
) -> VariablesRequest:
    """The studio's ``/coze_lab/api/bots/{bot_id}/variables``: the connector (default the
    Playground) and end user (default you, as in your Playground chats), and for a PUT the
    ``data`` ``[{keyword, value}]``.

    Example:
        >>> parse_studio_variables({}, "7", 1).connector_uid
        '1'
    """
    connector = fields.get("connector_id") or connectors.PLAYGROUND
    if not isinstance(connector, str):
        raise InvalidParameter("connector_id must be a string")
    uid = fields.get("connector_uid")
    uid = str(user_id) if uid in (None, "") else check_uid(uid)
    values = check_values(fields.get("data")) if update else {}
    return VariablesRequest(parse_id(bot_id, "bot_id"), connector, uid, values=values)


def parse_run_workspace(body: dict[str, Any]) -> tuple[bool, list[int]]:
    """A run request's ``workspace`` (true: the run gets a workspace of its own) and
    ``workspace_files`` (uploaded file ids copied to its ``input/``).

    Example:
        >>> parse_run_workspace({"workspace": True, "workspace_files": ["7"]})
        (True, [7])
        >>> parse_run_workspace({})
        (False, [])
    """
    flag = body.get("workspace", False)
    if not isinstance(flag, bool):
        raise InvalidParameter("workspace must be true or false")
    files = body.get("workspace_files") or []
    if not isinstance(files, list) or len(files) > 20:
        raise InvalidParameter("workspace_files must be a list of at most 20 file ids")
    ids = [parse_id(f, "workspace_files[]") for f in files]
    if ids and not flag:
        raise InvalidParameter("workspace_files need workspace: true")
    return flag, ids
