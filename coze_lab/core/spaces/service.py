"""Spaces (Coze workspaces): every user's personal space and the team spaces they share,
with their members.

A personal space has one member, its owner, and cannot be shared, renamed or deleted. A
team space has one owner (who made it), admins and members; what each role may do is the
role matrix of :mod:`coze_lab.core.spaces.access`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError

from coze_lab.core.clock import Clock, utcnow
from coze_lab.core.errors import Conflict, InvalidParameter, MemberExists, NotFound
from coze_lab.core.ids import new_id, parse_id
from coze_lab.core.spaces.access import Access, Permission, Role
from coze_lab.store import Database
from coze_lab.store.models import (
    BotRecord,
    PluginRecord,
    SpaceMember,
    User,
    UserTable,
    WorkflowRecord,
    Workspace,
)

PERSONAL, TEAM = "personal", "team"
MAX_NAME = 255
#: how many users one members call may add (Coze: 20) or remove (Coze: 5)
MAX_ADD, MAX_REMOVE = 20, 5


@dataclass(frozen=True)
class SpaceInfo:
    """A space as one member sees it: ``role`` is that member's."""

    id: int
    name: str
    workspace_type: str
    owner_id: int
    role: Role
    created_at: datetime


@dataclass(frozen=True)
class MemberInfo:
    user_id: int
    name: str
    role: Role
    joined_at: datetime


@dataclass(frozen=True)
class AddResult:
    """Coze's answer to adding members (``added_success_user_ids`` ...)."""

    added: list[int] = field(default_factory=list)
    not_exist: list[str] = field(default_factory=list)
    already_joined: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class RemoveResult:
    """Coze's answer to removing members (``removed_success_user_ids`` ...)."""

    removed: list[int] = field(default_factory=list)
    not_in_workspace: list[str] = field(default_factory=list)
    owner_not_removable: list[int] = field(default_factory=list)


