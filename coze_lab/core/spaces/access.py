"""THE access rule for the objects of a space (bots, workflows, plugins, user tables).

One rule, in two forms:

- in SQL, :func:`visible`: a row is visible to a user when its space is one of the spaces
  the user is a member of (``space_members``). Every query of a shared kind filters with
  it, so a removed member's next request finds nothing (404, never 403: another space's
  objects look absent, as another user's always did);
- in Python, :class:`Access`: the user's roles, read in the caller's transaction, answering
  what a role allows (the role matrix below) for creating, deleting and managing members.

Both read ``space_members`` when asked: nothing is cached, so a membership change takes
effect on the member's very next request, on every replica.

Conversations, chats, messages, variables, runs, plugin credentials and the rows of user
tables are not shared: they stay filtered by their own user (``owner_id`` / ``sys_uid``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from sqlalchemy import BindParameter, ColumnElement, Select, select

from coze_lab.core.errors import NotFound, PermissionDenied
from coze_lab.store.models import SpaceMember, Workspace


class Role(str, Enum):
    """A member's role in a space (Coze's ``role_type``)."""

    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"


class Permission(str, Enum):
    READ = "read"  # see the space, its members and objects; chat with and run them
    EDIT = "edit"  # create objects in the space, edit and publish any of them
    DELETE_ANY = "delete_any"  # delete objects someone else made
    MANAGE_MEMBERS = "manage_members"  # add and remove members and admins
    RENAME = "rename"  # rename the space
    DELETE_SPACE = "delete_space"  # delete the (empty) space


#: the role matrix (docs/security.md shows it as a table)
ROLE_MATRIX: Mapping[Role, frozenset[Permission]] = {
    Role.OWNER: frozenset(Permission),
    Role.ADMIN: frozenset(Permission) - {Permission.DELETE_SPACE},
    Role.MEMBER: frozenset({Permission.READ, Permission.EDIT}),
}


def member_spaces(user_id: int | BindParameter[int]) -> Select[Any]:
    """The ids of the spaces ``user_id`` belongs to (a subquery)."""
    return select(SpaceMember.space_id).where(SpaceMember.user_id == user_id)


def visible(space_column: Any, user_id: int | BindParameter[int]) -> ColumnElement[bool]:
    """The access rule as a WHERE clause: the row's space is one of the user's.

    Example:
        >>> from coze_lab.store.models import BotRecord
        >>> print(visible(BotRecord.workspace_id, 7))  # doctest: +NORMALIZE_WHITESPACE
        bots.workspace_id IN (SELECT space_members.space_id FROM space_members
        WHERE space_members.user_id = :user_id_1)
    """
    return space_column.in_(member_spaces(user_id))


@dataclass(frozen=True)
class Access:
    """What one user may do in each space, as read from ``space_members`` just now.

    Example:
        >>> access = Access(user_id=1, roles={10: Role.OWNER, 20: Role.MEMBER})
        >>> access.can_read(20), access.can_edit(20), access.can_delete(20, creator_id=2)
        (True, True, False)
        >>> access.can_delete(20, creator_id=1), access.can_read(30)
        (True, False)
    """

    user_id: int
    roles: Mapping[int, Role]
    #: the user's personal space (where objects go when no space is named)
    personal_id: int | None = None

    @classmethod
    def load(cls, connection: Any, user_id: int) -> Access:
        """The user's roles, read with ``connection`` (a Connection or a Session)."""
        rows = connection.execute(
            select(SpaceMember.space_id, SpaceMember.role, Workspace.workspace_type)
            .join(Workspace, Workspace.id == SpaceMember.space_id)
            .where(SpaceMember.user_id == user_id)
        ).all()
        personal = next((r.space_id for r in rows if r.workspace_type == "personal"), None)
        return cls(user_id, {row.space_id: Role(row.role) for row in rows}, personal)

    def space(self, space_id: int | None) -> int:
        """``space_id``, or the personal space when None."""
        if space_id is not None:
            return space_id
        if self.personal_id is None:
            raise NotFound(f"user {self.user_id} has no personal workspace")
        return self.personal_id

    @property
    def space_ids(self) -> frozenset[int]:
        return frozenset(self.roles)

    def role(self, space_id: int) -> Role | None:
        return self.roles.get(space_id)

    def allows(self, space_id: int, permission: Permission) -> bool:
        role = self.roles.get(space_id)
        return role is not None and permission in ROLE_MATRIX[role]

    def can_read(self, space_id: int) -> bool:
        return self.allows(space_id, Permission.READ)

    def can_edit(self, space_id: int) -> bool:
        return self.allows(space_id, Permission.EDIT)

    def can_delete(self, space_id: int, creator_id: int) -> bool:
        """Anyone who may edit deletes what they made; owners and admins delete anything."""
        if creator_id == self.user_id:
            return self.can_edit(space_id)
        return self.allows(space_id, Permission.DELETE_ANY)

    def require(self, space_id: int, permission: Permission) -> Role:
        """The user's role, or NotFound for a non-member (the space looks absent) and
        PermissionDenied for a member whose role does not allow ``permission``."""
        role = self.roles.get(space_id)
        if role is None:
            raise NotFound(f"workspace {space_id} does not exist")
        if permission not in ROLE_MATRIX[role]:
            raise PermissionDenied(
                f"a space {role.value} cannot {permission.value.replace('_', ' ')} "
                f"in workspace {space_id}"
            )
        return role

    def require_delete(self, space_id: int, creator_id: int, what: str) -> None:
        """Refuse deleting ``what`` unless the user made it or may delete anything."""
        self.require(space_id, Permission.READ)
        if not self.can_delete(space_id, creator_id):
            raise PermissionDenied(
                f"only the space's owner or admins, or its maker, can delete {what}"
            )
