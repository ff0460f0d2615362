"""The knowledge-retrieval node: recall chunks from knowledge bases for a query."""

from __future__ import annotations

from typing import Any

from coze_lab.core.ids import parse_id
from coze_lab.core.workflows.nodes.base import NodeContext, NodeError, NodeKind, NodeResult, require
from coze_lab.core.workflows.spec import NodeSpec, WorkflowDefinitionError


class KnowledgeNode(NodeKind):
    """``config``: ``dataset_ids`` (knowledge bases the run's owner can read), ``query`` (a
    template), ``top_k`` (5), ``min_score`` (0: cosine similarity, 0-1). Outputs
    ``chunks`` ([{content, document_name, document_id, dataset_id, score}], best first)
    and ``output`` (their texts, blank-line separated, for a prompt)."""

    type = "knowledge"
    templated = ("query",)

    def outputs(self, node: NodeSpec) -> dict[str, str]:
        return {"chunks": "array", "output": "string"}

    def check(self, node: NodeSpec) -> None:
        require(node, "query", str, "a query template")
        ids = node.config.get("dataset_ids")
        if not isinstance(ids, list) or not ids or len(ids) > 20:
            raise WorkflowDefinitionError("dataset_ids must list 1 to 20 knowledge bases", node.id)
        for value in ids:
            try:
                parse_id(value, "dataset_ids")
            except Exception:  # InvalidParameter: a definition error names the node
                raise WorkflowDefinitionError(
                    f"dataset_ids: {value!r} is not an id", node.id
                ) from None
        top_k = node.config.get("top_k", 5)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 100:
            raise WorkflowDefinitionError("top_k must be an integer from 1 to 100", node.id)
        score = node.config.get("min_score", 0)
        if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
            raise WorkflowDefinitionError("min_score must be a number from 0 to 1", node.id)

    async def run(self, ctx: NodeContext, node: NodeSpec, inputs: dict[str, Any]) -> NodeResult:
        query = str(inputs["__query__"]).strip()
        if not query:
            raise NodeError("the knowledge query is empty")
        config = node.config
        hits = await ctx.knowledge.search(
            ctx.owner_id,
            [parse_id(i, "dataset_ids") for i in config["dataset_ids"]],
            query,
            top_k=int(config.get("top_k", 5)),
            min_score=float(config.get("min_score", 0)),
        )
        chunks = [
            {
                "content": h.content,
                "document_name": h.document_name,
                "document_id": str(h.document_id),
                "dataset_id": str(h.dataset_id),
                "score": round(h.score, 6),
            }
            for h in hits
        ]
        return NodeResult({"chunks": chunks, "output": "\n\n".join(h.content for h in hits)})
