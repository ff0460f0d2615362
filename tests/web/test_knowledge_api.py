"""The datasets API through cozepy against a real ``coze-lab serve``: knowledge bases and
documents round trip, documents are processed in the background with progress, a bad file
fails with its reason, another user's knowledge bases are absent, bad input is a 4xx."""

from __future__ import annotations

import base64
import json
import time

import pytest
from cozepy import (
    BotKnowledge,
    ChatStatus,
    CozeAPIError,
    DocumentBase,
    DocumentChunkStrategy,
    DocumentFormatType,
    DocumentSourceInfo,
    DocumentStatus,
    MessageType,
)

from coze_lab.testing import ModelServer, ScriptedToolCall, TextReply, ToolCallsReply
from coze_lab.testing.documents import pdf_bytes
from tests.web.test_chat_api import Lab, ask, lab, make_bot, publish

__all__ = ["lab"]


def wait_processed(lab: Lab, dataset_id: str, ids: list[str]) -> list:
    coze = lab.coze()
    for _ in range(200):
        progress = coze.datasets.process(dataset_id=dataset_id, document_ids=ids).data
        if all(p.status != DocumentStatus.PROCESSING for p in progress):
            return progress
        time.sleep(0.05)
    raise AssertionError(f"documents still processing: {progress}")


def test_datasets_documents_and_a_bot_that_cites_them(lab: Lab, model_server: ModelServer) -> None:
    """One server for both (a server per test costs seconds on MariaDB)."""
    datasets_and_documents_round_trip(lab)
    a_bot_answers_from_a_pdf_with_a_citation(lab, model_server)


def datasets_and_documents_round_trip(lab: Lab) -> None:
    coze = lab.coze()
    space = lab.workspaces["alice"]
    dataset_id = coze.datasets.create(
        name="Handbook", space_id=space, format_type=DocumentFormatType.DOCUMENT, description="HR"
    ).dataset_id
    pdf = base64.b64encode(pdf_bytes(["Holidays: 30 days per year, booked in Workday."])).decode()
    created = coze.datasets.documents.create(
        dataset_id=dataset_id,
        document_bases=[
            DocumentBase(
                name="faq.md",
                source_info=DocumentSourceInfo.build_local_file(
                    "# Parking\n\nVisitors park in lot B.", "md"
                ),
            ),
            DocumentBase(
                name="policy.pdf", source_info=DocumentSourceInfo(file_base64=pdf, file_type="pdf")
            ),
            DocumentBase(
                name="bad.pdf", source_info=DocumentSourceInfo.build_local_file("not a pdf", "pdf")
            ),
        ],
        chunk_strategy=DocumentChunkStrategy.build_custom(200, "\n\n"),
    ).data
    assert [d.name for d in created] == ["faq.md", "policy.pdf", "bad.pdf"]
    assert {d.status for d in created} == {DocumentStatus.PROCESSING}
    progress = wait_processed(lab, dataset_id, [d.document_id for d in created])
    assert [p.status for p in progress] == [
        DocumentStatus.COMPLETED,
        DocumentStatus.COMPLETED,
        DocumentStatus.FAILED,
    ]
    assert progress[0].progress == 100
    assert "pdf file cannot be read" in progress[2].status_descript

    docs = list(coze.datasets.documents.list(dataset_id=dataset_id, page_size=2))
    assert len(docs) == 3 and docs[1].slice_count == 1 and docs[1].type == "pdf"
    coze.datasets.documents.update(document_id=docs[0].document_id, document_name="parking.md")
    coze.datasets.documents.delete(document_ids=[docs[2].document_id])
    listed = list(coze.datasets.list(space_id=space))
    assert [(d.name, d.doc_count) for d in listed] == [("Handbook", 2)]
    assert sorted(listed[0].file_list) == ["parking.md", "policy.pdf"]
    coze.datasets.update(dataset_id=dataset_id, name="People handbook")

    found = lab.post(
        "/coze_lab/api/knowledge/search", json={"dataset_ids": [dataset_id], "query": "holidays"}
    ).json()["data"]["chunks"]
    assert found[0]["document_name"] == "policy.pdf" and "30 days" in found[0]["content"]

    # bob sees nothing of alice's
    with pytest.raises(CozeAPIError) as absent:
        lab.coze("bob").datasets.process(dataset_id=dataset_id, document_ids=[docs[0].document_id])
    assert absent.value.code == 4200
    with pytest.raises(CozeAPIError):
        list(lab.coze("bob").datasets.list(space_id=space))
    bad = lab.post(
        "/open_api/knowledge/document/create",
        json={
            "dataset_id": dataset_id,
            "document_bases": [
                {"name": "x.xls", "source_info": {"file_base64": "eA==", "file_type": "xls"}}
            ],
        },
    )
    assert bad.status_code == 400 and "file_type 'xls'" in bad.json()["msg"]
    coze.datasets.delete(dataset_id=dataset_id)
    assert list(coze.datasets.list(space_id=space)) == []


