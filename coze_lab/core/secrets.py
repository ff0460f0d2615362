"""Encryption of stored credentials (Fernet: AES-128-CBC + HMAC-SHA256, with key rotation).

The key comes from configuration (``COZE_LAB_SECRET_KEY``) or from a key file in the data
directory that is generated on first use with 0600 permissions.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

log = logging.getLogger("coze_lab")


class SecretBox:
    """Encrypts JSON values; the first key encrypts, every key decrypts (rotation).

    Example:
        >>> box = SecretBox([Fernet.generate_key()])
        >>> box.decrypt(box.encrypt({"api_key": "s3cret"}))
        {'api_key': 's3cret'}
    """

    def __init__(self, keys: Sequence[bytes | str]) -> None:
        if not keys:
            raise ValueError("SecretBox needs at least one key")
        self._fernet = MultiFernet([Fernet(_fernet_key(k)) for k in keys])

    @classmethod
    def from_config(cls, secret_key: str, key_file: Path) -> SecretBox:
        """Keys from ``secret_key`` (comma-separated) or from ``key_file`` (created if absent)."""
        keys = [k.strip() for k in secret_key.split(",") if k.strip()]
        return cls(keys or [load_or_create_key(key_file)])

    def encrypt(self, value: Any) -> str:
        return self._fernet.encrypt(json.dumps(value).encode()).decode()

    def decrypt(self, token: str) -> Any:
        """The stored value; ValueError when no key opens it (a changed secret key)."""
        try:
            return json.loads(self._fernet.decrypt(token.encode()))
        except InvalidToken as exc:
            raise ValueError("a stored secret cannot be decrypted with the configured key") from exc


def load_or_create_key(path: Path) -> bytes:
    """Read the key file, or create it (0600, exclusive: concurrent starters agree)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.stat().st_mode & 0o077:
            log.warning("secret key file %s is readable by others; chmod 600 it", path)
        return path.read_bytes().strip()
    key = Fernet.generate_key()
    with os.fdopen(fd, "wb") as handle:
        handle.write(key + b"\n")
    log.info("generated a secret key in %s", path)
    return key


def _fernet_key(key: bytes | str) -> bytes:
    raw = key.encode() if isinstance(key, str) else key
    try:
        if len(base64.urlsafe_b64decode(raw)) == 32:
            return raw
    except (binascii.Error, ValueError):
        pass
    # a passphrase: derive a key from it
    return base64.urlsafe_b64encode(hashlib.sha256(raw).digest())
