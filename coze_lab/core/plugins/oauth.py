"""OAuth 2 for plugins: authorization URLs with state and PKCE (S256), token requests.

Every token request goes through the SSRF guard like a tool call.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from coze_lab.core.net import OutboundPolicy, guarded_request
from coze_lab.core.plugins.manifest import AuthConfig


class OAuthError(Exception):
    """The authorization server refused (``invalid_grant`` ...) or answered nonsense."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Token:
    access_token: str
    token_type: str = "Bearer"
    refresh_token: str | None = None
    expires_at: datetime | None = None
    scope: str = ""

    def expired(self, now: datetime, skew: timedelta = timedelta(seconds=30)) -> bool:
        return self.expires_at is not None and self.expires_at <= now + skew

    def to_dict(self) -> dict[str, Any]:
        return {
            "access_token": self.access_token,
            "token_type": self.token_type,
            "refresh_token": self.refresh_token,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "scope": self.scope,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Token:
        expires = data.get("expires_at")
        return cls(
            access_token=data["access_token"],
            token_type=data.get("token_type") or "Bearer",
            refresh_token=data.get("refresh_token"),
            expires_at=datetime.fromisoformat(expires) if expires else None,
            scope=data.get("scope") or "",
        )


def new_state() -> str:
    return secrets.token_urlsafe(32)


def state_hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def pkce_pair() -> tuple[str, str]:
    """(code_verifier, S256 code_challenge) per RFC 7636."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def authorization_url(
    auth: AuthConfig, *, state: str, redirect_uri: str, code_challenge: str | None
) -> str:
    """The provider's authorization page for this user, keeping its own query.

    Example:
        >>> a = AuthConfig(type="oauth", authorization_url="https://p/auth?x=1", client_id="c")
        >>> authorization_url(a, state="s", redirect_uri="http://lab/cb", code_challenge=None)
        'https://p/auth?x=1&response_type=code&client_id=c&redirect_uri=http%3A%2F%2Flab%2Fcb&state=s'
    """
    query: dict[str, str] = {
        "response_type": "code",
        "client_id": auth.client_id,
        "redirect_uri": redirect_uri,
        "state": state,
    }
    if auth.scope:
        query["scope"] = auth.scope
    if code_challenge:
        query.update(code_challenge=code_challenge, code_challenge_method="S256")
    parts = urlsplit(auth.authorization_url)
    joined = "&".join(q for q in (parts.query, urlencode(query)) if q)
    return urlunsplit(parts._replace(query=joined))


async def request_token(
    policy: OutboundPolicy,
    auth: AuthConfig,
    client_secret: str | None,
    form: dict[str, str],
    *,
    now: datetime,
    timeout: float,
) -> Token:
    """POST ``form`` to the token endpoint with the client's credentials; the new Token."""
    headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
    body = dict(form)
    if auth.token_auth == "client_secret_basic" and client_secret is not None:
        pair = f"{auth.client_id}:{client_secret}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    else:
        body["client_id"] = auth.client_id
        if client_secret is not None:
            body["client_secret"] = client_secret
    try:
        response = await guarded_request(
            policy,
            "POST",
            auth.token_url,
            headers=headers,
            content=urlencode(body).encode(),
            timeout=timeout,
        )
    except Exception as exc:
        raise OAuthError(f"token endpoint unreachable: {getattr(exc, 'msg', exc)}") from exc
    try:
        data = response.json()
    except ValueError:
        data = {}
    if response.status_code >= 400 or not isinstance(data, dict) or "access_token" not in data:
        reason = data.get("error") if isinstance(data, dict) else None
        raise OAuthError(
            f"token endpoint answered {response.status_code}: {reason or 'no access_token'}",
            status=response.status_code,
        )
    expires_in = data.get("expires_in")
    return Token(
        access_token=str(data["access_token"]),
        token_type=str(data.get("token_type") or "Bearer"),
        refresh_token=data.get("refresh_token") or form.get("refresh_token"),
        expires_at=now + timedelta(seconds=float(expires_in)) if expires_in else None,
        scope=str(data.get("scope") or auth.scope),
    )