class SpaceService:
    """List, create, rename and delete spaces; list, add and remove their members.

    Every call names the acting user; a space the user is not a member of is NotFound.

    Example:
        >>> spaces = SpaceService(db)                                  # doctest: +SKIP
        >>> team = spaces.create(alice.id, "team-a")                   # doctest: +SKIP
        >>> spaces.add_member(alice.id, team.id, "bob", Role.MEMBER)   # doctest: +SKIP
        >>> [s.name for s in spaces.list(bob.id)[0]]                   # doctest: +SKIP
        ['Personal', 'team-a']
    """

    def __init__(self, db: Database, *, clock: Clock = utcnow) -> None:
        self._db = db
        self._clock = clock

    # ---- spaces ---------------------------------------------------------------------------
    def list(
        self, user_id: int, *, page_num: int = 1, page_size: int = 20
    ) -> tuple[list[SpaceInfo], int]:
        """The spaces the user belongs to, by id, and their count."""
        if page_num < 1 or not 1 <= page_size <= 100:
            raise InvalidParameter("page_num must be >= 1 and page_size within 1..100")
        mine = SpaceMember.user_id == user_id
        with self._db.read() as connection:
            total = connection.execute(
                select(func.count()).select_from(SpaceMember).where(mine)
            ).scalar_one()
            rows = connection.execute(
                select(Workspace.__table__, SpaceMember.role)
                .join(SpaceMember, SpaceMember.space_id == Workspace.id)
                .where(mine)
                .order_by(SpaceMember.space_id)
                .offset((page_num - 1) * page_size)
                .limit(page_size)
            ).all()
        return [_space(row) for row in rows], total

    def get(self, user_id: int, space_id: int) -> SpaceInfo:
        with self._db.read() as connection:
            row = connection.execute(
                select(Workspace.__table__, SpaceMember.role)
                .join(SpaceMember, SpaceMember.space_id == Workspace.id)
                .where(SpaceMember.user_id == user_id, SpaceMember.space_id == space_id)
            ).first()
        if row is None:
            raise NotFound(f"workspace {space_id} does not exist")
        return _space(row)

    def find(self, user_id: int, ref: str | int) -> SpaceInfo:
        """One of the user's spaces by id, by name, or ``"personal"``.

        Example:
            >>> spaces.find(bob.id, "team-a").workspace_type        # doctest: +SKIP
            'team'
        """
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
            return self.get(user_id, parse_id(ref, "space"))
        if not isinstance(ref, str) or not ref:
            raise InvalidParameter("a space is named by its id or its name")
        spaces, _ = self.list(user_id, page_size=100)
        if ref == PERSONAL:
            return next(s for s in spaces if s.workspace_type == PERSONAL)
        found = [s for s in spaces if s.name == ref]
        if not found:
            raise NotFound(f"you are in no space called '{ref}'")
        if len(found) > 1:
            ids = ", ".join(str(s.id) for s in found)
            raise InvalidParameter(f"several of your spaces are called '{ref}' ({ids}): use an id")
        return found[0]

    def create(self, user_id: int, name: str) -> SpaceInfo:
        """A new team space owned by ``user_id``."""
        name = _name(name)
        now = self._clock()
        space = Workspace(
            id=new_id(), owner_id=user_id, name=name, workspace_type=TEAM, created_at=now
        )
        with self._db.transaction() as session:
            session.add(space)
            session.flush()
            session.add(
                SpaceMember(
                    space_id=space.id, user_id=user_id, role=Role.OWNER.value, created_at=now
                )
            )
        return SpaceInfo(space.id, name, TEAM, user_id, Role.OWNER, now)

    def rename(self, user_id: int, space_id: int, name: str) -> SpaceInfo:
        name = _name(name)
        with self._db.transaction() as session:
            Access.load(session, user_id).require(space_id, Permission.RENAME)
            row = session.get(Workspace, space_id, with_for_update=True)
            assert row is not None  # a member's space exists (members cascade with it)
            if row.workspace_type == PERSONAL:
                raise InvalidParameter("the personal space keeps its name")
            row.name = name
        return self.get(user_id, space_id)

    def delete(self, user_id: int, space_id: int) -> None:
        """Delete an empty team space (its objects are deleted or moved first: nothing is
        lost by accident)."""
        with self._db.transaction() as session:
            Access.load(session, user_id).require(space_id, Permission.DELETE_SPACE)
            row = session.get(Workspace, space_id, with_for_update=True)
            assert row is not None
            if row.workspace_type == PERSONAL:
                raise InvalidParameter("a personal space cannot be deleted")
            held = {
                kind: session.scalar(select(func.count()).where(column == space_id)) or 0
                for kind, column in (
                    ("bots", BotRecord.workspace_id),
                    ("workflows", WorkflowRecord.space_id),
                    ("plugins", PluginRecord.space_id),
                    ("tables", UserTable.space_id),
                )
            }
            left = ", ".join(f"{n} {kind}" for kind, n in held.items() if n)
            if left:
                raise Conflict(f"workspace {space_id} still holds {left}; delete them first")
            session.delete(row)

    # ---- members --------------------------------------------------------------------------
    def members(
        self, user_id: int, space_id: int, *, page_num: int = 1, page_size: int = 20
    ) -> tuple[list[MemberInfo], int]:
        """A page of the space's members (any member may look) and their count."""
        if page_num < 1 or not 1 <= page_size <= 50:
            raise InvalidParameter("page_num must be >= 1 and page_size within 1..50")
        with self._db.reading() as session:
            Access.load(session, user_id).require(space_id, Permission.READ)
            total = session.scalar(
                select(func.count())
                .select_from(SpaceMember)
                .where(SpaceMember.space_id == space_id)
            )
            rows = session.execute(
                select(SpaceMember.user_id, SpaceMember.role, SpaceMember.created_at, User.name)
                .join(User, User.id == SpaceMember.user_id)
                .where(SpaceMember.space_id == space_id)
                .order_by(SpaceMember.user_id)
                .offset((page_num - 1) * page_size)
                .limit(page_size)
            ).all()
        return [MemberInfo(r.user_id, r.name, Role(r.role), r.created_at) for r in rows], total or 0

    def add_members(
        self, user_id: int, space_id: int, users: Sequence[tuple[str, str]]
    ) -> AddResult:
        """Add ``(user id, role)`` pairs, Coze's batch way: unknown ids and members already
        there are reported, not errors."""
        if not users or len(users) > MAX_ADD:
            raise InvalidParameter(f"users must list 1..{MAX_ADD} users")
        wanted = [(raw, _role(role)) for raw, role in users]
        result = AddResult()
        now = self._clock()
        with self._db.transaction() as session:
            self._managed(session, user_id, space_id)
            present = self._present(session, space_id)
            for raw, role in wanted:
                target = _user_id(raw)
                if target is None or session.get(User, target) is None:
                    result.not_exist.append(str(raw))
                elif target in present:
                    result.already_joined.append(target)
                else:
                    session.add(
                        SpaceMember(
                            space_id=space_id, user_id=target, role=role.value, created_at=now
                        )
                    )
                    present.add(target)
                    result.added.append(target)
        return result

    def add_member(self, user_id: int, space_id: int, name: str, role: str) -> MemberInfo:
        """Add one user by name (the studio's way); MemberExists (4201) if already there."""
        target_role = _role(role)
        now = self._clock()
        try:
            with self._db.transaction() as session:
                self._managed(session, user_id, space_id)
                target = session.scalar(select(User.id).where(User.name == name))
                if target is None:
                    raise NotFound(f"there is no user called '{name}'")
                if target in self._present(session, space_id):
                    raise MemberExists(f"{name} is a member of workspace {space_id} already")
                session.add(
                    SpaceMember(
                        space_id=space_id, user_id=target, role=target_role.value, created_at=now
                    )
                )
        except IntegrityError as exc:  # added by someone else meanwhile
            raise MemberExists(f"{name} is a member of workspace {space_id} already") from exc
        return MemberInfo(target, name, target_role, now)

    def remove_members(self, user_id: int, space_id: int, user_ids: Sequence[str]) -> RemoveResult:
        """Remove members (owners and admins; anyone may remove themselves, except the
        owner, who stays until the space is deleted)."""
        if not user_ids or len(user_ids) > MAX_REMOVE:
            raise InvalidParameter(f"user_ids must list 1..{MAX_REMOVE} users")
        result = RemoveResult()
        with self._db.transaction() as session:
            access = Access.load(session, user_id)
            self._team(session, access, space_id)
            targets = [(raw, _user_id(raw)) for raw in user_ids]
            if any(t != user_id for _, t in targets):
                access.require(space_id, Permission.MANAGE_MEMBERS)
            rows = session.execute(
                select(SpaceMember.user_id, SpaceMember.role).where(
                    SpaceMember.space_id == space_id
                )
            ).all()
            roles = {row.user_id: row.role for row in rows}
            for raw, target in targets:
                if target is None or target not in roles:
                    result.not_in_workspace.append(str(raw))
                elif roles[target] == Role.OWNER.value:
                    result.owner_not_removable.append(target)
                else:
                    session.execute(
                        delete(SpaceMember).where(
                            SpaceMember.space_id == space_id, SpaceMember.user_id == target
                        )
                    )
                    roles.pop(target)
                    result.removed.append(target)
        return result

    # ---- internals ------------------------------------------------------------------------
    def _managed(self, session: object, user_id: int, space_id: int) -> None:
        access = Access.load(session, user_id)
        self._team(session, access, space_id)
        access.require(space_id, Permission.MANAGE_MEMBERS)

    def _team(self, session: object, access: Access, space_id: int) -> None:
        access.require(space_id, Permission.READ)
        kind = session.scalar(  # type: ignore[attr-defined]
            select(Workspace.workspace_type).where(Workspace.id == space_id)
        )
        if kind == PERSONAL:
            raise InvalidParameter(
                "a personal space has no other members: create a team space to share"
            )

    def _present(self, session: object, space_id: int) -> set[int]:
        return set(
            session.scalars(  # type: ignore[attr-defined]
                select(SpaceMember.user_id).where(SpaceMember.space_id == space_id)
            )
        )


