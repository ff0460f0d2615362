"""Domain objects → Coze wire dicts (ids as strings, times as unix seconds)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict
from datetime import datetime
from typing import Any

from coze_lab.core.activity import SessionState, Timeline
from coze_lab.core.bots import BotInfo
from coze_lab.core.chat import ChatEvent, ChatInfo
from coze_lab.core.clock import to_unix
from coze_lab.core.conversations import ConversationInfo, MessageInfo
from coze_lab.core.errors import RUN_CANCELED
from coze_lab.core.file_history import FileEvent
from coze_lab.core.files import FileInfo
from coze_lab.core.identity import UserInfo
from coze_lab.core.mcp.catalog import McpServerInfo
from coze_lab.core.memory import TableInfo
from coze_lab.core.memory.personal import MemoryView
from coze_lab.core.memory.variables import VariableItem, VariableState
from coze_lab.core.plugins import CallRecord, PluginInfo, ToolResult
from coze_lab.core.spaces import MemberInfo, SpaceInfo
from coze_lab.core.tokens import TokenInfo
from coze_lab.core.usage import UserUsage
from coze_lab.core.workflows import events as wf_events
from coze_lab.core.workflows.run_store import InterruptInfo, NodeRecord, RunInfo
from coze_lab.core.workflows.service import VersionInfo, WorkflowInfo

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


def workspace(info: SpaceInfo) -> dict[str, Any]:
    """Coze's Workspace: ``role_type`` is the caller's role in it."""
    return {
        "id": str(info.id),
        "name": info.name,
        "icon_url": "",
        "role_type": info.role.value,
        "workspace_type": info.workspace_type,
        "enterprise_id": "",
    }


def workspace_member(info: MemberInfo) -> dict[str, Any]:
    """Coze's WorkspaceMember (``/v1/workspaces/{id}/members``)."""
    return {
        "user_id": str(info.user_id),
        "role_type": info.role.value,
        "user_nickname": info.name,
        "user_unique_name": info.name,
        "avatar_url": "",
    }


def space(info: SpaceInfo) -> dict[str, Any]:
    """A space in the studio API (the sidebar's picker, ``studio.spaces()``)."""
    return {
        "id": str(info.id),
        "name": info.name,
        "workspace_type": info.workspace_type,
        "role": info.role.value,
        "owner_id": str(info.owner_id),
        "created_at": to_unix(info.created_at),
    }


def member(info: MemberInfo) -> dict[str, Any]:
    """A member in the studio API."""
    return {
        "user_id": str(info.user_id),
        "name": info.name,
        "role": info.role.value,
        "joined_at": to_unix(info.joined_at),
    }


def coze_user(info: UserInfo) -> dict[str, Any]:
    """Coze's User (``/v1/users/me``): no nick names or avatars here, so the name twice."""
    return {
        "user_id": str(info.id),
        "user_name": info.name,
        "nick_name": info.name,
        "avatar_url": "",
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


def chat_usage(usage: dict[str, Any]) -> dict[str, int]:
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


def sync_run(info: RunInfo, pending: list[InterruptInfo]) -> tuple[str, dict[str, Any]]:
    """Coze's body for a finished synchronous run (``/v1/workflow/run``): the outputs as a
    JSON string in ``data``, the rest beside it (``interrupt_data`` when it waits)."""
    extra: dict[str, Any] = {
        "execute_id": str(info.id),
        "debug_url": "",
        "usage": chat_usage(info.usage or {}),
    }
    if info.status == "interrupted":
        extra["interrupt_data"] = [interrupt(p) for p in pending]
    return json.dumps(info.outputs or {}, ensure_ascii=False), extra


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
        "retry_of": None if info.retry_of is None else str(info.retry_of),
        "nodes": [node_record(r) for r in info.nodes.values()],
        "name": info.definition.get("name"),
        "definition": info.definition,
    }


def workflow(info: WorkflowInfo) -> dict[str, Any]:
    return {
        "id": str(info.id),
        "name": info.name,
        "description": info.description,
        "published_version": info.published_version,
        "definition": info.draft,
        "space_id": str(info.space_id),
        "owner_id": str(info.owner_id),
        "created_at": to_unix(info.created_at),
        "updated_at": to_unix(info.updated_at),
    }


