"""coze_lab as an MCP server: the caller's published workflows and bots as MCP tools.

The exchange is MCP's streamable HTTP in its simplest form: each POST carries one JSON-RPC
message and gets one JSON answer (no event stream, no session; every request stands on its
own, authenticated by its personal access token). ``initialize``, ``ping``, ``tools/list``
and ``tools/call`` are served; the messages and results are the ``mcp`` SDK's own models,
so what goes out is what its client validates. A workflow is a tool whose arguments are its
start inputs (the answer: its outputs); a bot published to the API takes a ``message`` (the
answer: one chat reply).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError
from sqlalchemy import func, select

from coze_lab._version import __version__
from coze_lab.core import connectors
from coze_lab.core.chat.tools import function_name, workflow_tool
from coze_lab.core.conversations import NewMessage
from coze_lab.core.errors import CozeLabError
from coze_lab.core.spaces import visible
from coze_lab.store import Database
from coze_lab.store.models import BotConnector, BotRecord, WorkflowRecord, WorkflowVersion

#: a bot tool's one argument
BOT_SCHEMA = {
    "type": "object",
    "properties": {"message": {"type": "string", "description": "What the user says."}},
    "required": ["message"],
}


class RpcError(Exception):
    """A JSON-RPC error answer (``code`` from the JSON-RPC/MCP codes)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Caller:
    """Who calls: the token's owner, its scopes (None: all) and connector."""

    user_id: int
    scopes: frozenset[str] | None = None
    connector_id: str = connectors.API

    def may(self, scope: str) -> bool:
        return self.scopes is None or scope in self.scopes


@dataclass(frozen=True)
class _Entry:
    kind: str  # workflow | bot
    object_id: int
    tool: types.Tool


