"""Coze's datasets API (cozepy ``datasets``, ``datasets.documents``) and the studio's
knowledge search."""

from __future__ import annotations

import json
from typing import Any

from coze_lab.core.ids import parse_id
from coze_lab.core.knowledge import STATUS_CODES, DatasetInfo, DocumentInfo
from coze_lab.web.base import CozeHandler
from coze_lab.web.knowledge_requests import (
    parse_dataset_create,
    parse_dataset_update,
    parse_document_ids,
    parse_documents_create,
    parse_page,
    parse_search,
)
from coze_lab.web.params import int_value


class DatasetsHandler(CozeHandler):
    """POST: create a knowledge base; GET: a page of a space's knowledge bases."""

    def post(self) -> None:
        user = self.coze_user()
        edit = parse_dataset_create(self.json_body())
        dataset = self.runtime.knowledge.create_dataset(
            user.id,
            edit.space_id,
            edit.name,
            edit.description,
            format_type=edit.format_type,
            icon_file_id=edit.icon_file_id,
        )
        self.reply({"dataset_id": str(dataset.id)})

    def get(self) -> None:
        user = self.coze_user()
        page_num = int_value(
            self.get_query_argument("page_num", None), "page_num", default=1, low=1, high=10**6
        )
        page_size = int_value(
            self.get_query_argument("page_size", None), "page_size", default=10, low=1, high=300
        )
        format_type = int_value(
            self.get_query_argument("format_type", None) or None,
            "format_type",
            default=0,
            low=0,
            high=2,
        )
        if format_type != 0:  # only text knowledge bases exist
            self.reply({"total_count": 0, "dataset_list": []})
            return
        items, total = self.runtime.knowledge.list_datasets(
            user.id,
            self.space_query(),
            name=self.get_query_argument("name", None) or None,
            page_num=page_num,
            page_size=page_size,
        )
        self.reply(
            {"total_count": total, "dataset_list": [dataset_json(d, user.id) for d in items]}
        )


class DatasetHandler(CozeHandler):
    """PUT: replace name, description and icon; DELETE: the knowledge base and its documents."""

    def put(self, dataset_id: str) -> None:
        user = self.coze_user()
        edit = parse_dataset_update(self.json_body())
        self.runtime.knowledge.update_dataset(
            user.id,
            parse_id(dataset_id, "dataset_id"),
            edit.name,
            edit.description,
            edit.icon_file_id,
        )
        self.reply({})

    def delete(self, dataset_id: str) -> None:
        user = self.coze_user()
        self.runtime.knowledge.delete_dataset(user.id, parse_id(dataset_id, "dataset_id"))
        self.reply({})


class DatasetProcessHandler(CozeHandler):
    """POST: the processing status and progress of some documents."""

    def post(self, dataset_id: str) -> None:
        user = self.coze_user()
        ids = parse_document_ids(self.json_body())
        docs = self.runtime.knowledge.progress(user.id, parse_id(dataset_id, "dataset_id"), ids)
        self.reply({"data": [progress_json(d) for d in docs]})


class _Beside(CozeHandler):
    def reply_beside(self, **fields: Any) -> None:
        """A success whose fields sit beside ``code`` and ``msg``, with no ``data`` (as
        Coze's knowledge document endpoints answer, and cozepy reads them)."""
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps({"code": 0, "msg": "", **fields}))


class DocumentCreateHandler(_Beside):
    """POST: add documents (base64 files or uploaded file ids); they are processed in the
    background (see ``/v1/datasets/{id}/process``)."""

    def body_limit(self) -> int:  # ten base64 documents of the largest size
        return self.runtime.config.knowledge_max_document_bytes * 14 // 10 + 64 * 1024

    def post(self) -> None:
        user = self.coze_user()
        request = parse_documents_create(self.json_body())
        docs = self.runtime.knowledge.create_documents(
            user.id, request.dataset_id, request.documents, request.chunk_strategy
        )
        self.reply_beside(document_infos=[document_json(d) for d in docs])


class DocumentListHandler(_Beside):
    """POST: a page of a knowledge base's documents."""

    def post(self) -> None:
        user = self.coze_user()
        body = self.json_body()
        page, size = parse_page(body, "page", "size", high=300)
        docs, total = self.runtime.knowledge.list_documents(
            user.id, parse_id(body.get("dataset_id"), "dataset_id"), page=page, size=size
        )
        # beside code and msg, with no ``data``: cozepy reads the whole body then
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(
            json.dumps(
                {
                    "code": 0,
                    "msg": "",
                    "document_infos": [document_json(d) for d in docs],
                    "total": total,
                }
            )
        )


class DocumentUpdateHandler(CozeHandler):
    """POST: rename a document."""

    def post(self) -> None:
        user = self.coze_user()
        body = self.json_body()
        self.runtime.knowledge.rename_document(
            user.id, parse_id(body.get("document_id"), "document_id"), body.get("document_name")
        )
        self.reply({})