def workflow_basic(info: WorkflowInfo) -> dict[str, Any]:
    """Coze's WorkflowBasic (``/v1/workflows``, ``/v1/workflows/{id}``): no icons or apps
    here, so those are empty."""
    return {
        "workflow_id": str(info.id),
        "workflow_name": info.name,
        "description": info.description,
        "icon_url": "",
        "app_id": "",
        "created_at": to_unix(info.created_at),
        "updated_at": to_unix(info.updated_at),
        "creator": {"id": str(info.owner_id), "name": info.owner_name},
        "published_version": (
            "" if info.published_version is None else str(info.published_version)
        ),
    }


def workflow_version(info: VersionInfo) -> dict[str, Any]:
    """Coze's WorkflowVersionInfo: times as unix seconds in strings, as Coze sends them."""
    created = str(to_unix(info.created_at))
    return {
        "version": str(info.version),
        "description": info.description,
        "created_at": created,
        "updated_at": created,
        "workflow_id": str(info.workflow_id),
        "creator": {"id": str(info.creator_id), "name": info.creator_name},
    }


# ---- bots, conversations, chats, messages ---------------------------------------------------
def bot(info: BotInfo) -> dict[str, Any]:
    """Coze's Bot object (``/v1/bots/{id}``, ``/v1/bot/get_online_info``)."""
    config = info.config
    return {
        "bot_id": str(info.id),
        "name": info.name,
        "description": info.description,
        "icon_url": info.icon_url,
        "create_time": to_unix(info.created_at),
        "update_time": to_unix(info.updated_at),
        "version": str(info.version) if info.version is not None else "",
        "owner_user_id": str(info.owner_id),
        "space_id": str(info.workspace_id),
        "bot_mode": 0,
        "prompt_info": {"prompt": config.prompt},
        "onboarding_info": {
            "prologue": config.prologue,
            "suggested_questions": list(config.suggested_questions),
        },
        "model_info": {
            "model_id": config.model_id,
            "model_name": config.model_id,
            "context_round": config.history_rounds,
            "response_format": config.response_format,
            **config.model_params,
        },
        "suggest_reply_info": {
            "reply_mode": config.suggest_reply_mode,
            "customized_prompt": config.suggest_reply_prompt,
        },
        "variables": [
            {
                "keyword": v.keyword,
                "default_value": v.default_value,
                "variable_type": "KVVariable",
                "channel": "custom",
                "description": v.description,
                "enable": v.enable,
                "prompt_enable": True,
                "user_can_set": v.user_can_set,
                "agent_can_set": v.agent_can_set,
            }
            for v in config.variables
        ],
        "save_variables": config.save_variables,
        "workflow_info_list": [
            {"id": str(i), "name": "", "description": "", "icon_url": ""}
            for i in config.workflow_ids
        ],
        "plugin_info_list": [
            {
                "plugin_id": str(t.plugin_id),
                "name": "",
                "description": "",
                "icon_url": "",
                "api_info_list": [{"api_id": str(t.tool_id), "name": "", "description": ""}],
            }
            for t in config.plugin_tools
        ],
        "functions": [f.to_dict() for f in config.functions],
        "file_tools": config.file_tools,
        "knowledge": {
            "dataset_ids": [str(i) for i in config.dataset_ids],
            "auto_call": config.knowledge_auto_call,
            "search_strategy": 1,
        },
        "tables": [t.to_dict() for t in config.tables],
        "memory": config.memory,
        "connectors": {k: str(v) for k, v in info.connectors.items()},
    }


def simple_bot(info: BotInfo) -> dict[str, Any]:
    """An item of ``/v1/bots``."""
    return {
        "id": str(info.id),
        "name": info.name,
        "description": info.description,
        "icon_url": info.icon_url,
        "is_published": info.is_published,
        "published_at": to_unix(info.published_at),
        "updated_at": to_unix(info.updated_at),
        "owner_user_id": str(info.owner_id),
    }


