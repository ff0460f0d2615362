"""Coze request bodies → the core's commands (``ChatRequest``, ``NewMessage``,
``MessageEdit``, tool outputs). The wire format is read here; the core checks what needs the
database (the files a message names)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coze_lab.core.chat import ChatRequest
from coze_lab.core.chat.prompt import check_custom_variables
from coze_lab.core.conversations import MessageEdit, NewMessage
from coze_lab.core.conversations.content import (
    CONTENT_TYPES,
    ROLES,
    check_content,
    check_meta_data,
)
from coze_lab.core.conversations.service import MAX_INITIAL_MESSAGES
from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import parse_id
from coze_lab.core.json_input import parse_json

MAX_ADDITIONAL_MESSAGES = 100


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
    raw = raw or []
    if not isinstance(raw, list):
        raise InvalidParameter("messages must be a list")
    if len(raw) > MAX_INITIAL_MESSAGES:
        raise InvalidParameter(f"messages allows at most {MAX_INITIAL_MESSAGES} items")
    return [parse_message(m, f"messages[{i}]") for i, m in enumerate(raw)]


def parse_message_edit(body: Mapping[str, Any]) -> MessageEdit:
    """A ``/v1/conversation/message/modify`` body: the fields it names change."""
    content_type = content = meta_data = None
    if "content_type" in body:
        content_type = body["content_type"] or "text"
        if content_type not in CONTENT_TYPES:
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
