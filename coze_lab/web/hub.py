"""JupyterHub identity for ``coze-lab serve`` when it runs as a hub service.

JupyterHub starts a managed service with ``JUPYTERHUB_API_TOKEN``, ``JUPYTERHUB_API_URL``,
``JUPYTERHUB_SERVICE_PREFIX``, ``JUPYTERHUB_CLIENT_ID`` and ``JUPYTERHUB_OAUTH_CALLBACK_URL``
in its environment. With those set the server accepts, besides personal access tokens:

- a hub API token (``Authorization: token …`` or ``Bearer …``), e.g. a notebook kernel's
  ``JUPYTERHUB_API_TOKEN``;
- a browser session through the hub's OAuth (``<prefix>oauth_callback``), kept in a cookie.

Either must carry the service's access scope (``access:services!service=<name>``, which
``coze-lab hub-config`` grants to every user and to their servers' tokens). The hub user
``alice`` is coze_lab user ``alice``, the same record the single-user server's extension
uses. The hub's answers are cached for ``hub_auth_cache_s`` seconds, so a revoked token or a
stopped session stops working within that time. Hub admins are coze_lab admins (usage).

>>> hub = HubIdentity.from_environ({})   # not under a hub
>>> hub is None
True
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse, urlunparse

from cryptography.fernet import Fernet, InvalidToken

if TYPE_CHECKING:
    from tornado.web import RequestHandler

log = logging.getLogger("coze_lab.hub")

#: how long an OAuth login may take between the redirect to the hub and the callback
STATE_TTL_S = 600


@dataclass(frozen=True)
class HubUser:
    """Who a hub token or session belongs to."""

    name: str
    admin: bool
    #: True for a token in a header, False for a browser session (cookie)
    token: bool


class HubIdentity:
    """Checks hub tokens and OAuth sessions for the standalone server.

    Example:
        >>> hub = HubIdentity.from_environ(os.environ, cache_s=30)   # doctest: +SKIP
        >>> (await hub.user(handler)).name                          # doctest: +SKIP
        'alice'
    """

    def __init__(self, environ: Mapping[str, str], *, cache_s: float = 30.0) -> None:
        try:
            from jupyterhub.services.auth import HubOAuth
        except ImportError as exc:  # the service image needs the hub package
            raise RuntimeError(
                "coze-lab serve runs as a JupyterHub service (JUPYTERHUB_API_TOKEN is set) "
                "but the jupyterhub package is missing: pip install 'coze-lab[hub]'"
            ) from exc

        api_token = environ["JUPYTERHUB_API_TOKEN"]
        self.service_name = environ.get("JUPYTERHUB_SERVICE_NAME", "coze-lab")
        self.prefix = environ.get("JUPYTERHUB_SERVICE_PREFIX") or "/"
        secret = hashlib.sha256(b"coze_lab hub oauth state\0" + api_token.encode()).digest()
        self.cookie_secret = hashlib.sha256(b"coze_lab hub cookie\0" + api_token.encode()).digest()
        states = Fernet(base64.urlsafe_b64encode(secret))

        class ReplicaSafeHubOAuth(HubOAuth):
            """OAuth state in the state value itself (encrypted), not in process memory:
            the login may start on one replica and come back to another."""

            def generate_state(self, next_url: str | None = None, **extra: Any) -> str:
                payload = json.dumps({"next_url": next_url, **extra}).encode()
                return states.encrypt(payload).decode()

            def clear_oauth_state(self, state_id: str) -> None:
                return None

            def _decode_state(self, state_id: str, /) -> dict[str, Any]:
                try:
                    return json.loads(states.decrypt(state_id.encode(), ttl=STATE_TTL_S))
                except (InvalidToken, ValueError):
                    return {}

        self.auth = ReplicaSafeHubOAuth(
            api_token=api_token,
            api_url=environ.get("JUPYTERHUB_API_URL", "http://127.0.0.1:8081/hub/api"),
            base_url=self.prefix,
            cache_max_age=max(int(cache_s), 0),
            oauth_client_id=environ.get("JUPYTERHUB_CLIENT_ID") or f"service-{self.service_name}",
            access_scopes=_access_scopes(environ, self.service_name),
        )

    @classmethod
    def from_environ(
        cls, environ: Mapping[str, str], *, cache_s: float = 30.0
    ) -> HubIdentity | None:
        """The hub identity when the environment is a hub service's, else None."""
        if not (environ.get("JUPYTERHUB_API_TOKEN") and environ.get("JUPYTERHUB_API_URL")):
            return None
        return cls(environ, cache_s=cache_s)

    @property
    def callback_path(self) -> str:
        """Where the hub sends the browser back after login (under the service prefix)."""
        return self.prefix + "oauth_callback"

    async def user(self, handler: RequestHandler) -> HubUser | None:
        """The hub user behind the request's token or session cookie, if any and allowed.

        A personal access token is never sent to the hub.
        """
        header = handler.request.headers.get("Authorization", "")
        if header.partition(" ")[2].strip().startswith("pat_"):
            return None
        model = await self.auth.get_user(handler, sync=False)
        if not model:
            return None
        if not self.auth.check_scopes(self.auth.access_scopes, model):
            log.info("hub user %s lacks %s", model.get("name"), sorted(self.auth.access_scopes))
            return None
        return HubUser(
            name=str(model["name"]),
            admin=bool(model.get("admin")),
            token=bool(getattr(handler, "_token_authenticated", False)),
        )

    def login_redirect(self, handler: RequestHandler) -> str:
        """The hub login URL for a browser, with the OAuth state cookie set on ``handler``."""
        verifier, challenge, method = self.auth.generate_pkce_code_challenge()
        state = self.auth.set_state_cookie(
            handler, next_url=handler.request.uri, code_verifier=verifier
        )
        from tornado.httputil import url_concat

        return url_concat(
            self.auth.login_url,
            {"state": state, "code_challenge": challenge, "code_challenge_method": method},
        )


def _access_scopes(environ: Mapping[str, str], service: str) -> set[str]:
    raw = environ.get("JUPYTERHUB_OAUTH_ACCESS_SCOPES")
    if raw:
        return set(json.loads(raw))
    return {f"access:services!service={service}"}


def callback_handler(hub: HubIdentity) -> type:
    """The OAuth callback handler bound to ``hub`` (jupyterhub's, which sets the cookie)."""
    from jupyterhub.services.auth import HubOAuthCallbackHandler

    class OAuthCallback(HubOAuthCallbackHandler):
        def initialize(self) -> None:
            self.hub_auth = hub.auth

    return OAuthCallback


def hub_public_url(environ: Mapping[str, str], base_url: str) -> str | None:
    """Where users reach a server under JupyterHub: the hub's public URL
    (``JUPYTERHUB_PUBLIC_URL``, set when the hub's ``public_url`` is configured) with
    ``base_url`` as its path; None when the hub does not say. Never a request's ``Host``.

    Example:
        >>> hub_public_url({"JUPYTERHUB_PUBLIC_URL": "https://hub.example.org/"}, "/user/a/")
        'https://hub.example.org/user/a/'
    """
    public = environ.get("JUPYTERHUB_PUBLIC_URL", "")
    if not public:
        return None
    parts = urlparse(public)
    return urlunparse((parts.scheme, parts.netloc, base_url, "", "", ""))