def conversation(info: ConversationInfo) -> dict[str, Any]:
    return {
        "id": str(info.id),
        "created_at": to_unix(info.created_at),
        "updated_at": to_unix(info.updated_at),
        "meta_data": info.meta_data,
        "last_section_id": str(info.section_id),
        "name": info.name,
        "creator_id": str(info.owner_id),
        "connector_id": info.connector_id,
        "bot_id": str(info.bot_id) if info.bot_id is not None else "",
    }


def message(info: MessageInfo) -> dict[str, Any]:
    """Coze's Message; ``feedback`` (the user's like or unlike) and ``usage`` (an answer's
    tokens and cost) only when there is one."""
    data = {
        "id": str(info.id),
        "conversation_id": str(info.conversation_id),
        "section_id": str(info.section_id),
        "bot_id": str(info.bot_id) if info.bot_id is not None else "",
        "chat_id": str(info.chat_id) if info.chat_id is not None else "",
        "role": info.role,
        "type": info.type,
        "content": info.content,
        "content_type": info.content_type,
        "meta_data": info.meta_data,
        "created_at": to_unix(info.created_at),
        "updated_at": to_unix(info.updated_at),
        "reasoning_content": info.reasoning_content or "",
    }
    if info.feedback is not None:
        data["feedback"] = info.feedback
    if info.usage is not None:
        data["usage"] = info.usage
    return data


def chat(info: ChatInfo) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(info.id),
        "conversation_id": str(info.conversation_id),
        "section_id": str(info.section_id),
        "bot_id": str(info.bot_id) if info.bot_id else "",  # none: a chat-flow's chat
        "status": info.status,
        "created_at": to_unix(info.created_at),
        "meta_data": info.meta_data,
        "last_error": info.last_error or {"code": 0, "msg": ""},
        "usage": info.usage or {"token_count": 0, "output_count": 0, "input_count": 0},
    }
    if info.completed_at is not None:
        data["completed_at"] = to_unix(info.completed_at)
    if info.failed_at is not None:
        data["failed_at"] = to_unix(info.failed_at)
    if info.required_action is not None:
        data["required_action"] = info.required_action
    return data


def table(info: TableInfo) -> dict[str, Any]:
    return {
        "id": str(info.id),
        "name": info.name,
        "description": info.description,
        "bot_id": str(info.bot_id) if info.bot_id is not None else None,
        "fields": [f.to_dict() for f in info.fields],
        "online_fields": None
        if info.online_fields is None
        else [f.to_dict() for f in info.online_fields],
        "published": info.online_fields is not None,
        "space_id": str(info.space_id),
    }


# ---- the Coze workflow API ---------------------------------------------------------------
#: Coze's numeric interrupt types (what cozepy echoes back as interrupt_type)
INTERRUPT_TYPES = {"question": 2, "input": 5, "authorization": 7}


def coze_workflow_events(
    event: str, data: dict[str, Any], seq: int
) -> list[tuple[str, dict[str, Any]]]:
    """Our run event as Coze workflow SSE events (none: not part of the Coze stream).

    A question reaches Coze clients as a ``Message`` with its text (and numbered choices),
    followed by the ``Interrupt`` that names the ``event_id`` to answer.
    """
    if event == wf_events.MESSAGE:
        return [
            (
                "Message",
                _message(
                    data["content"],
                    data["node_title"],
                    seq,
                    data["node_is_finish"],
                    data.get("usage"),
                ),
            )
        ]
    if event == wf_events.INTERRUPT:
        return [
            ("Message", _message(_question_text(data["data"]), data["node_title"], seq, True)),
            (
                "Interrupt",
                {
                    "interrupt_data": {
                        "event_id": data["event_id"],
                        "type": INTERRUPT_TYPES.get(data["type"], 0),
                        "data": json.dumps(data["data"], ensure_ascii=False),
                    },
                    "node_title": data["node_title"],
                },
            ),
        ]
    if event == wf_events.FAILED:
        return [
            (
                "Error",
                {
                    "error_code": data["error"].get("code", 5100),
                    "error_message": data["error"].get("msg", ""),
                },
            )
        ]
    if event == wf_events.CANCELED:
        return [("Error", {"error_code": RUN_CANCELED, "error_message": "the run was canceled"})]
    if event == wf_events.DONE:
        usage = data.get("usage") or {}
        return [("Done", {"debug_url": "", "usage": chat_usage(usage)})]
    return []


