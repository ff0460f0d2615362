"""Bases that mount coze_lab handlers inside jupyter_server."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.identity import IdentityProvider, PasswordIdentityProvider
from jupyter_server.base.handlers import APIHandler

from coze_lab.core.errors import PermissionDenied, Unauthenticated
from coze_lab.core.identity import UserInfo
from coze_lab.web.base import CozeHandler

_SINGLE_USER_PROVIDERS = (IdentityProvider, PasswordIdentityProvider)
_ACTIONS = {"GET": "read", "HEAD": "read", "OPTIONS": "read"}


class JupyterStudioBase(CozeHandler, APIHandler):
    """Studio API inside Jupyter: the user is Jupyter's (JupyterHub-aware) identity."""

    def studio_user(self) -> UserInfo:
        if self._coze_user is None:
            user = self.current_user
            if user is None:
                raise Unauthenticated("not logged in to Jupyter")
            action = _ACTIONS.get(self.request.method or "", "write")
            if not self.authorizer.is_authorized(self, user, action, self.AUTH_RESOURCE):
                raise PermissionDenied(f"not allowed to {action} {self.AUTH_RESOURCE}")
            self._coze_user = self.runtime.identity.ensure_user(self._user_name(user.username))
        return self._coze_user

    def _user_name(self, username: str) -> str:
        # jupyter_server's own providers make up a new anonymous user per cookie-less
        # session; a plain server is single-user, so they all are its local user.
        if type(self.identity_provider) in _SINGLE_USER_PROVIDERS:
            return self.runtime.config.local_user
        return username

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        CozeHandler.write_error(self, status_code, **kwargs)


class JupyterCozeApiBase(CozeHandler, APIHandler):
    """Coze OpenAPI inside Jupyter: personal access tokens, as in the standalone server."""

    def check_xsrf_cookie(self) -> None:
        # A bearer header is never attached by a browser on its own: no CSRF to guard.
        if self.request.headers.get("Authorization", "").lower().startswith("bearer "):
            return None
        return super().check_xsrf_cookie()

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        CozeHandler.write_error(self, status_code, **kwargs)
