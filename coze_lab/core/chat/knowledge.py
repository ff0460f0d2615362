"""Bots with knowledge: recall before answering, or a ``recall_knowledge`` tool, and the
recall written into the chat as Coze writes it: a ``verbose`` message whose content is
``{"msg_type": "knowledge_recall", "data": "<json: {chunks: [...]}>"}``, each chunk with
its ``slice``, ``score`` and ``meta`` (dataset, document, link) — the answer's citations.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from coze_lab.core.chat.tools import Tool, ToolOutcome
from coze_lab.core.knowledge.search import Hit

#: recalls a query's chunks from the bot's knowledge bases
Recall = Callable[[str], Awaitable[list[Hit]]]
RECALL_TOOL = "recall_knowledge"
#: the meta key of a recall tool's outcome that carries the verbose message to write
KNOWLEDGE_RECALL = "knowledge_recall"
TOP_K = 5


def recall_verbose(query: str, hits: Sequence[Hit], names: dict[int, str]) -> str:
    """The content of Coze's ``knowledge_recall`` verbose message.

    Example:
        >>> hit = Hit(1, 2, 3, "a.pdf", 0, "Text", 0.8)
        >>> data = json.loads(json.loads(recall_verbose("q", [hit], {3: "kb"}))["data"])
        >>> data["chunks"][0]["meta"]["document"]["name"], data["chunks"][0]["slice"]
        ('a.pdf', 'Text')
    """
    chunks = [
        {
            "slice": h.content,
            "score": round(h.score, 6),
            "meta": {
                "dataset": {"id": str(h.dataset_id), "name": names.get(h.dataset_id, "")},
                "document": {
                    "id": str(h.document_id),
                    "source_type": 0,
                    "format_type": 0,
                    "name": h.document_name,
                },
                "link": {"title": h.document_name, "url": ""},
                "chunk": {"id": str(h.chunk_id), "seq": h.seq},
            },
        }
        for h in hits
    ]
    data = {"chunks": chunks, "ori_req": {"query": query}, "status_code": 0}
    return json.dumps(
        {"msg_type": "knowledge_recall", "data": json.dumps(data, ensure_ascii=False)},
        ensure_ascii=False,
    )


def recall_prompt(hits: Sequence[Hit]) -> str:
    """The system message that gives the model what was recalled, numbered for citing.

    Example:
        >>> print(recall_prompt([Hit(1, 2, 3, "a.pdf", 0, "Text", 0.8)]))  # doctest: +ELLIPSIS
        Answer from these excerpts of the knowledge base when they are relevant...
        [1] (a.pdf) Text
    """
    if not hits:
        return "The knowledge base holds nothing relevant to this question."
    lines = [
        "Answer from these excerpts of the knowledge base when they are relevant, and cite "
        "the sources you use as [n] (the document's name)."
    ]
    lines += [f"[{i}] ({h.document_name}) {h.content}" for i, h in enumerate(hits, start=1)]
    return "\n".join(lines)


def recall_tool(recall: Recall, names: dict[int, str]) -> Tool:
    """``recall_knowledge``: the model searches the bot's knowledge bases when it decides
    to (Coze's ``auto_call: false``). The outcome's ``knowledge_recall`` meta is the
    verbose message the agent writes before the tool's response (the citations)."""

    async def invoke(arguments: dict[str, Any]) -> ToolOutcome:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolOutcome("error: query must be a non-empty string", ok=False)
        hits = await recall(query)
        return ToolOutcome(
            recall_prompt(hits),
            meta={"chunks": str(len(hits)), KNOWLEDGE_RECALL: recall_verbose(query, hits, names)},
        )

    return Tool(
        name=RECALL_TOOL,
        description="Search the bot's knowledge bases for passages that answer a question.",
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string", "description": "what to look up"}},
            "required": ["query"],
        },
        kind="knowledge",
        invoke=invoke,
    )