class McpEndpoint:
    """Answers one JSON-RPC message from an MCP client (``None`` for a notification).

    Example:
        >>> answer = await endpoint.handle(Caller(user.id), {"jsonrpc": "2.0", "id": 1,
        ...                                "method": "tools/list"})      # doctest: +SKIP
        >>> [t["name"] for t in answer["result"]["tools"]]               # doctest: +SKIP
        ['summarize']
    """

    def __init__(
        self,
        db: Database,
        *,
        workflows: Any,
        runs: Callable[[], Any],
        chats: Callable[[], Any],
    ) -> None:
        self._db = db
        self._workflows = workflows
        self._runs = runs
        self._chats = chats

    async def handle(self, caller: Caller, body: Any) -> dict[str, Any] | None:
        try:
            message = types.jsonrpc_message_adapter.validate_python(body, by_name=False)
        except ValidationError:
            request_id = body.get("id") if isinstance(body, dict) else None
            if not isinstance(request_id, str | int) or isinstance(request_id, bool):
                request_id = None
            return _error(request_id, types.INVALID_REQUEST, "not a JSON-RPC 2.0 message")
        if not isinstance(message, types.JSONRPCRequest):
            return None  # a notification, or a client's answer: nothing to say
        try:
            result = await self._dispatch(caller, message.method, message.params or {})
        except RpcError as exc:
            return _error(message.id, exc.code, exc.message)
        except ValidationError as exc:
            return _error(message.id, types.INVALID_PARAMS, _first(exc))
        return {
            "jsonrpc": "2.0",
            "id": message.id,
            "result": result.model_dump(by_alias=True, mode="json", exclude_none=True),
        }

    async def _dispatch(self, caller: Caller, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize":
            asked = types.InitializeRequestParams.model_validate(params).protocol_version
            version = asked if asked in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
            return types.InitializeResult(
                protocol_version=version,
                capabilities=types.ServerCapabilities(
                    tools=types.ToolsCapability(list_changed=False)
                ),
                server_info=types.Implementation(name="coze_lab", version=__version__),
                instructions="Published coze_lab workflows and bots, as tools.",
            )
        if method == "ping":
            return types.EmptyResult()
        if method == "tools/list":
            return types.ListToolsResult(tools=[e.tool for e in self._entries(caller)])
        if method == "tools/call":
            call = types.CallToolRequestParams.model_validate(params)
            entry = next((e for e in self._entries(caller) if e.tool.name == call.name), None)
            if entry is None:
                raise RpcError(types.INVALID_PARAMS, f"Unknown tool: {call.name}")
            arguments = dict(call.arguments or {})
            try:
                if entry.kind == "workflow":
                    return await self._run_workflow(caller, entry.object_id, arguments)
                return await self._ask_bot(caller, entry.object_id, arguments)
            except CozeLabError as exc:  # bad arguments, an unpublished version, ...
                return _tool_error(exc.msg)
        raise RpcError(types.METHOD_NOT_FOUND, f"Method not found: {method}")

    # ---- the tools ----------------------------------------------------------------------
    def _entries(self, caller: Caller) -> list[_Entry]:
        """The caller's published workflows (oldest first), then their bots published to
        the token's connector; names made function-safe and unique."""
        entries: list[_Entry] = []
        taken: set[str] = set()

        def add(kind: str, object_id: int, name: str, description: str, schema: Any) -> None:
            base = name = function_name(name)
            n = 2
            while name in taken:
                name, n = f"{base}_{n}", n + 1
            taken.add(name)
            tool = types.Tool(name=name, description=description, input_schema=schema)
            entries.append(_Entry(kind, object_id, tool))

        with self._db.reading() as session:
            workflows = (
                session.execute(
                    select(WorkflowRecord.id)
                    .where(
                        visible(WorkflowRecord.space_id, caller.user_id),
                        select(func.count(WorkflowVersion.id))
                        .where(WorkflowVersion.workflow_id == WorkflowRecord.id)
                        .scalar_subquery()
                        > 0,
                    )
                    .order_by(WorkflowRecord.id)
                )
                .scalars()
                .all()
                if caller.may("workflow")
                else []
            )
            bots = (
                session.execute(
                    select(BotRecord.id, BotRecord.name, BotRecord.description)
                    .join(BotConnector, BotConnector.bot_id == BotRecord.id)
                    .where(
                        visible(BotRecord.workspace_id, caller.user_id),
                        BotConnector.connector_id == caller.connector_id,
                    )
                    .order_by(BotRecord.id)
                ).all()
                if caller.may("chat")
                else []
            )
        for workflow_id in workflows:
            spec, version = self._workflows.runnable(caller.user_id, workflow_id)
            described = workflow_tool(workflow_id, spec, version, _never)
            add("workflow", workflow_id, spec.name, described.description, described.parameters)
        for bot in bots:
            add(
                "bot",
                bot.id,
                bot.name,
                bot.description or f"Chat with the bot '{bot.name}'.",
                BOT_SCHEMA,
            )
        return entries

    async def _run_workflow(
        self, caller: Caller, workflow_id: int, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        runs = self._runs()
        run_id = await runs.start(caller.user_id, workflow_id, arguments)
        info = await runs.wait(run_id)
        if info.status == "succeeded":
            outputs = info.outputs or {}
            return types.CallToolResult(
                content=[
                    types.TextContent(type="text", text=json.dumps(outputs, ensure_ascii=False))
                ],
                structured_content=outputs,
            )
        if info.status == "interrupted":
            return _tool_error(
                f"the workflow waits for a person (execute_id {run_id}); answer it in the "
                "studio or with /v1/workflow/stream_resume"
            )
        return _tool_error(f"the workflow {info.status}: {(info.error or {}).get('msg', '')}")

    async def _ask_bot(
        self, caller: Caller, bot_id: int, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        from coze_lab.core.chat import ChatRequest

        message = arguments.get("message")
        if not isinstance(message, str) or not message.strip() or set(arguments) != {"message"}:
            return _tool_error("give exactly one argument, message: a non-empty string")
        chats = self._chats()
        request = ChatRequest(
            bot_id=bot_id,
            conversation_id=None,
            messages=[NewMessage("user", message)],
            custom_variables={},
            meta_data={},
            user_id=str(caller.user_id),
            stream=False,
        )
        handle = await chats.start(caller.user_id, caller.connector_id, request)
        chat_id = handle.chat.id
        await chats.wait(chat_id)
        chat = chats.get(caller.user_id, caller.connector_id, None, chat_id)
        if chat.status != "completed":
            if chat.status == "requires_action":
                await asyncio.shield(
                    chats.cancel(caller.user_id, caller.connector_id, chat.conversation_id, chat_id)
                )
            reason = (chat.last_error or {}).get("msg") or chat.status
            return _tool_error(f"the chat did not complete: {reason}")
        answers = [
            m.content
            for m in chats.messages(
                caller.user_id, caller.connector_id, chat.conversation_id, chat_id
            )
            if m.type == "answer"
        ]
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="\n\n".join(answers))]
        )


async def _never(*_: Any) -> Any:  # workflow_tool's runner: only its description is used
    raise AssertionError("not called")


def _tool_error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _first(exc: ValidationError) -> str:
    problem = exc.errors()[0]
    where = ".".join(str(p) for p in problem.get("loc", ()))
    return f"invalid params: {where}: {problem.get('msg', '')}" if where else "invalid params"
