"""Workflows: a declarative graph (``spec``), the notebook DSL that builds it (``dsl``),
and the durable engine that runs it (``engine``)."""

from coze_lab.core.workflows.dsl import Workflow
from coze_lab.core.workflows.spec import (
    Edge,
    ErrorPolicy,
    InputSpec,
    NodeSpec,
    WorkflowDefinitionError,
    WorkflowSpec,
)

__all__ = [
    "Edge",
    "ErrorPolicy",
    "InputSpec",
    "NodeSpec",
    "Workflow",
    "WorkflowDefinitionError",
    "WorkflowSpec",
]
