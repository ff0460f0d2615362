"""Coze-style ids: 19-digit, roughly time-ordered integers, exposed as strings."""

from __future__ import annotations

import os
import threading
import time

_EPOCH_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
_BASE = 7 * 10**18
_lock = threading.Lock()
_last = 0
#: random bytes from the OS, drawn 4 KiB at a time (one system call per ~1300 ids, not
#: one per id: a workflow step makes three ids)
_random = b""
_used = 0


def _forget_random() -> None:
    """A forked child draws its own bytes (else it would repeat its parent's ids)."""
    global _random, _used
    _random, _used = b"", 0


os.register_at_fork(after_in_child=_forget_random)


def _six_digits() -> int:
    """A uniform random number below 1,000,000 from the OS's random bytes (what
    ``secrets.randbelow`` gives, by rejection on 20 bits). Called under ``_lock``."""
    global _random, _used
    while True:
        if _used + 3 > len(_random):
            _random, _used = os.urandom(4096), 0
        value = int.from_bytes(_random[_used : _used + 3], "big") & 0xFFFFF
        _used += 3
        if value < 1_000_000:
            return value


def new_id() -> int:
    """Return a new unique, increasing 19-digit id starting with 7, like Coze's.

    Milliseconds since 2024 and six random digits: unique across replicas in practice and
    strictly increasing within a process.

    Example:
        >>> a, b = new_id(), new_id()
        >>> b > a and len(str(a)) == 19
        True
    """
    global _last
    with _lock:
        elapsed_ms = int(time.time() * 1000) - _EPOCH_MS
        candidate = _BASE + elapsed_ms * 1_000_000 + _six_digits()
        _last = max(candidate, _last + 1)
        return _last


#: the largest id a client may name: ids are 1..MAX_ID, written without leading zeros, the
#: pattern of the API document (``^([1-9][0-9]{0,17}|[1-8][0-9]{18})$``); ``new_id`` stays
#: below it until about 2087
MAX_ID = 9 * 10**18 - 1


def parse_id(value: object, what: str = "id") -> int:
    """Parse a client-supplied id (string or int); raise InvalidParameter when malformed.

    Example:
        >>> parse_id("7091990206871050740")
        7091990206871050740
    """
    from coze_lab.core.errors import InvalidParameter

    if isinstance(value, bool):
        raise InvalidParameter(f"{what} must be a numeric string")
    if isinstance(value, int):
        number = value
    elif (
        isinstance(value, str)
        and value.isascii()
        and value.isdigit()
        and len(value) <= 19
        and (value == "0" or not value.startswith("0"))
    ):
        number = int(value)
    else:
        raise InvalidParameter(f"{what} must be a numeric string")
    if not 0 < number <= MAX_ID:
        raise InvalidParameter(f"{what} is out of range")
    return number
