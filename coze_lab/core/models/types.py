"""Normalised results of a model call, independent of the provider SDK's classes.

The ``from_openai`` constructors read the OpenAI chat-completions shapes either as parsed
JSON (mappings: the client's own HTTP path) or as ``openai`` SDK objects (attributes), so
both paths normalise through the same code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from coze_lab.core.models.errors import ModelError


@dataclass(frozen=True)
class Usage:
    """Token counts of one call; ``+`` adds them up (per chat, per workflow node).

    Example:
        >>> Usage(3, 4, 7) + Usage(1, 1, 2)
        Usage(input_tokens=4, output_tokens=5, total_tokens=9)
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
        )

    @classmethod
    def from_openai(cls, raw: Any) -> Usage | None:
        """An OpenAI ``usage`` object (``None`` stays ``None``; a missing total is summed).

        Example:
            >>> Usage.from_openai({"prompt_tokens": 3, "completion_tokens": 2})
            Usage(input_tokens=3, output_tokens=2, total_tokens=5)
        """
        if raw is None:
            return None
        prompt = _field(raw, "prompt_tokens") or 0
        completion = _field(raw, "completion_tokens") or 0
        return cls(prompt, completion, _field(raw, "total_tokens") or prompt + completion)

    def to_dict(self) -> dict[str, int]:
        """JSON-ready form."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(frozen=True)
class ToolCall:
    """A complete function call requested by the model; ``arguments_json`` is the raw text.

    Example:
        >>> call = ToolCall("call_1", "get_weather", '{"city": "Paris"}')
        >>> call.arguments()
        {'city': 'Paris'}
    """

    id: str
    name: str
    arguments_json: str

    def arguments(self) -> dict[str, Any]:
        """The parsed arguments (``{}`` for empty text); :class:`ModelError` if not an object."""
        if not self.arguments_json.strip():
            return {}
        try:
            value = json.loads(self.arguments_json)
        except json.JSONDecodeError as exc:
            raise ModelError(
                f"the model called tool '{self.name}' with invalid JSON arguments: {exc.msg}",
                kind="protocol",
            ) from exc
        if not isinstance(value, dict):
            raise ModelError(
                f"the model called tool '{self.name}' with arguments that are not an object",
                kind="protocol",
            )
        return value

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``tool_calls`` item, for the assistant message in the history."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments_json},
        }


@dataclass(frozen=True)
class ToolCallDelta:
    """A fragment of a streamed tool call; fragments with the same ``index`` belong together."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments_delta: str = ""


@dataclass(frozen=True)
class Completion:
    """The normalised answer of a non-streamed call.

    Example:
        >>> done = Completion("Hi!", [], Usage(2, 1, 3), "stop")
        >>> done.to_message()
        {'role': 'assistant', 'content': 'Hi!'}
    """

    content: str
    tool_calls: list[ToolCall]
    usage: Usage
    finish_reason: str
    model: str = ""

    @classmethod
    def from_openai(cls, raw: Any) -> Completion:
        """An OpenAI ``chat.completion``; :class:`ModelError` (protocol) without choices.

        Example:
            >>> Completion.from_openai({"model": "m", "choices": [
            ...     {"message": {"content": "Hi"}, "finish_reason": "stop"}]}).content
            'Hi'
        """
        choices = _field(raw, "choices")
        if not choices:
            raise ModelError("the model provider returned no choices", kind="protocol")
        choice = choices[0]
        message = _field(choice, "message") or {}
        tool_calls = []
        for i, call in enumerate(_field(message, "tool_calls") or ()):
            function = _field(call, "function")
            if function is not None:
                name, arguments = _field(function, "name"), _field(function, "arguments")
                tool_calls.append(
                    ToolCall(_field(call, "id") or f"call_{i}", name, arguments or "")
                )
        return cls(
            content=_field(message, "content") or "",
            tool_calls=tool_calls,
            usage=Usage.from_openai(_field(raw, "usage")) or Usage(),
            finish_reason=_field(choice, "finish_reason")
            or ("tool_calls" if tool_calls else "stop"),
            model=_field(raw, "model") or "",
        )

    def to_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation history."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
            message["content"] = self.content or None
        return message


