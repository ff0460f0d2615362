"""A bot's configuration: what the draft holds and what a published version freezes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import parse_id
from coze_lab.core.limits import Limits, text

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
_FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_KEYWORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


@dataclass(frozen=True)
class Variable:
    """A ``{{keyword}}`` the prompt may use, with its default value."""

    keyword: str
    default_value: str = ""
    description: str = ""
    enable: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "keyword": self.keyword,
            "default_value": self.default_value,
            "description": self.description,
            "enable": self.enable,
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
class BotConfig:
    """Prompt, model, variables, tools and memory settings of a bot.

    Built from a Coze ``/v1/bot/create`` body (plus coze_lab's ``variables`` and
    ``functions``); :meth:`updated` applies a ``/v1/bot/update`` body.

    Example:
        >>> config = BotConfig.from_body({"prompt_info": {"prompt": "Be brief."},
        ...                               "model_info_config": {"model_id": "default",
        ...                                                     "temperature": 0.2}})
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
    functions: tuple[ClientFunction, ...] = ()
    prologue: str = ""
    suggested_questions: tuple[str, ...] = ()
    #: plugin_id -> online version, frozen when the bot is published
    plugin_versions: dict[int, int] = field(default_factory=dict)

    @classmethod
    def from_body(cls, body: Mapping[str, Any], limits: Limits | None = None) -> BotConfig:
        return cls().updated(body, limits)

    def updated(self, body: Mapping[str, Any], limits: Limits | None = None) -> BotConfig:
        """A copy with the fields of a create/update body applied (absent fields unchanged);
        every text is bounded (``limits`` for descriptions)."""
        limits = limits or Limits()
        changes: dict[str, Any] = {}
        if (prompt_info := _object(body, "prompt_info")) is not None:
            prompt = prompt_info.get("prompt", "")
            if not isinstance(prompt, str) or len(prompt) > MAX_PROMPT_CHARS:
                raise InvalidParameter(
                    f"prompt_info.prompt must be a string of at most {MAX_PROMPT_CHARS} characters"
                )
            changes["prompt"] = prompt
        if (model := _object(body, "model_info_config")) is not None:
            changes.update(_model(model))
        if (onboarding := _object(body, "onboarding_info")) is not None:
            prologue = text(
                onboarding.get("prologue"), "onboarding_info.prologue", MAX_PROLOGUE_CHARS
            )
            questions = onboarding.get("suggested_questions") or []
            if not _str_list(questions):
                raise InvalidParameter(
                    "onboarding_info.suggested_questions must be a list of strings"
                )
            if len(questions) > MAX_QUESTIONS or any(
                len(q) > MAX_QUESTION_CHARS for q in questions
            ):
                raise InvalidParameter(
                    f"onboarding_info.suggested_questions allows {MAX_QUESTIONS} questions "
                    f"of at most {MAX_QUESTION_CHARS} characters"
                )
            changes["prologue"] = prologue
            changes["suggested_questions"] = tuple(questions)
        if (workflows := _object(body, "workflow_id_list")) is not None:
            changes["workflow_ids"] = _unique(
                parse_id(_field(item, "id", "workflow_id_list.ids[]"), "workflow id")
                for item in _list(workflows.get("ids") or [], "workflow_id_list.ids")
            )
        if (plugins := _object(body, "plugin_id_list")) is not None:
            changes["plugin_tools"] = _unique(
                PluginTool(
                    parse_id(_field(item, "plugin_id", "plugin_id_list.id_list[]"), "plugin_id"),
                    parse_id(_field(item, "api_id", "plugin_id_list.id_list[]"), "api_id"),
                )
                for item in _list(plugins.get("id_list") or [], "plugin_id_list.id_list")
            )
        if "variables" in body:
            changes["variables"] = _variables(body["variables"], limits)
        if "functions" in body:
            changes["functions"] = _functions(body["functions"], limits)
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
            "functions": [f.to_dict() for f in self.functions],
            "prologue": self.prologue,
            "suggested_questions": list(self.suggested_questions),
            "plugin_versions": {str(k): v for k, v in self.plugin_versions.items()},
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
            functions=tuple(ClientFunction(**f) for f in data.get("functions", [])),
            prologue=data.get("prologue", ""),
            suggested_questions=tuple(data.get("suggested_questions", [])),
            plugin_versions={int(k): int(v) for k, v in data.get("plugin_versions", {}).items()},
        )

    def variable_defaults(self) -> dict[str, str]:
        return {v.keyword: v.default_value for v in self.variables if v.enable}


