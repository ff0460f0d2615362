"""Domain objects → Coze wire dicts (ids as strings, times as unix seconds)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from coze_lab.core.clock import to_unix
from coze_lab.core.files import FileInfo
from coze_lab.core.identity import UserInfo, WorkspaceInfo
from coze_lab.core.pat import TokenInfo


def file_info(info: FileInfo) -> dict[str, Any]:
    return {
        "id": str(info.id),
        "bytes": info.bytes,
        "created_at": to_unix(info.created_at),
        "file_name": info.file_name,
        "content_type": info.content_type,
    }


def workspace(info: WorkspaceInfo) -> dict[str, Any]:
    return {
        "id": str(info.id),
        "name": info.name,
        "icon_url": "",
        "role_type": "owner",
        "workspace_type": info.workspace_type,
        "enterprise_id": "",
    }


def user(info: UserInfo) -> dict[str, Any]:
    return {
        "id": str(info.id),
        "name": info.name,
        "workspace_id": str(info.workspace_id),
        "created_at": to_unix(info.created_at),
    }


def token(info: TokenInfo, now: datetime) -> dict[str, Any]:
    return {
        "id": str(info.id),
        "name": info.name,
        "hint": info.hint,
        "scopes": info.scopes,
        "connector_id": info.connector_id,
        "created_at": to_unix(info.created_at),
        "expires_at": to_unix(info.expires_at),
        "last_used_at": to_unix(info.last_used_at),
        "revoked_at": to_unix(info.revoked_at),
        "status": info.status(now),
    }
