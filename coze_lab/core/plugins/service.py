"""Plugins: import, draft edits, atomic publish, credentials, OAuth, and tool calls.

``PluginService`` is the domain's one door; it is made of three parts over shared lookups
(``lookups.PluginLookups``): the catalog (import, drafts, publish, tool definitions), the
authorization (credentials, OAuth) and the executor (calls, retries, records). Every query
is scoped to the plugin's owner; another user's ids read as unknown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.net import OutboundPolicy
from coze_lab.core.plugins.authorization import CALLBACK_PATH, PluginAuthorization
from coze_lab.core.plugins.catalog import PluginCatalog
from coze_lab.core.plugins.credentials import CredentialStore
from coze_lab.core.plugins.executor import PluginExecutor
from coze_lab.core.plugins.lookups import PluginContext, PluginSettings
from coze_lab.core.secrets import SecretBox
from coze_lab.store import Database

__all__ = ["CALLBACK_PATH", "PluginService", "PluginSettings"]


class PluginService:
    """The plugin domain; ``policy`` is the SSRF guard every outbound call goes through.

    Example:
        >>> info = await plugins.import_plugin(user.id, openapi=text)      # doctest: +SKIP
        >>> [t.name for t in info.tools]                                    # doctest: +SKIP
        ['get_weather']
        >>> result = await plugins.call_tool(user.id, info.tools[0].id, {"city": "Oslo"},
        ...                                  scene="draft")                 # doctest: +SKIP
        >>> result.ok, result.status_code                                   # doctest: +SKIP
        (True, 200)
    """

    def __init__(
        self,
        db: Database,
        *,
        secrets: SecretBox,
        policy: OutboundPolicy,
        clock: Clock = utcnow,
        settings: PluginSettings | None = None,
        public_url: str | Callable[[], str | None] | None = None,
        on_authorized: Callable[[int, int], Awaitable[None]] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._ctx = PluginContext(
            db=db,
            box=secrets,
            credentials=CredentialStore(db, secrets, clock),
            policy=policy,
            clock=clock,
            settings=settings or PluginSettings(),
            public_url=public_url,
            on_authorized=on_authorized,
            sleep=sleep,
        )
        self.catalog = PluginCatalog(self._ctx)
        self.authorization = PluginAuthorization(self._ctx)
        self.executor = PluginExecutor(self._ctx, self.authorization)
        # the catalog
        self.import_plugin = self.catalog.import_plugin
        self.update_draft = self.catalog.update_draft
        self.fetch_document = self.catalog.fetch_document
        self.get = self.catalog.get
        self.list = self.catalog.list
        self.delete = self.catalog.delete
        self.calls = self.catalog.calls
        self.publish = self.catalog.publish
        self.online_versions = self.catalog.online_versions
        self.tool_definitions = self.catalog.tool_definitions
        self.tool_id = self.catalog.tool_id  # a shared lookup
        # the authorization
        self.set_credentials = self.authorization.set_credentials
        self.clear_credentials = self.authorization.clear_credentials
        self.authorization_url = self.authorization.authorization_url
        self.complete_authorization = self.authorization.complete_authorization
        # the executor
        self.call_tool = self.executor.call_tool
        self.call_tool_by_name = self.executor.call_tool_by_name
        self.debug_call = self.executor.debug_call

    @property
    def settings(self) -> PluginSettings:
        return self._ctx.settings

    @settings.setter
    def settings(self, value: PluginSettings) -> None:
        self._ctx.settings = value

    @property
    def callback_url(self) -> str | None:
        """Where providers send users back (``<public_url>coze_lab/api/plugins/oauth/callback``)."""
        return self.authorization.callback_url

    @property
    def on_authorized(self) -> Any:
        return self._ctx.on_authorized

    @on_authorized.setter
    def on_authorized(self, value: Callable[[int, int], Awaitable[None]] | None) -> None:
        self._ctx.on_authorized = value

    # shared state, for tests that reach in
    @property
    def _db(self) -> Database:
        return self._ctx.db

    @property
    def _box(self) -> SecretBox:
        return self._ctx.box

    @property
    def _policy(self) -> OutboundPolicy:
        return self._ctx.policy

    @_policy.setter
    def _policy(self, value: OutboundPolicy) -> None:
        self._ctx.policy = value