def a_bot_answers_from_a_pdf_with_a_citation(lab: Lab, model_server: ModelServer) -> None:
    coze = lab.coze()
    dataset_id = coze.datasets.create(
        name="Plans", space_id=lab.workspaces["alice"], format_type=DocumentFormatType.DOCUMENT
    ).dataset_id
    pdf = base64.b64encode(pdf_bytes(["Project Falcon launches on 3 May 2027 in Oslo."]))
    (doc,) = coze.datasets.documents.create(
        dataset_id=dataset_id,
        document_bases=[
            DocumentBase(
                name="plan.pdf",
                source_info=DocumentSourceInfo(file_base64=pdf.decode(), file_type="pdf"),
            )
        ],
    ).data
    wait_processed(lab, dataset_id, [doc.document_id])
    bob_kb = (
        lab.coze("bob")
        .datasets.create(
            name="Bob", space_id=lab.workspaces["bob"], format_type=DocumentFormatType.DOCUMENT
        )
        .dataset_id
    )

    bot_id = make_bot(lab)
    # another space's knowledge base is refused, naming it, and the bot is left as it was
    with pytest.raises(CozeAPIError) as refused:
        coze.bots.update(bot_id=bot_id, knowledge=BotKnowledge(dataset_ids=[dataset_id, bob_kb]))
    assert refused.value.code == 4200 and bob_kb in (refused.value.msg or ""), refused.value
    draft = lab.get(f"/v1/bots/{bot_id}", params={"is_published": "false"}).json()["data"]
    assert draft["knowledge"]["dataset_ids"] == [], draft["knowledge"]
    coze.bots.update(bot_id=bot_id, knowledge=BotKnowledge(dataset_ids=[dataset_id]))
    publish(lab, bot_id)
    model_server.script([TextReply("Falcon launches on 3 May 2027 [1] (plan.pdf).")])
    poll = coze.chat.create_and_poll(
        bot_id=bot_id, user_id="u1", additional_messages=ask("When does Falcon launch?")
    )
    assert poll.chat.status == ChatStatus.COMPLETED, poll.chat.last_error
    prompt = model_server.requests[-1]["messages"]
    assert "3 May 2027" in prompt[-2]["content"] and prompt[-1]["role"] == "user"
    verbose, answer = poll.messages[0], poll.messages[1]
    assert verbose.type == MessageType.VERBOSE and answer.type == MessageType.ANSWER
    recall = json.loads(verbose.content)
    assert recall["msg_type"] == "knowledge_recall"
    (chunk,) = json.loads(recall["data"])["chunks"]
    assert chunk["meta"]["document"]["name"] == "plan.pdf"
    assert chunk["meta"]["dataset"] == {"id": dataset_id, "name": "Plans"}
    assert "3 May 2027" in chunk["slice"] and "[1] (plan.pdf)" in answer.content

    # on demand: the model calls recall_knowledge; the citations precede the tool's answer
    coze.bots.update(
        bot_id=bot_id, knowledge=BotKnowledge(dataset_ids=[dataset_id], auto_call=False)
    )
    publish(lab, bot_id)
    model_server.script(
        [
            ToolCallsReply([ScriptedToolCall("recall_knowledge", {"query": "Falcon"}, id="k1")]),
            TextReply("In Oslo [1]."),
        ]
    )
    poll = coze.chat.create_and_poll(
        bot_id=bot_id, user_id="u1", additional_messages=ask("Where is the launch?")
    )
    assert poll.chat.status == ChatStatus.COMPLETED, poll.chat.last_error
    kinds = [m.type for m in poll.messages]
    assert kinds == [
        MessageType.FUNCTION_CALL,
        MessageType.VERBOSE,
        MessageType.TOOL_RESPONSE,
        MessageType.ANSWER,
    ]
    assert "Oslo" in poll.messages[2].content
