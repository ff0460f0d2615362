"""Time source injected into services so tests can move time."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    """The current UTC time, timezone-aware."""
    return datetime.now(timezone.utc)


def to_unix(moment: datetime | None) -> int | None:
    """Seconds since the epoch, as the Coze API reports times."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp())
