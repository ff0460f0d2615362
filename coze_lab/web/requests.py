"""Coze request bodies → the core's commands (``ChatRequest``, ``NewMessage``, tool
outputs). The wire format is read here; the core checks what needs the database (files)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coze_lab.core.chat import ChatRequest
from coze_lab.core.chat.flow import ChatflowRequest
from coze_lab.core.chat.prompt import check_custom_variables
from coze_lab.core.conversations import parse_message
from coze_lab.core.conversations.content import check_meta_data
from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import parse_id
from coze_lab.core.json_input import parse_json

MAX_ADDITIONAL_MESSAGES = 100


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
