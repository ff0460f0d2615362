"""Models: a registry of OpenAI-compatible endpoints and an async client with normalised results.

Example:
    >>> from coze_lab.core.models import ModelRegistry
    >>> registry = ModelRegistry.load(environ={"OPENAI_API_KEY": "sk-x"})
    >>> [spec.id for spec in registry.list()]
    ['default']
"""

from __future__ import annotations

from coze_lab.core.models.client import ModelClient, build_request
from coze_lab.core.models.errors import InvalidModelRegistry, ModelError, ModelNotConfigured
from coze_lab.core.models.registry import ModelRegistry, default_from_env, read_registry_file
from coze_lab.core.models.spec import ModelCapabilities, ModelPrices, ModelSpec
from coze_lab.core.models.types import (
    Completion,
    CompletionAccumulator,
    CompletionChunk,
    ToolCall,
    ToolCallAccumulator,
    ToolCallDelta,
    Usage,
    accumulate_tool_calls,
)

__all__ = [
    "Completion",
    "CompletionAccumulator",
    "CompletionChunk",
    "InvalidModelRegistry",
    "ModelCapabilities",
    "ModelClient",
    "ModelError",
    "ModelNotConfigured",
    "ModelPrices",
    "ModelRegistry",
    "ModelSpec",
    "ToolCall",
    "ToolCallAccumulator",
    "ToolCallDelta",
    "Usage",
    "accumulate_tool_calls",
    "build_request",
    "default_from_env",
    "read_registry_file",
]
