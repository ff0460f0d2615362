"""Users' plugin secrets, encrypted at rest: service tokens, OAuth client secrets and tokens."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select

from coze_lab.core.ids import new_id
from coze_lab.core.secrets import SecretBox
from coze_lab.store import Database
from coze_lab.store.models import PluginCredential

#: the kinds of secret a user keeps for a plugin
SERVICE, CLIENT, TOKEN = "service_token", "oauth_client", "oauth_token"


class CredentialStore:
    """One encrypted JSON value per (plugin, user, kind); values leave only decrypted here.

    Example:
        >>> with db.transaction() as session:                          # doctest: +SKIP
        ...     store.put(session, plugin_id, user_id, SERVICE, {"api_key": "k"})
        >>> store.get(plugin_id, user_id, SERVICE)                     # doctest: +SKIP
        {'api_key': 'k'}
    """

    def __init__(self, db: Database, box: SecretBox, clock: Callable[[], datetime]) -> None:
        self._db = db
        self._box = box
        self._clock = clock

    def put(
        self,
        session: Any,
        plugin_id: int,
        owner_id: int,
        kind: str,
        value: dict[str, Any],
        expires_at: datetime | None = None,
    ) -> None:
        """Store (or replace) a value inside the caller's transaction."""
        row = session.scalars(
            select(PluginCredential).where(
                PluginCredential.plugin_id == plugin_id,
                PluginCredential.owner_id == owner_id,
                PluginCredential.kind == kind,
            )
        ).first()
        if row is None:
            row = PluginCredential(
                id=new_id(), plugin_id=plugin_id, owner_id=owner_id, kind=kind, secret=""
            )
            session.add(row)
        row.secret = self._box.encrypt(value)
        row.expires_at = expires_at
        row.updated_at = self._clock()

    def save(
        self,
        plugin_id: int,
        owner_id: int,
        kind: str,
        value: dict[str, Any],
        expires_at: datetime | None = None,
    ) -> None:
        """``put`` in a transaction of its own."""
        with self._db.transaction() as session:
            self.put(session, plugin_id, owner_id, kind, value, expires_at)

    def get(self, plugin_id: int, owner_id: int, kind: str) -> dict[str, Any] | None:
        with self._db.read() as conn:
            secret = conn.execute(
                select(PluginCredential.secret).where(
                    PluginCredential.plugin_id == plugin_id,
                    PluginCredential.owner_id == owner_id,
                    PluginCredential.kind == kind,
                )
            ).scalar()
        return None if secret is None else self._box.decrypt(secret)

    def kinds(self, session: Any, plugin_id: int, owner_id: int) -> set[str]:
        """Which kinds the user has stored (never the values)."""
        return set(
            session.scalars(
                select(PluginCredential.kind).where(
                    PluginCredential.plugin_id == plugin_id,
                    PluginCredential.owner_id == owner_id,
                )
            )
        )

    def remove(self, plugin_id: int, owner_id: int, kinds: Iterable[str]) -> None:
        with self._db.transaction() as session:
            session.execute(
                delete(PluginCredential).where(
                    PluginCredential.plugin_id == plugin_id,
                    PluginCredential.owner_id == owner_id,
                    PluginCredential.kind.in_(tuple(kinds)),
                )
            )