def _message(
    content: str, title: str, seq: int, finished: bool, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A Coze ``Message`` event; ``usage``: the run's tokens so far (None: no model ran)."""
    return {
        "content": content,
        "node_title": title,
        "node_seq_id": str(seq),
        "node_is_finish": finished,
        "ext": None,
        "usage": None if not usage else chat_usage(usage),
    }


def _question_text(data: dict[str, Any]) -> str:
    if "question" in data:
        choices = data.get("choices") or []
        lines = [data["question"], *(f"{i}. {c}" for i, c in enumerate(choices, 1))]
        return "\n".join(lines)
    return json.dumps(data, ensure_ascii=False)  # an input form: its schema


def node_output(record: NodeRecord) -> dict[str, Any]:
    """One node's output in a run (``/v1/workflows/.../execute_nodes/{id}``)."""
    return {
        "is_finish": record.status in ("succeeded", "skipped"),
        "node_output": json.dumps(record.outputs or {}, ensure_ascii=False),
    }


def chat_event(event: ChatEvent) -> dict[str, Any] | str:
    """A chat stream event's ``data``: its chat, its message, or ``"[DONE]"``."""
    if event.chat is not None:
        return chat(event.chat)
    if event.message is not None:
        return message(event.message)
    return '"[DONE]"'


def space_bot(info: BotInfo) -> dict[str, Any]:
    """An item of ``/v1/space/published_bots_list``."""
    return {
        "bot_id": str(info.id),
        "bot_name": info.name,
        "description": info.description,
        "icon_url": info.icon_url,
        "publish_time": str(to_unix(info.published_at) or ""),
    }


# ---- plugins ---------------------------------------------------------------------------
def plugin(info: PluginInfo, *, full: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": str(info.id),
        "name": info.name,
        "description": info.description,
        "manifest": info.manifest,
        "server_url": info.server_url,
        "online_version": info.online_version,
        "auth": info.auth,
        "space_id": str(info.space_id),
        "owner_id": str(info.owner_id),
        "tools": [
            {
                "id": str(t.id),
                "name": t.name,
                "description": t.description,
                "method": t.method,
                "path": t.path,
                "parameters": t.parameters,
            }
            for t in info.tools
        ],
        "created_at": to_unix(info.created_at),
        "updated_at": to_unix(info.updated_at),
    }
    if full:
        out.update(openapi=info.openapi, version=info.version, warnings=info.warnings)
    return out


def tool_result(result: ToolResult) -> dict[str, Any]:
    out = asdict(result)
    out["call_id"] = None if result.call_id is None else str(result.call_id)
    return out


def call(record: CallRecord) -> dict[str, Any]:
    """A recorded tool call (``coze_lab/api/plugins/{id}/calls``)."""
    return {
        "id": str(record.id),
        "tool_id": str(record.tool_id),
        "tool_name": record.tool_name,
        "scene": record.scene,
        "version": record.version,
        "ok": record.ok,
        "status_code": record.status_code,
        "latency_ms": record.latency_ms,
        "error": record.error,
        "request": record.request,
        "trace": record.trace,
        "created_at": to_unix(record.created_at),
    }


def usage(report: Iterable[UserUsage]) -> dict[str, Any]:
    """Every user's runs, chats and model tokens (``coze_lab/api/admin/usage``)."""
    return {
        "users": [
            {
                "user_id": str(u.user_id),
                "name": u.name,
                "runs": u.runs,
                "chats": u.chats,
                "chat_tokens": u.chat_tokens,
                "run_tokens": u.run_tokens,
                "tokens": u.tokens,
            }
            for u in report
        ]
    }


def variable_values(items: Iterable[VariableItem]) -> dict[str, Any]:
    """``GET /v1/variables``: ``{items: [{keyword, value, create_time, update_time}]}``;
    a value never set is its default, with times 0."""
    return {
        "items": [
            {
                "keyword": item.keyword,
                "value": item.value,
                "create_time": to_unix(item.created_at) if item.created_at else 0,
                "update_time": to_unix(item.updated_at) if item.updated_at else 0,
            }
            for item in items
        ]
    }


def variable_states(items: Iterable[VariableState]) -> dict[str, Any]:
    """The studio's view of a bot's variables for an end user: each enabled variable's
    definition and value (``update_time`` 0: never set, the value is the default)."""
    return {
        "variables": [
            {
                **item.variable.to_dict(),
                "value": item.value,
                "update_time": to_unix(item.updated_at) if item.updated_at else 0,
            }
            for item in items
        ]
    }


def file_event(event: FileEvent) -> dict[str, Any]:
    """An entry of a session's ``file_history`` (ids as strings, time in Unix seconds)."""

    def opt(value: int | None) -> str | None:
        return None if value is None else str(value)

    return {
        "id": str(event.id),
        "space_id": str(event.space_id),
        "conversation_id": str(event.session_id),
        "path": event.path,
        "action": event.action,
        "size": event.size,
        "user_id": str(event.actor_id),
        "chat_id": opt(event.chat_id),
        "message_id": opt(event.message_id),
        "run_id": opt(event.run_id),
        "node_id": event.node_id,
        "created_at": to_unix(event.created_at),
    }


def memory(view: MemoryView) -> dict[str, Any]:
    """A user's memory in a space: user.md, the skills, the last changes (each with the
    message it came from) and the queue."""

    def updated(path: str) -> int | None:
        moment = view.updated_at.get(path)
        return None if moment is None else to_unix(moment)

    return {
        "space_id": str(view.space_id),
        "user": {"path": "user.md", "content": view.user, "updated_at": updated("user.md")},
        "skills": [
            {
                "name": name,
                "path": f"skills/{name}.md",
                "content": text,
                "updated_at": updated(f"skills/{name}.md"),
            }
            for name, text in sorted(view.skills.items())
        ],
        "changes": [
            {
                **{k: c[k] for k in ("op", "kind", "name", "text", "source")},
                "message_id": str(c["message_id"]),
                "applied_at": to_unix(c["applied_at"]),
            }
            for c in view.changes
        ],
        "jobs": {k: view.jobs.get(k, 0) for k in ("queued", "running", "done")},
    }


def mcp_server(info: McpServerInfo) -> dict[str, Any]:
    """An MCP server for the studio: the names of its env, never the values."""
    return {
        "id": str(info.id),
        "name": info.name,
        "description": info.description,
        "transport": info.transport,
        "command": info.command,
        "args": list(info.args),
        "url": info.url,
        "env": list(info.env_names),
        "has_credentials": info.has_credentials,
        "space_id": str(info.space_id),
        "owner_id": str(info.owner_id),
        "created_at": to_unix(info.created_at),
        "updated_at": to_unix(info.updated_at),
    }


def session_state(state: SessionState) -> dict[str, Any]:
    """A session's run state (``running``, ``waiting``, ``done``, ...) and the chat or run
    that decides it."""
    return {
        "state": state.state,
        "chat_id": None if state.chat_id is None else str(state.chat_id),
        "run_id": None if state.run_id is None else str(state.run_id),
    }


def timeline(line: Timeline) -> dict[str, Any]:
    """A session's activity: its state, token usage and items (times in Unix milliseconds)."""

    def opt(value: int | None) -> str | None:
        return None if value is None else str(value)

    return {
        **session_state(line.state),
        "usage": line.usage,
        "items": [
            {
                "kind": i.kind,
                "at_ms": int(i.at.timestamp() * 1000),
                "title": i.title,
                "detail": i.detail,
                "status": i.status,
                "duration_ms": i.duration_ms,
                "usage": i.usage,
                "chat_id": opt(i.chat_id),
                "run_id": opt(i.run_id),
                "node_id": i.node_id,
                "path": i.path,
            }
            for i in line.items
        ],
    }
