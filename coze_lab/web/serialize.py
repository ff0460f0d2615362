"""Domain objects → Coze wire dicts (ids as strings, times as unix seconds)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from coze_lab.core.clock import to_unix
from coze_lab.core.files import FileInfo
from coze_lab.core.identity import UserInfo, WorkspaceInfo
from coze_lab.core.pat import TokenInfo
from coze_lab.core.workflows.runs import InterruptInfo, NodeRecord, RunInfo
from coze_lab.core.workflows.service import WorkflowInfo

_HISTORY_STATUS = {
    "succeeded": "Success",
    "failed": "Fail",
    "canceled": "Fail",
    "running": "Running",
    "interrupted": "Running",
}


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


def chat_usage(usage: dict[str, int]) -> dict[str, int]:
    """Coze's usage block from our token counts."""
    return {
        "token_count": int(usage.get("total_tokens", 0)),
        "output_count": int(usage.get("output_tokens", 0)),
        "input_count": int(usage.get("input_tokens", 0)),
    }


def interrupt(info: InterruptInfo) -> dict[str, Any]:
    return {
        "event_id": str(info.event_id),
        "execute_id": str(info.root_run_id),
        "run_id": str(info.run_id),
        "node_id": info.node_id,
        "type": info.type,
        "data": info.data,
        "status": info.status,
        "created_at": to_unix(info.created_at),
        "expires_at": to_unix(info.expires_at),
    }


def node_record(record: NodeRecord) -> dict[str, Any]:
    return {
        "node_id": record.node_id,
        "node_type": record.node_type,
        "status": record.status,
        "inputs": record.inputs,
        "outputs": record.outputs,
        "port": record.port,
        "error": record.error,
        "attempts": record.attempts,
        "usage": record.usage,
        "started_at": to_unix(record.started_at),
        "finished_at": to_unix(record.finished_at),
        "latency_ms": record.latency_ms,
    }


def run_history(info: RunInfo) -> dict[str, Any]:
    """Coze's run-history record (``cozepy`` WorkflowRunHistory) plus our exact status."""
    nodes = {
        key: {
            "node_id": rec.node_id,
            "is_finish": rec.status in ("succeeded", "skipped"),
            "update_time": to_unix(rec.finished_at or rec.started_at) or 0,
            "node_execute_uuid": key,
        }
        for key, rec in info.nodes.items()
    }
    error = info.error or {}
    return {
        "execute_id": str(info.id),
        "execute_status": _HISTORY_STATUS[info.status],
        "status": info.status,
        "bot_id": "",
        "connector_id": "1024",
        "connector_uid": str(info.owner_id),
        "run_mode": 0,
        "logid": "",
        "create_time": to_unix(info.created_at),
        "update_time": to_unix(info.updated_at),
        "output": json.dumps(info.outputs or {}, ensure_ascii=False),
        "error_code": int(error.get("code", 0)),
        "error_message": error.get("msg", ""),
        "debug_url": "",
        "node_execute_status": nodes,
        "usage": chat_usage(info.usage or {}),
        "is_output_trimmed": False,
    }


def run(info: RunInfo) -> dict[str, Any]:
    """The studio's full run trace."""
    return {
        "id": str(info.id),
        "workflow_id": None if info.workflow_id is None else str(info.workflow_id),
        "version": info.version,
        "status": info.status,
        "inputs": info.inputs,
        "outputs": info.outputs,
        "error": info.error,
        "usage": info.usage,
        "created_at": to_unix(info.created_at),
        "finished_at": to_unix(info.finished_at),
        "nodes": [node_record(r) for r in info.nodes.values()],
        "name": info.definition.get("name"),
    }


def workflow(info: WorkflowInfo) -> dict[str, Any]:
    return {
        "id": str(info.id),
        "name": info.name,
        "description": info.description,
        "published_version": info.published_version,
        "definition": info.draft,
        "created_at": to_unix(info.created_at),
        "updated_at": to_unix(info.updated_at),
    }