class DocumentDeleteHandler(CozeHandler):
    """POST: delete documents with their chunks (all or none)."""

    def post(self) -> None:
        user = self.coze_user()
        self.runtime.knowledge.delete_documents(user.id, parse_document_ids(self.json_body()))
        self.reply({})


class KnowledgeSearchHandler(CozeHandler):
    """POST: hybrid recall from knowledge bases (the notebook's ``Knowledge.search``)."""

    async def post(self) -> None:
        user = self.studio_user()
        request = parse_search(self.json_body())
        hits = await self.runtime.knowledge.search(
            user.id,
            request.dataset_ids,
            request.query,
            top_k=request.top_k,
            min_score=request.min_score,
        )
        self.reply({"chunks": [hit.to_dict() for hit in hits]})


def dataset_json(d: DatasetInfo, user_id: int) -> dict[str, Any]:
    """A knowledge base as cozepy's ``Dataset``."""
    return {
        "dataset_id": str(d.id),
        "name": d.name,
        "description": d.description,
        "space_id": str(d.space_id),
        "status": d.status,
        "format_type": d.format_type,
        "can_edit": True,
        "icon_url": "",
        "doc_count": d.doc_count,
        "file_list": d.file_list,
        "hit_count": 0,
        "bot_used_count": 0,
        "slice_count": d.slice_count,
        "all_file_size": d.all_file_size,
        "chunk_strategy": d.chunk_strategy,
        "failed_file_list": d.failed_file_list,
        "processing_file_list": d.processing_file_list,
        "processing_file_id_list": d.processing_file_id_list,
        "avatar_url": "",
        "creator_id": str(d.owner_id),
        "creator_name": "",
        "create_time": int(d.created_at.timestamp()),
        "update_time": int(d.updated_at.timestamp()),
    }


def document_json(d: DocumentInfo) -> dict[str, Any]:
    """A document as cozepy's ``Document`` (status 0 processing, 1 done, 9 failed)."""
    return {
        "document_id": str(d.id),
        "char_count": d.char_count,
        "chunk_strategy": d.chunk_strategy,
        "format_type": 0,
        "hit_count": d.hit_count,
        "name": d.name,
        "size": d.size,
        "slice_count": d.slice_count,
        "source_type": d.source_type,
        "status": STATUS_CODES[d.status],
        "type": d.file_type,
        "update_interval": 0,
        "update_type": 0,
        "create_time": int(d.created_at.timestamp()),
        "update_time": int(d.updated_at.timestamp()),
    }


def progress_json(d: DocumentInfo) -> dict[str, Any]:
    """A document's processing state as cozepy's ``DocumentProgress``."""
    return {
        "document_id": str(d.id),
        "url": "",
        "size": d.size,
        "type": d.file_type,
        "status": STATUS_CODES[d.status],
        "progress": d.progress,
        "update_type": 0,
        "document_name": d.name,
        "remaining_time": 0,
        "status_descript": d.failure or "",
        "update_interval": 0,
    }


class StudioDatasetsHandler(CozeHandler):
    """The studio's knowledge bases of a space (the sidebar, ``cl.Knowledge``): GET lists
    them with their documents' status, POST creates one."""

    def get(self) -> None:
        user = self.studio_user()
        page_num = int_value(
            self.get_query_argument("page_num", None), "page_num", default=1, low=1, high=10**6
        )
        items, total = self.runtime.knowledge.list_datasets(
            user.id,
            self.space_query(),
            name=self.get_query_argument("name", None) or None,
            page_num=page_num,
            page_size=100,
        )
        self.reply({"datasets": [dataset_json(d, user.id) for d in items], "total": total})

    def post(self) -> None:
        user = self.studio_user()
        edit = parse_dataset_create(self.json_body())
        dataset = self.runtime.knowledge.create_dataset(
            user.id, self.space_query(), edit.name, edit.description
        )
        self.reply(dataset_json(dataset, user.id))


class StudioDocumentsHandler(CozeHandler):
    """A knowledge base's documents: GET lists them with status and progress, POST adds
    some (the body of ``/open_api/knowledge/document/create`` without ``dataset_id``)."""

    def body_limit(self) -> int:
        return self.runtime.config.knowledge_max_document_bytes * 14 // 10 + 64 * 1024

    def get(self, dataset_id: str) -> None:
        user = self.studio_user()
        docs, total = self.runtime.knowledge.list_documents(
            user.id, parse_id(dataset_id, "dataset_id"), page=1, size=300
        )
        self.reply({"documents": [studio_document(d) for d in docs], "total": total})

    def post(self, dataset_id: str) -> None:
        user = self.studio_user()
        request = parse_documents_create({**self.json_body(), "dataset_id": dataset_id})
        docs = self.runtime.knowledge.create_documents(
            user.id, request.dataset_id, request.documents, request.chunk_strategy
        )
        self.reply({"documents": [studio_document(d) for d in docs]})


def studio_document(d: DocumentInfo) -> dict[str, Any]:
    """A document as the studio shows it: Coze's fields plus the status by name, the
    progress and the failure reason."""
    return {
        **document_json(d),
        "status_name": d.status,
        "progress": d.progress,
        "failure": d.failure,
    }
