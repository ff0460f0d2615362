"""Workspaces (spaces): Coze's ``/v1/workspaces`` and ``/v1/workspaces/{id}/members``, and
the studio's ``/coze_lab/api/spaces`` (create, rename, delete a team space; members)."""

from __future__ import annotations

from typing import Any

from coze_lab.core.errors import InvalidParameter, NotFound, PermissionDenied
from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.params import int_value


def _page(handler: CozeHandler, high: int) -> tuple[int, int]:
    page_num = int_value(
        handler.get_query_argument("page_num", None), "page_num", default=1, low=1, high=10**6
    )
    page_size = int_value(
        handler.get_query_argument("page_size", None), "page_size", default=20, low=1, high=high
    )
    return page_num, page_size


# ---- the Coze API ------------------------------------------------------------------------
class WorkspacesHandler(CozeHandler):
    """GET /v1/workspaces: the personal and team spaces the caller belongs to."""

    def get(self) -> None:
        user = self.coze_user()
        page_num, page_size = _page(self, 100)
        items, total = self.runtime.spaces.list(user.id, page_num=page_num, page_size=page_size)
        self.reply({"workspaces": [serialize.workspace(w) for w in items], "total_count": total})


class WorkspaceMembersHandler(CozeHandler):
    """``/v1/workspaces/{workspace_id}/members``: list (GET), add (POST ``{users: [{user_id,
    role_type}]}``), remove (DELETE ``{user_ids: [...]}``), as cozepy's
    ``workspaces.members`` calls them."""

    def get(self, workspace_id: str) -> None:
        user = self.coze_user()
        page_num, page_size = _page(self, 50)
        items, total = self.runtime.spaces.members(
            user.id, parse_id(workspace_id, "workspace_id"), page_num=page_num, page_size=page_size
        )
        self.reply({"items": [serialize.workspace_member(m) for m in items], "total_count": total})

    def post(self, workspace_id: str) -> None:
        user = self.coze_user()
        users = self.json_body().get("users")
        if not isinstance(users, list) or not all(isinstance(u, dict) for u in users):
            raise InvalidParameter("users must be a list of {user_id, role_type}")
        result = self.runtime.spaces.add_members(
            user.id,
            parse_id(workspace_id, "workspace_id"),
            [(u.get("user_id"), u.get("role_type", "member")) for u in users],
        )
        self.reply(
            {
                "added_success_user_ids": [str(i) for i in result.added],
                "invited_success_user_ids": [],
                "not_exist_user_ids": result.not_exist,
                "already_joined_user_ids": [str(i) for i in result.already_joined],
                "already_invited_user_ids": [],
            }
        )

    def delete(self, workspace_id: str) -> None:
        user = self.coze_user()
        user_ids = self.json_body().get("user_ids")
        if isinstance(user_ids, str):  # a comma-separated list, as the Go SDK may send it
            user_ids = [part for part in user_ids.split(",") if part]
        if not isinstance(user_ids, list):
            raise InvalidParameter("user_ids must be a list of user ids")
        result = self.runtime.spaces.remove_members(
            user.id, parse_id(workspace_id, "workspace_id"), user_ids
        )
        self.reply(
            {
                "removed_success_user_ids": [str(i) for i in result.removed],
                "not_in_workspace_user_ids": result.not_in_workspace,
                "owner_not_support_remove_user_ids": [str(i) for i in result.owner_not_removable],
            }
        )


# ---- the studio API ----------------------------------------------------------------------
class SpacesArea(CozeHandler):
    """The studio's spaces: one Jupyter authorizer resource for the area."""

    AUTH_RESOURCE = "coze_lab.spaces"

    def _name(self, body: dict[str, Any]) -> Any:
        return body.get("name")


class SpacesHandler(SpacesArea):
    """GET: your spaces (personal and team) with your role. POST ``{name}``: a team space."""

    def get(self) -> None:
        user = self.studio_user()
        items, _ = self.runtime.spaces.list(user.id, page_size=100)
        self.reply({"spaces": [serialize.space(s) for s in items]})

    def post(self) -> None:
        user = self.studio_user()
        info = self.runtime.spaces.create(user.id, self._name(self.json_body()))
        self.reply(serialize.space(info), status=201)


class SpaceHandler(SpacesArea):
    """GET a space, PUT ``{name}`` renames it, DELETE deletes it (when empty)."""

    def get(self, space_id: str) -> None:
        user = self.studio_user()
        self.reply(
            serialize.space(self.runtime.spaces.get(user.id, parse_id(space_id, "space_id")))
        )

    def put(self, space_id: str) -> None:
        user = self.studio_user()
        info = self.runtime.spaces.rename(
            user.id, parse_id(space_id, "space_id"), self._name(self.json_body())
        )
        self.reply(serialize.space(info))

    def delete(self, space_id: str) -> None:
        user = self.studio_user()
        self.runtime.spaces.delete(user.id, parse_id(space_id, "space_id"))
        self.reply(None)


class SpaceMembersHandler(SpacesArea):
    """GET: the members. POST ``{name, role}``: add a user by name (4201 if a member)."""

    def get(self, space_id: str) -> None:
        user = self.studio_user()
        items, total = self.runtime.spaces.members(
            user.id, parse_id(space_id, "space_id"), page_size=50
        )
        self.reply({"members": [serialize.member(m) for m in items], "total": total})

    def post(self, space_id: str) -> None:
        user = self.studio_user()
        body = self.json_body()
        name = body.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidParameter("name must name a user")
        info = self.runtime.spaces.add_member(
            user.id, parse_id(space_id, "space_id"), name, body.get("role", "member")
        )
        self.reply(serialize.member(info), status=201)


class SpaceMemberHandler(SpacesArea):
    """DELETE: remove a member (by user id); a member may remove themselves (leave)."""

    def delete(self, space_id: str, member_id: str) -> None:
        user = self.studio_user()
        result = self.runtime.spaces.remove_members(
            user.id, parse_id(space_id, "space_id"), [member_id]
        )
        if result.owner_not_removable:
            raise PermissionDenied("the owner stays in the space until it is deleted")
        if not result.removed:
            raise NotFound(f"user {member_id} is not a member of space {space_id}")
        self.reply(None)
