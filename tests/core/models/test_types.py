"""Result types, accumulators and the docstring examples of the models package."""

from __future__ import annotations

import doctest
import importlib

import pytest

from coze_lab.core.models import (
    Completion,
    CompletionAccumulator,
    CompletionChunk,
    ModelError,
    ToolCall,
    ToolCallAccumulator,
    ToolCallDelta,
    Usage,
)
from coze_lab.core.models.errors import redact


def test_usage_adds_up() -> None:
    assert sum([Usage(1, 2, 3), Usage(4, 5, 9)], Usage()) == Usage(5, 7, 12)
    assert Usage(1, 2, 3).to_dict() == {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}


def test_tool_call_arguments() -> None:
    assert ToolCall("a", "f", "").arguments() == {}
    with pytest.raises(ModelError, match="invalid JSON arguments") as caught:
        ToolCall("a", "f", '{"x": ').arguments()
    assert caught.value.kind == "protocol"
    with pytest.raises(ModelError, match="not an object"):
        ToolCall("a", "f", "[1]").arguments()


def test_completion_to_message() -> None:
    call = ToolCall("a", "f", "{}")
    message = Completion("", [call], Usage(), "tool_calls").to_message()
    assert message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }


def test_accumulator_without_ids_or_finish_reason() -> None:
    acc = ToolCallAccumulator()
    acc.add([ToolCallDelta(0, None, "lookup", '{"q"'), ToolCallDelta(0, None, None, ': "x"}')])
    assert acc.tool_calls() == [ToolCall("call_0", "lookup", '{"q": "x"}')]
    done = CompletionAccumulator()
    done.add(CompletionChunk(tool_call_deltas=[ToolCallDelta(0, "i", "f", "{}")]))
    assert done.completion().finish_reason == "tool_calls"


def test_redact() -> None:
    assert redact("key sk-abcdefghijkl and Bearer xyz") == "key *** and Bearer ***"
    assert len(redact("x" * 2000)) == 500


@pytest.mark.parametrize(
    "module",
    [
        "coze_lab.core.models",
        "coze_lab.core.models.errors",
        "coze_lab.core.models.spec",
        "coze_lab.core.models.registry",
        "coze_lab.core.models.types",
        "coze_lab.core.models.client",
        "coze_lab.testing",
        "coze_lab.testing.model_server",
    ],
)
def test_docstring_examples(module: str) -> None:
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL
    result = doctest.testmod(importlib.import_module(module), optionflags=flags)
    assert result.failed == 0
