"""Message content: plain text, Coze ``object_string`` (text, image and file parts) or cards."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import parse_id
from coze_lab.core.json_input import parse_json

CONTENT_TYPES = ("text", "object_string", "card")
ROLES = ("user", "assistant")
MAX_CONTENT_CHARS = 200_000
_PART_TYPES = ("text", "image", "file", "audio")


def check_content(content: Any, content_type: Any) -> tuple[str, str]:
    """Validate a message's content (the files it names are checked by the conversations
    service, which can read them: :func:`file_ids`).

    Example:
        >>> check_content('[{"type": "text", "text": "hi"}]', "object_string")[1]
        'object_string'
    """
    if content_type is None or content_type == "":
        content_type = "text"  # left out
    if not isinstance(content_type, str) or content_type not in CONTENT_TYPES:
        raise InvalidParameter(f"content_type must be one of {', '.join(CONTENT_TYPES)}")
    if not isinstance(content, str):
        raise InvalidParameter("content must be a string")
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidParameter(f"content exceeds {MAX_CONTENT_CHARS} characters")
    if content_type == "object_string":
        for part in _parts(content):
            if part["type"] in ("image", "file", "audio") and "file_id" in part:
                parse_id(part["file_id"], "file_id")
    return content, content_type


def file_ids(content: str, content_type: str) -> list[int]:
    """The file ids an ``object_string`` message names (checked content only).

    Example:
        >>> file_ids('[{"type": "file", "file_id": "7"}]', "object_string")
        [7]
    """
    if content_type != "object_string":
        return []
    return [
        parse_id(part["file_id"], "file_id")
        for part in _parts(content)
        if part["type"] in ("image", "file", "audio") and "file_id" in part
    ]


def _parts(content: str) -> list[Mapping[str, Any]]:
    parts = parse_json(content, "object_string content")
    if not isinstance(parts, list) or not parts:
        raise InvalidParameter("object_string content must be a non-empty JSON list")
    for i, part in enumerate(parts):
        if not isinstance(part, dict) or part.get("type") not in _PART_TYPES:
            raise InvalidParameter(f"object_string[{i}].type must be one of {_PART_TYPES}")
        if part["type"] == "text" and not isinstance(part.get("text"), str):
            raise InvalidParameter(f"object_string[{i}] of type text needs a string 'text'")
        if part["type"] != "text" and not (part.get("file_id") or part.get("file_url")):
            raise InvalidParameter(f"object_string[{i}] needs a file_id or a file_url")
    return parts


def model_content(content: str, content_type: str) -> str | list[dict[str, Any]]:
    """The OpenAI message content for a stored message (images become image parts)."""
    if content_type != "object_string":
        return content
    result: list[dict[str, Any]] = []
    for part in json.loads(content):
        if part["type"] == "text":
            result.append({"type": "text", "text": part["text"]})
        elif part["type"] == "image" and part.get("file_url"):
            result.append({"type": "image_url", "image_url": {"url": part["file_url"]}})
        else:
            name = part.get("file_url") or f"file {part.get('file_id')}"
            result.append({"type": "text", "text": f"[{part['type']}: {name}]"})
    return result


def check_meta_data(value: Any) -> dict[str, str]:
    """Coze ``meta_data``: at most 16 string pairs."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidParameter("meta_data must be an object of string values")
    if len(value) > 16 or any(len(k) > 64 or len(v) > 512 for k, v in value.items()):
        raise InvalidParameter("meta_data allows 16 keys of 64 and values of 512 characters")
    return dict(value)
