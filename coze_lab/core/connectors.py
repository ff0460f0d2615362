"""Connectors: where a conversation happens. The same bot's conversations on two connectors
never see each other; the Playground uses a bot's draft, the others its published version."""

from __future__ import annotations

from coze_lab.core.errors import InvalidParameter, NotPublished

PLAYGROUND = "10000010"
API = "1024"
WEB_SDK = "999"
PUBLISHABLE = (API, WEB_SDK)
NAMES = {PLAYGROUND: "Playground", API: "API", WEB_SDK: "Web SDK"}


def check_publishable(connector_id: object) -> str:
    """A connector id a bot can be published to.

    Example:
        >>> check_publishable("999")
        '999'
    """
    if connector_id not in PUBLISHABLE:
        raise InvalidParameter(
            f"connector_id must be one of {', '.join(PUBLISHABLE)} (API, Web SDK)"
        )
    return str(connector_id)


def not_published(bot_id: int, connector_id: str) -> NotPublished:
    """The refusal of a bot used on a connector it is not published to (chats and
    conversations alike).

    Example:
        >>> not_published(7, "999").msg
        'bot 7 is not published to the Web SDK connector (999); publish it first'
    """
    name = NAMES.get(connector_id, connector_id)
    return NotPublished(
        f"bot {bot_id} is not published to the {name} connector ({connector_id}); publish it first"
    )
