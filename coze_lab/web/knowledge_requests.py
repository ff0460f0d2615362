"""Request bodies of the datasets API (cozepy's ``datasets`` and ``datasets.documents``)
→ the knowledge service's commands."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import parse_id
from coze_lab.core.knowledge import ChunkStrategy, NewDocument
from coze_lab.core.knowledge.service import MAX_DELETE, MAX_DOCUMENTS
from coze_lab.web.params import int_value

#: Coze's document_source values we take: 0 a local file (base64), 5 an uploaded file id
LOCAL_FILE, ONLINE_WEB, UPLOAD_FILE_ID = 0, 1, 5


@dataclass(frozen=True)
class DocumentsCreate:
    dataset_id: int
    documents: list[NewDocument]
    chunk_strategy: ChunkStrategy | None


@dataclass(frozen=True)
class DatasetEdit:
    name: Any
    description: Any
    icon_file_id: int | None
    format_type: Any = 0
    space_id: int | None = None


def parse_dataset_create(body: Mapping[str, Any]) -> DatasetEdit:
    """``POST /v1/datasets``: name, space_id, format_type (0), description, file_id.

    Example:
        >>> parse_dataset_create({"name": "kb", "space_id": "7", "format_type": 0}).space_id
        7
    """
    space = body.get("space_id")
    return DatasetEdit(
        body.get("name"),
        _description(body),
        _optional_id(body.get("file_id"), "file_id"),
        body.get("format_type", 0),
        None if space in (None, "") else parse_id(space, "space_id"),
    )


def parse_dataset_update(body: Mapping[str, Any]) -> DatasetEdit:
    """``PUT /v1/datasets/{id}``: name (required), description, file_id."""
    return DatasetEdit(
        body.get("name"),
        body.get("description") or "",
        _optional_id(body.get("file_id"), "file_id"),
    )


def parse_documents_create(body: Mapping[str, Any]) -> DocumentsCreate:
    """``POST /open_api/knowledge/document/create``: up to ten ``document_bases`` with a
    ``source_info`` each (``file_base64`` + ``file_type``, or ``source_file_id``) and an
    optional ``chunk_strategy``.

    Example:
        >>> body = {"dataset_id": "7", "document_bases": [{"name": "a.txt",
        ...     "source_info": {"file_base64": "SGk=", "file_type": "txt"}}]}
        >>> parse_documents_create(body).documents[0].data
        b'Hi'
    """
    dataset_id = parse_id(body.get("dataset_id"), "dataset_id")
    if isinstance(body.get("format_type"), bool) or body.get("format_type") not in (None, 0):
        raise InvalidParameter("format_type must be 0 (text documents)")
    bases = body.get("document_bases")
    if not isinstance(bases, list) or not bases:
        raise InvalidParameter("document_bases must be a non-empty list")
    if len(bases) > MAX_DOCUMENTS:
        raise InvalidParameter(f"document_bases holds at most {MAX_DOCUMENTS} documents")
    documents = [_document(base, f"document_bases[{i}]") for i, base in enumerate(bases)]
    raw_strategy = body.get("chunk_strategy")
    strategy = None if raw_strategy is None else ChunkStrategy.from_dict(raw_strategy)
    return DocumentsCreate(dataset_id, documents, strategy)


def _document(base: Any, where: str) -> NewDocument:
    if not isinstance(base, Mapping):
        raise InvalidParameter(f"{where} must be an object")
    name = base.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InvalidParameter(f"{where}.name is required")
    source = base.get("source_info")
    if not isinstance(source, Mapping):
        raise InvalidParameter(f"{where}.source_info is required")
    kind = source.get("document_source")
    if kind == ONLINE_WEB or source.get("web_url"):
        raise InvalidParameter(
            f"{where}: web pages are not fetched; send the page as file_base64 with file_type html"
        )
    file_type = source.get("file_type")
    if file_type is not None and not isinstance(file_type, str):
        raise InvalidParameter(f"{where}.source_info.file_type must be a string")
    if source.get("source_file_id") not in (None, ""):
        file_id = parse_id(source["source_file_id"], f"{where}.source_info.source_file_id")
        kind_from_name = name.rsplit(".", 1)[-1] if "." in name else ""
        return NewDocument(name, file_type or kind_from_name, b"", UPLOAD_FILE_ID, file_id)
    encoded = source.get("file_base64")
    if not isinstance(encoded, str):
        raise InvalidParameter(f"{where}.source_info needs file_base64 or source_file_id")
    if not file_type:
        raise InvalidParameter(f"{where}.source_info.file_type is required with file_base64")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidParameter(f"{where}.source_info.file_base64 is not base64") from None
    return NewDocument(name, file_type, data, LOCAL_FILE)


def parse_document_ids(body: Mapping[str, Any], name: str = "document_ids") -> list[int]:
    """A non-empty list of document ids (at most 100)."""
    raw = body.get(name)
    if not isinstance(raw, list) or not raw:
        raise InvalidParameter(f"{name} must be a non-empty list of ids")
    if len(raw) > MAX_DELETE:
        raise InvalidParameter(f"{name} names at most {MAX_DELETE} documents")
    return [parse_id(value, name) for value in raw]


def parse_page(body: Mapping[str, Any], page: str, size: str, *, high: int) -> tuple[int, int]:
    return (
        int_value(body.get(page), page, default=1, low=1, high=10**6),
        int_value(body.get(size), size, default=10, low=1, high=high),
    )


@dataclass(frozen=True)
class SearchRequest:
    dataset_ids: list[int]
    query: str
    top_k: int
    min_score: float


def parse_search(body: Mapping[str, Any]) -> SearchRequest:
    """``POST /coze_lab/api/knowledge/search``: dataset_ids, query, top_k, min_score.

    Example:
        >>> parse_search({"dataset_ids": ["7"], "query": "q"}).top_k
        5
    """
    ids = body.get("dataset_ids")
    if not isinstance(ids, list) or not ids or len(ids) > 20:
        raise InvalidParameter("dataset_ids must be a list of 1 to 20 ids")
    query = body.get("query")
    if not isinstance(query, str) or not query.strip() or len(query) > 4000:
        raise InvalidParameter("query must be a non-empty string of at most 4000 characters")
    min_score = body.get("min_score", 0.0)
    if (
        isinstance(min_score, bool)
        or not isinstance(min_score, int | float)
        or not 0 <= min_score <= 1
    ):
        raise InvalidParameter("min_score must be a number between 0 and 1")
    return SearchRequest(
        [parse_id(i, "dataset_ids") for i in ids],
        query,
        int_value(body.get("top_k"), "top_k", default=5, low=1, high=100),
        float(min_score),
    )


def _description(body: Mapping[str, Any]) -> str:
    value = body.get("description")
    if value is not None and not isinstance(value, str):
        raise InvalidParameter("description must be a string")
    return value or ""


def _optional_id(raw: Any, name: str) -> int | None:
    return None if raw in (None, "") else parse_id(raw, name)