@dataclass(frozen=True)
class CompletionChunk:
    """One streamed piece: text, tool-call fragments, and at the end usage / finish reason."""

    content_delta: str = ""
    tool_call_deltas: list[ToolCallDelta] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = None

    @classmethod
    def from_openai(cls, raw: Any) -> CompletionChunk | None:
        """An OpenAI ``chat.completion.chunk``; ``None`` when it carries nothing.

        A tool-call fragment without ``index`` (some providers omit it) takes its position.

        Example:
            >>> CompletionChunk.from_openai({"choices": [{"delta": {"content": "Hel"}}]})
            CompletionChunk(content_delta='Hel', tool_call_deltas=[], usage=None, finish_reason=None)
        """  # noqa: E501
        usage = Usage.from_openai(_field(raw, "usage"))
        choices = _field(raw, "choices")
        if not choices:
            return cls(usage=usage) if usage is not None else None
        choice = choices[0]
        delta = _field(choice, "delta") or {}
        deltas = []
        for position, call in enumerate(_field(delta, "tool_calls") or ()):
            index = _field(call, "index")
            function = _field(call, "function")
            deltas.append(
                ToolCallDelta(
                    index=position if index is None else index,
                    id=_field(call, "id"),
                    name=_field(function, "name") if function else None,
                    arguments_delta=(_field(function, "arguments") or "") if function else "",
                )
            )
        return cls(
            content_delta=_field(delta, "content") or "",
            tool_call_deltas=deltas,
            usage=usage,
            finish_reason=_field(choice, "finish_reason"),
        )


def _field(raw: Any, name: str) -> Any:
    """A field of a provider object: parsed JSON (a dict) or an ``openai`` SDK model."""
    if type(raw) is dict:
        return raw.get(name)
    return getattr(raw, name, None)


class ToolCallAccumulator:
    """Joins streamed :class:`ToolCallDelta` fragments into complete :class:`ToolCall` objects.

    Example:
        >>> acc = ToolCallAccumulator()
        >>> acc.add([ToolCallDelta(0, "call_1", "add", '{"a": ')])
        >>> acc.add([ToolCallDelta(0, arguments_delta="1}")])
        >>> acc.tool_calls()
        [ToolCall(id='call_1', name='add', arguments_json='{"a": 1}')]
    """

    def __init__(self) -> None:
        self._parts: dict[int, dict[str, str]] = {}

    def add(self, deltas: Iterable[ToolCallDelta]) -> None:
        """Fold in the fragments of one chunk."""
        for delta in deltas:
            part = self._parts.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            if delta.id:
                part["id"] = delta.id
            if delta.name:
                part["name"] += delta.name if part["name"] != delta.name else ""
            part["arguments"] += delta.arguments_delta

    def tool_calls(self) -> list[ToolCall]:
        """The calls so far, by index; a call without an id gets ``call_<index>``."""
        return [
            ToolCall(part["id"] or f"call_{index}", part["name"], part["arguments"])
            for index, part in sorted(self._parts.items())
        ]


def accumulate_tool_calls(deltas: Iterable[ToolCallDelta]) -> list[ToolCall]:
    """Complete tool calls from all fragments of a stream.

    Example:
        >>> accumulate_tool_calls([ToolCallDelta(0, "c", "f", "{}")])
        [ToolCall(id='c', name='f', arguments_json='{}')]
    """
    acc = ToolCallAccumulator()
    acc.add(deltas)
    return acc.tool_calls()


class CompletionAccumulator:
    """Builds the final :class:`Completion` while a stream is being forwarded.

    Example:
        >>> acc = CompletionAccumulator()
        >>> acc.add(CompletionChunk(content_delta="Hel"))
        >>> acc.add(CompletionChunk(content_delta="lo", finish_reason="stop",
        ...                         usage=Usage(1, 2, 3)))
        >>> acc.completion()
        Completion(content='Hello', tool_calls=[], usage=Usage(input_tokens=1, output_tokens=2, total_tokens=3), finish_reason='stop', model='')
    """  # noqa: E501

    def __init__(self) -> None:
        self._text: list[str] = []
        self._tools = ToolCallAccumulator()
        self._usage = Usage()
        self._finish_reason = ""

    def add(self, chunk: CompletionChunk) -> None:
        """Fold in one chunk."""
        self._text.append(chunk.content_delta)
        self._tools.add(chunk.tool_call_deltas)
        if chunk.usage is not None:
            self._usage = chunk.usage
        if chunk.finish_reason:
            self._finish_reason = chunk.finish_reason

    def completion(self) -> Completion:
        """Everything received so far as one completion."""
        tool_calls = self._tools.tool_calls()
        finish = self._finish_reason or ("tool_calls" if tool_calls else "stop")
        return Completion("".join(self._text), tool_calls, self._usage, finish)