def _model(model: Mapping[str, Any]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    model_id = model.get("model_id", "default")
    if not isinstance(model_id, str) or not model_id.strip() or len(model_id) > 200:
        raise InvalidParameter(
            "model_info_config.model_id must be a non-empty string (200 at most)"
        )
    changes["model_id"] = model_id.strip()
    params: dict[str, Any] = {}
    for name, (low, high) in MODEL_PARAMS.items():
        value = model.get(name)
        if value is None:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not low <= value <= high
        ):
            raise InvalidParameter(f"model_info_config.{name} must be a number in {low}..{high}")
        params[name] = int(value) if name == "max_tokens" else value
    changes["model_params"] = params
    for name, key, high in (
        ("context_round", "history_rounds", MAX_HISTORY_ROUNDS),
        ("max_tool_rounds", "max_tool_rounds", MAX_TOOL_ROUNDS),
    ):
        value = model.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
            raise InvalidParameter(f"model_info_config.{name} must be an integer in 0..{high}")
        changes[key] = value
    return changes


def _variables(raw: Any, limits: Limits) -> tuple[Variable, ...]:
    seen: set[str] = set()
    result = []
    if len(_list(raw, "variables")) > MAX_VARIABLES:
        raise InvalidParameter(f"variables allows at most {MAX_VARIABLES} variables")
    for i, item in enumerate(raw):
        where = f"variables[{i}]"
        if not isinstance(item, Mapping):
            raise InvalidParameter(f"{where} must be an object")
        keyword = item.get("keyword")
        if not isinstance(keyword, str) or not _KEYWORD.fullmatch(keyword):
            raise InvalidParameter(f"{where}.keyword must be an identifier")
        if keyword in seen or keyword.startswith("sys_"):
            raise InvalidParameter(f"{where}.keyword '{keyword}' is duplicated or reserved")
        seen.add(keyword)
        default = text(item.get("default_value", ""), f"{where}.default_value", MAX_VALUE_CHARS)
        description = limits.description(item.get("description", ""), f"{where}.description")
        enable = item.get("enable", True)
        if not isinstance(enable, bool):
            raise InvalidParameter(f"{where}.enable must be a boolean")
        result.append(Variable(keyword, default, description, enable))
    return tuple(result)


def _functions(raw: Any, limits: Limits) -> tuple[ClientFunction, ...]:
    seen: set[str] = set()
    result = []
    if len(_list(raw, "functions")) > MAX_FUNCTIONS:
        raise InvalidParameter(f"functions allows at most {MAX_FUNCTIONS} functions")
    for i, item in enumerate(raw):
        where = f"functions[{i}]"
        if not isinstance(item, Mapping):
            raise InvalidParameter(f"{where} must be an object")
        name = item.get("name")
        if not isinstance(name, str) or not _FUNCTION_NAME.fullmatch(name) or name in seen:
            raise InvalidParameter(f"{where}.name must be a unique function name")
        seen.add(name)
        description = limits.description(item.get("description", ""), f"{where}.description")
        parameters = item.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
            raise InvalidParameter(f"{where}.parameters must be a JSON schema of type object")
        result.append(ClientFunction(name, description, parameters))
    return tuple(result)


def _object(body: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidParameter(f"{name} must be an object")
    return value


def _list(value: Any, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidParameter(f"{name} must be a list")
    return value


def _field(item: Any, key: str, where: str) -> Any:
    if not isinstance(item, Mapping) or key not in item:
        raise InvalidParameter(f"{where} needs '{key}'")
    return item[key]


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _unique(items: Any) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(items))
