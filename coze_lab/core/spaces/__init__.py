"""Spaces (Coze workspaces): members and roles, and the one access rule for shared objects."""

from coze_lab.core.spaces.access import (
    ROLE_MATRIX,
    Access,
    Permission,
    Role,
    member_spaces,
    visible,
)
from coze_lab.core.spaces.service import (
    PERSONAL,
    TEAM,
    AddResult,
    MemberInfo,
    RemoveResult,
    SpaceInfo,
    SpaceService,
)

__all__ = [
    "PERSONAL",
    "ROLE_MATRIX",
    "TEAM",
    "Access",
    "AddResult",
    "MemberInfo",
    "Permission",
    "RemoveResult",
    "Role",
    "SpaceInfo",
    "SpaceService",
    "member_spaces",
    "visible",
]
