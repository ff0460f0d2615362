"""A chat's event log as rows keep it: deltas packed (no imports from the chat package, so
the store and the service both use it)."""

from __future__ import annotations

from typing import Any

#: the delta event's name (``events.MESSAGE_DELTA``)
MESSAGE_DELTA = "conversation.message.delta"


def pack(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events as a log row keeps them: a delta that follows a delta of the same message
    keeps only its text (``more``); the rest is the first one's. One entry per event.

    Example:
        >>> first = {"event": MESSAGE_DELTA, "message": {"id": 1, "content": "He"}}
        >>> pack([first, {"event": MESSAGE_DELTA, "message": {"id": 1, "content": "llo"}}])[1]
        {'event': 'conversation.message.delta', 'more': 'llo'}
    """
    out: list[dict[str, Any]] = []
    template: dict[str, Any] | None = None
    for event in events:
        message = event.get("message")
        if event["event"] != MESSAGE_DELTA or message is None:
            out.append(event)
            template = None
        elif template is not None and template["message"]["id"] == message["id"]:
            out.append({"event": MESSAGE_DELTA, "more": message["content"]})
        else:
            out.append(event)
            template = event
    return out


def unpack(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events :func:`pack` kept (a delta's timestamps are its first neighbour's).

    Example:
        >>> first = {"event": MESSAGE_DELTA, "message": {"id": 1, "content": "He"}}
        >>> unpack(pack([first, {**first, "message": {"id": 1, "content": "llo"}}]))[1]
        {'event': 'conversation.message.delta', 'message': {'id': 1, 'content': 'llo'}}
    """
    out: list[dict[str, Any]] = []
    template: dict[str, Any] | None = None
    for event in events:
        if "more" in event and template is not None:
            out.append({**template, "message": {**template["message"], "content": event["more"]}})
            continue
        out.append(event)
        template = event if event["event"] == MESSAGE_DELTA and "message" in event else None
    return out
