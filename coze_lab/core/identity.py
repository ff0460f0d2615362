"""Users and their personal workspaces (Coze's ``space_id``; team spaces: core/spaces)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.core.ids import new_id
from coze_lab.core.spaces.access import Role
from coze_lab.store import Database
from coze_lab.store.models import SpaceMember, User, Workspace

MAX_USER_NAME = 255


@dataclass(frozen=True)
class UserInfo:
    id: int
    name: str
    workspace_id: int
    created_at: datetime


class IdentityService:
    """Finds or creates the user behind a Jupyter identity or a CLI ``--user``.

    Example:
        >>> ids = IdentityService(db)                      # doctest: +SKIP
        >>> alice = ids.ensure_user("alice")               # doctest: +SKIP
        >>> ids.ensure_user("alice").id == alice.id        # doctest: +SKIP
        True
    """

    def __init__(self, db: Database, *, clock: Clock = utcnow) -> None:
        self._db = db
        self._clock = clock
        self._users: dict[int, UserInfo] = {}

    def ensure_user(self, name: str) -> UserInfo:
        """The user called ``name``, created with a personal workspace on first sight."""
        name = _valid_user_name(name)
        found = self.find_user(name)
        if found is not None:
            return found
        try:
            return self._create_user(name)
        except IntegrityError:  # another request created the same user meanwhile
            created = self.find_user(name)
            if created is None:
                raise
            return created

    def find_user(self, name: str) -> UserInfo | None:
        with self._db.transaction() as session:
            row = session.execute(
                select(User, Workspace.id)
                .join(Workspace, Workspace.owner_id == User.id)
                .where(User.name == name, Workspace.workspace_type == "personal")
            ).first()
        return None if row is None else _user_info(row[0], row[1])

    def get_user(self, user_id: int) -> UserInfo:
        """A user by id (users and their personal workspace never change: cached)."""
        cached = self._users.get(user_id)
        if cached is not None:
            return cached
        with self._db.read() as conn:
            row = conn.execute(
                select(User.id, User.name, User.created_at, Workspace.id.label("workspace_id"))
                .join(Workspace, Workspace.owner_id == User.id)
                .where(User.id == user_id, Workspace.workspace_type == "personal")
            ).first()
        if row is None:
            raise NotFound(f"user {user_id} does not exist")
        info = UserInfo(
            id=row.id, name=row.name, workspace_id=row.workspace_id, created_at=row.created_at
        )
        if len(self._users) > 10_000:
            self._users.clear()
        self._users[user_id] = info
        return info

    def _create_user(self, name: str) -> UserInfo:
        now = self._clock()
        user = User(id=new_id(), name=name, created_at=now)
        workspace = Workspace(
            id=new_id(),
            owner_id=user.id,
            name="Personal",
            workspace_type="personal",
            created_at=now,
        )
        with self._db.transaction() as session:
            session.add(user)
            session.flush()
            session.add(workspace)
            session.flush()
            session.add(
                SpaceMember(
                    space_id=workspace.id, user_id=user.id, role=Role.OWNER.value, created_at=now
                )
            )
        return _user_info(user, workspace.id)


def _valid_user_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidParameter("user name must be a non-empty string")
    if len(name) > MAX_USER_NAME or any(ord(ch) < 32 for ch in name):
        raise InvalidParameter("user name is too long or contains control characters")
    return name


def _user_info(user: User, workspace_id: int) -> UserInfo:
    return UserInfo(
        id=user.id, name=user.name, workspace_id=workspace_id, created_at=user.created_at
    )
