"""Node types by name."""

from coze_lab.core.workflows.nodes.base import (
    InterruptRequest,
    NodeContext,
    NodeError,
    NodeKind,
    NodeResult,
)
from coze_lab.core.workflows.nodes.basic import (
    AggregateNode,
    AssignNode,
    EndNode,
    JsonNode,
    MessageNode,
    StartNode,
    TextNode,
    VariableNode,
)
from coze_lab.core.workflows.nodes.code import CodeNode
from coze_lab.core.workflows.nodes.composite import (
    BatchNode,
    LoopControlNode,
    LoopNode,
    SubworkflowNode,
)
from coze_lab.core.workflows.nodes.condition import ConditionNode
from coze_lab.core.workflows.nodes.database import DatabaseNode
from coze_lab.core.workflows.nodes.http import HttpNode
from coze_lab.core.workflows.nodes.human import InputNode, QuestionNode
from coze_lab.core.workflows.nodes.intent import IntentNode
from coze_lab.core.workflows.nodes.knowledge import KnowledgeNode
from coze_lab.core.workflows.nodes.llm import LlmNode
from coze_lab.core.workflows.nodes.mcp import McpNode
from coze_lab.core.workflows.nodes.plugin import PluginNode

NODE_TYPES: dict[str, NodeKind] = {
    kind.type: kind
    for kind in (
        StartNode(),
        EndNode(),
        TextNode(),
        JsonNode(),
        MessageNode(),
        AggregateNode(),
        CodeNode(),
        ConditionNode(),
        QuestionNode(),
        InputNode(),
        LlmNode(),
        SubworkflowNode(),
        LoopNode(),
        BatchNode(),
        HttpNode(),
        IntentNode(),
        AssignNode(),
        VariableNode(),
        PluginNode(),
        McpNode(),
        DatabaseNode(),
        KnowledgeNode(),
        LoopControlNode("break"),
        LoopControlNode("continue"),
    )
}

__all__ = ["NODE_TYPES", "InterruptRequest", "NodeContext", "NodeError", "NodeKind", "NodeResult"]
