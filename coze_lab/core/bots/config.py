"""A bot's configuration: what the draft holds and what a published version freezes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

#: model parameters a bot may set (Coze ``model_info_config`` fields we pass on)
MODEL_PARAMS = {
    "temperature": (0.0, 2.0),
    "top_p": (0.0, 1.0),
    "max_tokens": (1, 1_000_000),
    "presence_penalty": (-2.0, 2.0),
    "frequency_penalty": (-2.0, 2.0),
}
MAX_PROMPT_CHARS = 100_000
MAX_HISTORY_ROUNDS = 100
MAX_TOOL_ROUNDS = 16
MAX_PROLOGUE_CHARS = 10_000
MAX_QUESTIONS, MAX_QUESTION_CHARS = 20, 1000
MAX_VARIABLES, MAX_VALUE_CHARS = 100, 10_000
MAX_FUNCTIONS = 64
#: user tables a bot may query in chat (one NL2SQL tool each)
MAX_TABLES = 10
#: Coze's ``suggest_reply_info.reply_mode``: no suggestions, ours, or the bot's own prompt
SUGGEST_MODES = ("disable", "enable", "customized")
MAX_SUGGEST_PROMPT_CHARS = 2000
#: Coze's ``model_info_config.response_format``: markdown and text are the same plain answer
RESPONSE_FORMATS = ("text", "markdown", "json")
_FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
#: a variable keyword: an identifier
KEYWORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


@dataclass(frozen=True)
class Variable:
    """A ``{{keyword}}`` the prompt may use, with its default value, and who may set it.

    ``user_can_set``: the end user (``PUT /v1/variables``, the notebook's
    ``bot.variables``, the sidebar); ``agent_can_set``: the bot itself (the
    ``save_variable`` tool, a workflow's assign node). Both default to true: a bot defined
    before these flags existed keeps working as it did (Coze's ``IsReadOnly`` variable is
    ``user_can_set=False``).

    Example:
        >>> Variable("plan", "free", user_can_set=False).to_dict()["user_can_set"]
        False
    """

    keyword: str
    default_value: str = ""
    description: str = ""
    enable: bool = True
    user_can_set: bool = True
    agent_can_set: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "keyword": self.keyword,
            "default_value": self.default_value,
            "description": self.description,
            "enable": self.enable,
            "user_can_set": self.user_can_set,
            "agent_can_set": self.agent_can_set,
        }


@dataclass(frozen=True)
class ClientFunction:
    """A tool the *caller* runs: the chat stops in ``requires_action`` until its output arrives."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object"})

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True)
class PluginTool:
    plugin_id: int
    tool_id: int

    def to_dict(self) -> dict[str, str]:
        return {"plugin_id": str(self.plugin_id), "api_id": str(self.tool_id)}


@dataclass(frozen=True)
class BotTable:
    """A user table the bot's model may query with SQL (``allow_writes``: and change)."""

    table_id: int
    allow_writes: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"table_id": str(self.table_id), "allow_writes": self.allow_writes}


@dataclass(frozen=True)
class McpServerRef:
    """An MCP server of the bot's space whose tools the bot may use (``tools``: these
    only; empty: all it offers)."""

    server_id: int
    tools: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"server_id": str(self.server_id), "tools": list(self.tools)}


