"""Plugin authorization: users' credentials (encrypted) and OAuth 2 (authorization code
with state and PKCE, client credentials, refresh), and signing a tool call's request."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select, update

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import new_id
from coze_lab.core.plugins import oauth
from coze_lab.core.plugins.credentials import CLIENT, SERVICE, TOKEN
from coze_lab.core.plugins.lookups import PluginLookups, _check_scene, _Loaded
from coze_lab.core.plugins.manifest import Manifest, render_template
from coze_lab.core.plugins.request import HttpRequest
from coze_lab.core.plugins.types import (
    PluginInfo,
)
from coze_lab.store.models import (
    PluginOAuthState,
    PluginRecord,
)

log = logging.getLogger("coze_lab.plugins")


CALLBACK_PATH = "coze_lab/api/plugins/oauth/callback"


class AuthorizationRequired(Exception):
    """No usable OAuth token: the user must (re-)authorize the plugin."""


class MissingCredential(Exception):
    """A service-token plugin whose user has not set the credentials yet."""


class PluginAuthorization(PluginLookups):
    """Credentials and OAuth of each user for each plugin."""

    def set_credentials(
        self, owner_id: int, plugin_id: int, values: Mapping[str, Any]
    ) -> list[str]:
        """Store the user's secrets: token variables (``api_key``) or ``client_secret``.
        Returns the names stored, never the values."""
        if not isinstance(values, Mapping) or not values:
            raise InvalidParameter("credentials must be a non-empty object of name → text")
        if not all(isinstance(k, str) and isinstance(v, str) and v for k, v in values.items()):
            raise InvalidParameter("every credential must be a non-empty string")
        with self._db.transaction() as session:
            row = self._visible(session, owner_id, plugin_id)
            manifest = Manifest.from_dict(row.manifest)
            client = {k: v for k, v in values.items() if k == "client_secret"}
            tokens = {k: v for k, v in values.items() if k != "client_secret"}
            if client:
                if manifest.auth.type != "oauth":
                    raise InvalidParameter("client_secret is for OAuth plugins")
                # the OAuth app's secret is part of the plugin: its editors set it for all
                self._editable(session, owner_id, plugin_id)
                self._credentials.put(session, plugin_id, row.owner_id, CLIENT, client)
            if tokens:
                check_credentials(manifest, tokens)
                self._credentials.put(session, plugin_id, owner_id, SERVICE, tokens)
        return sorted(values)

    def clear_credentials(self, owner_id: int, plugin_id: int) -> None:
        """Forget the user's tokens and OAuth authorization for the plugin."""
        with self._reading() as session:
            self._visible(session, owner_id, plugin_id)
        self._credentials.remove(plugin_id, owner_id, [SERVICE, TOKEN])

    @property
    def callback_url(self) -> str | None:
        """Where providers send users back (``<public_url>coze_lab/api/plugins/oauth/callback``)."""
        base = self._ctx.public_url() if callable(self._ctx.public_url) else self._ctx.public_url
        return None if not base else base.rstrip("/") + "/" + CALLBACK_PATH

    def authorization_url(
        self,
        owner_id: int,
        plugin_id: int,
        *,
        redirect_uri: str | None = None,
        scene: str = "draft",
        version: int | None = None,
    ) -> str:
        """A fresh authorization URL (state + PKCE) for the user to open."""
        _check_scene(scene)
        with self._db.transaction() as session:
            row = self._visible(session, owner_id, plugin_id)
            manifest = (
                Manifest.from_dict(row.manifest)
                if scene == "draft"
                else Manifest.from_dict(self._version(session, row, version).manifest)
            )
            return self.new_authorization(
                session, owner_id, row, manifest, redirect_uri, scene, version
            )

    def new_authorization(
        self,
        session: Any,
        user_id: int,
        row: PluginRecord,
        manifest: Manifest,
        redirect_uri: str | None,
        scene: str,
        version: int | None,
    ) -> str:
        auth = manifest.auth
        if auth.type != "oauth" or auth.grant_type != "authorization_code":
            raise InvalidParameter(f"plugin {row.id} does not use the OAuth authorization code")
        redirect = redirect_uri or self.callback_url
        if not redirect:
            raise InvalidParameter(
                "no OAuth callback address: set c.CozeLab.public_url (or COZE_LAB_PUBLIC_URL) "
                "to the URL users reach this server at, e.g. https://hub.example.org/user/you/"
            )
        state = oauth.new_state()
        verifier, challenge = oauth.pkce_pair() if auth.pkce else (None, None)
        now = self._clock()
        session.add(
            PluginOAuthState(
                id=new_id(),
                state_hash=oauth.state_hash(state),
                owner_id=user_id,  # whose token the callback stores
                plugin_id=row.id,
                secret=self._box.encrypt(
                    {
                        "code_verifier": verifier,
                        "redirect_uri": redirect,
                        "scene": scene,
                        "version": version,
                    }
                ),
                created_at=now,
                expires_at=now + self.settings.state_ttl,
                used_at=None,
            )
        )
        return oauth.authorization_url(
            auth, state=state, redirect_uri=redirect, code_challenge=challenge
        )

    async def complete_authorization(
        self, state: str | None, code: str | None, *, error: str | None = None
    ) -> PluginInfo:
        """The provider's redirect: check the state (once, unexpired), exchange the code
        for a token, store it encrypted, then resume what waited for it."""
        if not isinstance(state, str) or not state:
            raise InvalidParameter("the callback has no state")
        now = self._clock()
        with self._db.transaction() as session:
            row = session.scalars(
                select(PluginOAuthState).where(
                    PluginOAuthState.state_hash == oauth.state_hash(state)
                )
            ).first()
            if row is None:
                raise InvalidParameter("unknown authorization state")
            won = session.execute(
                update(PluginOAuthState)
                .where(
                    PluginOAuthState.id == row.id,
                    PluginOAuthState.used_at.is_(None),
                    PluginOAuthState.expires_at > now,
                )
                .values(used_at=now)
            ).rowcount
            if won != 1:
                raise InvalidParameter("the authorization state was used or has expired")
            owner_id, plugin_id = row.owner_id, row.plugin_id
            saved = self._box.decrypt(row.secret)
        if error:
            raise InvalidParameter(f"the provider refused the authorization: {error}")
        if not isinstance(code, str) or not code:
            raise InvalidParameter("the callback has no code")
        manifest, plugin_owner = self._manifest_of(
            owner_id, plugin_id, saved["scene"], saved["version"]
        )
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": saved["redirect_uri"],
        }
        if saved.get("code_verifier"):
            form["code_verifier"] = saved["code_verifier"]
        client = self._credentials.get(plugin_id, plugin_owner, CLIENT) or {}
        try:
            token = await oauth.request_token(
                self._policy,
                manifest.auth,
                client.get("client_secret"),
                form,
                now=self._clock(),
                timeout=self.settings.timeout_s,
            )
        except oauth.OAuthError as exc:
            raise InvalidParameter(f"the code exchange failed: {exc}") from exc
        self._credentials.save(plugin_id, owner_id, TOKEN, token.to_dict(), token.expires_at)
        log.info("plugin %s authorized for user %s", plugin_id, owner_id)
        if self._ctx.on_authorized is not None:
            try:
                await self._ctx.on_authorized(owner_id, plugin_id)
            except Exception:  # the token is stored; resuming is best effort
                log.exception("resuming after the authorization of plugin %s failed", plugin_id)
        return self.get(owner_id, plugin_id)

    def _manifest_of(
        self, owner_id: int, plugin_id: int, scene: str, version: int | None
    ) -> tuple[Manifest, int]:
        """The manifest of the scene, and the plugin's maker (who keeps its client secret)."""
        with self._reading() as session:
            row = self._visible(session, owner_id, plugin_id)
            if scene == "draft":
                return Manifest.from_dict(row.manifest), row.owner_id
            return Manifest.from_dict(self._version(session, row, version).manifest), row.owner_id

    async def _oauth_token(self, owner_id: int, loaded: _Loaded, *, force: bool = False) -> str:
        """A valid access token: stored, refreshed, or (client credentials) fetched."""
        auth = loaded.manifest.auth
        key = (owner_id, loaded.plugin_id)
        lock = self._ctx.refreshing.setdefault(key, asyncio.Lock())
        async with lock:
            stored = self._credentials.get(loaded.plugin_id, owner_id, TOKEN)
            token = oauth.Token.from_dict(stored) if stored else None
            if token is not None and not force and not token.expired(self._clock()):
                return token.access_token
            client = (
                self._credentials.get(loaded.plugin_id, loaded.plugin_owner_id, CLIENT) or {}
            ).get("client_secret")
            if auth.grant_type == "client_credentials":
                form = {"grant_type": "client_credentials"}
                if auth.scope:
                    form["scope"] = auth.scope
            elif token is not None and token.refresh_token:
                form = {"grant_type": "refresh_token", "refresh_token": token.refresh_token}
            else:
                raise AuthorizationRequired()
            try:
                fresh = await oauth.request_token(
                    self._policy,
                    auth,
                    client,
                    form,
                    now=self._clock(),
                    timeout=self.settings.timeout_s,
                )
            except oauth.OAuthError as exc:
                if form["grant_type"] == "refresh_token" and exc.status in (400, 401):
                    self._credentials.remove(loaded.plugin_id, owner_id, [TOKEN])
                    raise AuthorizationRequired() from exc
                raise
            self._credentials.save(
                loaded.plugin_id, owner_id, TOKEN, fresh.to_dict(), fresh.expires_at
            )
            return fresh.access_token

    def refreshable(self, loaded: _Loaded) -> bool:
        return loaded.manifest.auth.type == "oauth"

    async def sign(
        self, request: HttpRequest, user_id: int, loaded: _Loaded, *, force: bool = False
    ) -> None:
        auth = loaded.manifest.auth
        if auth.type == "service_token":
            values = self._credentials.get(loaded.plugin_id, user_id, SERVICE) or {}
            missing = [v for v in auth.variables() if not values.get(v)]
            if missing:
                raise MissingCredential(
                    f"the plugin '{loaded.plugin_name}' needs credentials {missing}; "
                    "set them in the plugin's settings"
                )
            for name, template in auth.parameters.items():
                value = render_template(template, values)
                if auth.location == "query":
                    request.params[name] = value
                    request.secret_params.add(name)
                else:
                    request.headers[name] = value
                    request.secret_headers.add(name)
        elif auth.type == "oauth":
            token = await self._oauth_token(user_id, loaded, force=force)
            request.headers["Authorization"] = f"Bearer {token}"
            request.secret_headers.add("Authorization")


def check_credentials(manifest: Manifest, values: Mapping[str, str]) -> None:
    """Service-token values must be the variables the manifest's template names."""
    if manifest.auth.type != "service_token":
        raise InvalidParameter(
            f"the plugin's auth is {manifest.auth.type}; it takes no service token"
        )
    expected = set(manifest.auth.variables())
    unknown = sorted(set(values) - expected)
    if unknown:
        raise InvalidParameter(f"unknown credentials {unknown}; expected {sorted(expected)}")
