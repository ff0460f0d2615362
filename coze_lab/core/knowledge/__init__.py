"""Knowledge bases (Coze datasets): documents chunked and embedded through the model
registry, recalled by hybrid retrieval (full text + vectors, fused by reciprocal rank).

Example:
    >>> from coze_lab.core.knowledge import ChunkStrategy, chunk_text
    >>> chunk_text("one\\n\\ntwo", ChunkStrategy())
    ['one\\n\\ntwo']
"""

from __future__ import annotations

from coze_lab.core.knowledge.chunking import ChunkStrategy, chunk_text, count_tokens
from coze_lab.core.knowledge.embeddings import Embedder, RegistryEmbedder
from coze_lab.core.knowledge.ingest import IngestWorker
from coze_lab.core.knowledge.parsers import FILE_TYPES, ParseError, parse
from coze_lab.core.knowledge.search import Hit, Reranker
from coze_lab.core.knowledge.service import (
    STATUS_CODES,
    DatasetInfo,
    DocumentInfo,
    KnowledgeService,
    NewDocument,
)

__all__ = [
    "FILE_TYPES",
    "STATUS_CODES",
    "ChunkStrategy",
    "DatasetInfo",
    "DocumentInfo",
    "Embedder",
    "Hit",
    "IngestWorker",
    "KnowledgeService",
    "NewDocument",
    "ParseError",
    "RegistryEmbedder",
    "Reranker",
    "chunk_text",
    "count_tokens",
    "parse",
]
