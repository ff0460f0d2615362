"""The base that mounts coze_lab handlers in ``coze-lab serve``: tokens for everything.

Under JupyterHub (see ``coze_lab.web.hub``) a hub API token or a hub login session is
accepted too, checked before the handler runs (the check may ask the hub, so it is async).
"""

from __future__ import annotations

from tornado import web

from coze_lab.core.errors import PermissionDenied
from coze_lab.core.identity import UserInfo
from coze_lab.core.tokens import Principal
from coze_lab.web.base import CozeHandler
from coze_lab.web.hub import HubIdentity, HubUser

#: the application setting holding the HubIdentity (absent outside a hub)
HUB_KEY = "coze_lab_hub"


class StandaloneBase(CozeHandler):
    _hub_user: HubUser | None = None

    @property
    def hub(self) -> HubIdentity | None:
        return self.settings.get(HUB_KEY)

    async def prepare(self) -> None:
        await super().prepare()  # the body cap (see CozeHandler)
        hub = self.hub
        if hub is None or self._finished:
            return
        user = await hub.user(self)
        if user is not None:
            self._hub_user = user
            runtime = self.runtime
            info = await runtime.offload(runtime.identity.ensure_user, user.name)
            self._principal = Principal(user_id=info.id, token_id=0, scopes=None, connector_id=None)

    def principal(self) -> Principal:
        if self._principal is None and self.hub is not None and self._browser_visit():
            # a person in a browser without a session: sign in through the hub
            self.redirect(self.hub.login_redirect(self))
            raise web.Finish()
        return super().principal()

    def _browser_visit(self) -> bool:
        request = self.request
        return (
            request.method in ("GET", "HEAD")
            and not request.headers.get("Authorization")
            and "text/html" in request.headers.get("Accept", "")
        )

    def studio_user(self) -> UserInfo:
        principal = self.principal()
        if principal.scopes is not None or principal.connector_id is not None:
            raise PermissionDenied(
                "the studio API needs a token without scopes or connector binding"
            )
        return self.coze_user()

    def admin_user(self) -> UserInfo:
        user = self.studio_user()
        if self._hub_user is None or not self._hub_user.admin:
            raise PermissionDenied("only JupyterHub admins, signed in through the hub, see this")
        return user
