"""The base that mounts coze_lab handlers in ``coze-lab serve``: tokens for everything."""

from __future__ import annotations

from coze_lab.core.errors import PermissionDenied
from coze_lab.core.identity import UserInfo
from coze_lab.web.base import CozeHandler


class StandaloneBase(CozeHandler):
    def studio_user(self) -> UserInfo:
        principal = self.principal()
        if principal.scopes is not None or principal.connector_id is not None:
            raise PermissionDenied(
                "the studio API needs a token without scopes or connector binding"
            )
        return self.coze_user()