def _space(row: object) -> SpaceInfo:
    return SpaceInfo(
        id=row.id,  # type: ignore[attr-defined]
        name=row.name,  # type: ignore[attr-defined]
        workspace_type=row.workspace_type,  # type: ignore[attr-defined]
        owner_id=row.owner_id,  # type: ignore[attr-defined]
        role=Role(row.role),  # type: ignore[attr-defined]
        created_at=row.created_at,  # type: ignore[attr-defined]
    )


def _name(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or len(value.strip()) > MAX_NAME:
        raise InvalidParameter(f"a space's name is a non-empty string of at most {MAX_NAME}")
    if any(ord(ch) < 32 for ch in value):
        raise InvalidParameter("a space's name has no control characters")
    if value.strip().isdigit() or value.strip() == PERSONAL:
        raise InvalidParameter("a space's name is not a number nor 'personal' (they name spaces)")
    return value.strip()


def _role(value: object) -> Role:
    if value in (Role.ADMIN.value, Role.MEMBER.value):
        return Role(value)
    if value == Role.OWNER.value:
        raise InvalidParameter("a space has one owner: add members as 'admin' or 'member'")
    raise InvalidParameter("role_type must be 'admin' or 'member'")


def _user_id(raw: object) -> int | None:
    try:
        return parse_id(raw, "user_id")
    except InvalidParameter:
        return None