@dataclass(frozen=True)
class BotEdit:
    """A command to create or change a bot: the fields a request gave, checked (None: not
    given). ``changes`` maps :class:`BotConfig` fields to their new values."""

    name: str | None = None
    description: str | None = None
    icon_url: str | None = None
    changes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BotConfig:
    """Prompt, model, variables, tools and memory settings of a bot.

    A Coze ``/v1/bot/create`` or ``/v1/bot/update`` body (plus coze_lab's ``variables`` and
    ``functions``) becomes a :class:`BotEdit` in ``coze_lab.web.requests``; the service
    applies it (:meth:`edited`).

    Example:
        >>> config = BotConfig().edited({"prompt": "Be brief.",
        ...                              "model_params": {"temperature": 0.2}})
        >>> config.prompt, config.model_params
        ('Be brief.', {'temperature': 0.2})
    """

    prompt: str = ""
    model_id: str = "default"
    model_params: dict[str, Any] = field(default_factory=dict)
    history_rounds: int = 10
    max_tool_rounds: int = 8
    variables: tuple[Variable, ...] = ()
    workflow_ids: tuple[int, ...] = ()
    plugin_tools: tuple[PluginTool, ...] = ()
    #: MCP servers (of the bot's space) whose tools the model may call
    mcp_servers: tuple[McpServerRef, ...] = ()
    functions: tuple[ClientFunction, ...] = ()
    prologue: str = ""
    suggested_questions: tuple[str, ...] = ()
    #: plugin_id -> online version, frozen when the bot is published
    plugin_versions: dict[int, int] = field(default_factory=dict)
    #: workflow_id -> published version, frozen when the bot is published
    workflow_versions: dict[int, int] = field(default_factory=dict)
    #: Coze's suggested follow-up questions after each answer (``follow_up`` messages)
    suggest_reply_mode: str = "disable"
    suggest_reply_prompt: str = ""
    #: text, markdown or json (the model is asked for a JSON object)
    response_format: str = "text"
    #: the model gets the built-in ``save_variable`` tool: it stores what the end user tells
    #: it in one of the bot's enabled variables
    save_variables: bool = False
    #: the model gets list_files, read_file and write_file on the session's workspace
    file_tools: bool = False
    #: knowledge bases of the bot's space (Coze's ``knowledge.dataset_ids``)
    dataset_ids: tuple[int, ...] = ()
    #: True: recall before every answer (Coze's ``auto_call``); False: the model gets a
    #: ``recall_knowledge`` tool and recalls when it decides to
    knowledge_auto_call: bool = True
    #: user tables the model queries with SQL, one tool per table (NL2SQL)
    tables: tuple[BotTable, ...] = ()
    #: long-term personal memory: the user's user.md and skills go into the prompt, and
    #: what the user asks to remember is consolidated into them after each chat
    memory: bool = False

    def edited(self, changes: Mapping[str, Any]) -> BotConfig:
        """A copy with ``changes`` (field name → checked value) applied."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "model_id": self.model_id,
            "model_params": self.model_params,
            "history_rounds": self.history_rounds,
            "max_tool_rounds": self.max_tool_rounds,
            "variables": [v.to_dict() for v in self.variables],
            "workflow_ids": [str(i) for i in self.workflow_ids],
            "plugin_tools": [t.to_dict() for t in self.plugin_tools],
            "mcp_servers": [m.to_dict() for m in self.mcp_servers],
            "functions": [f.to_dict() for f in self.functions],
            "prologue": self.prologue,
            "suggested_questions": list(self.suggested_questions),
            "plugin_versions": {str(k): v for k, v in self.plugin_versions.items()},
            "workflow_versions": {str(k): v for k, v in self.workflow_versions.items()},
            "suggest_reply_mode": self.suggest_reply_mode,
            "suggest_reply_prompt": self.suggest_reply_prompt,
            "response_format": self.response_format,
            "save_variables": self.save_variables,
            "file_tools": self.file_tools,
            "dataset_ids": [str(i) for i in self.dataset_ids],
            "knowledge_auto_call": self.knowledge_auto_call,
            "tables": [t.to_dict() for t in self.tables],
            "memory": self.memory,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BotConfig:
        """The stored form back (trusted: it was validated when written)."""
        return cls(
            prompt=data.get("prompt", ""),
            model_id=data.get("model_id", "default"),
            model_params=dict(data.get("model_params") or {}),
            history_rounds=int(data.get("history_rounds", 10)),
            max_tool_rounds=int(data.get("max_tool_rounds", 8)),
            variables=tuple(Variable(**v) for v in data.get("variables", [])),
            workflow_ids=tuple(int(i) for i in data.get("workflow_ids", [])),
            plugin_tools=tuple(
                PluginTool(int(t["plugin_id"]), int(t["api_id"]))
                for t in data.get("plugin_tools", [])
            ),
            mcp_servers=tuple(
                McpServerRef(int(m["server_id"]), tuple(m.get("tools") or ()))
                for m in data.get("mcp_servers", [])
            ),
            functions=tuple(ClientFunction(**f) for f in data.get("functions", [])),
            prologue=data.get("prologue", ""),
            suggested_questions=tuple(data.get("suggested_questions", [])),
            plugin_versions={int(k): int(v) for k, v in data.get("plugin_versions", {}).items()},
            workflow_versions={
                int(k): int(v) for k, v in data.get("workflow_versions", {}).items()
            },
            suggest_reply_mode=data.get("suggest_reply_mode", "disable"),
            suggest_reply_prompt=data.get("suggest_reply_prompt", ""),
            response_format=data.get("response_format", "text"),
            save_variables=bool(data.get("save_variables", False)),
            file_tools=bool(data.get("file_tools", False)),
            dataset_ids=tuple(int(i) for i in data.get("dataset_ids", [])),
            knowledge_auto_call=bool(data.get("knowledge_auto_call", True)),
            tables=tuple(
                BotTable(int(t["table_id"]), bool(t.get("allow_writes", False)))
                for t in data.get("tables", [])
            ),
            memory=bool(data.get("memory", False)),
        )

    def variable_defaults(self) -> dict[str, str]:
        return {v.keyword: v.default_value for v in self.variables if v.enable}

    def variable(self, keyword: str) -> Variable | None:
        """The enabled variable ``keyword`` (None: unknown or disabled)."""
        return next((v for v in self.variables if v.enable and v.keyword == keyword), None)
