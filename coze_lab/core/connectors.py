"""Connectors: where a conversation happens. The same bot's conversations on two connectors
never see each other; the Playground uses a bot's draft, the others its published version."""

from __future__ import annotations

from coze_lab.core.errors import InvalidParameter

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
