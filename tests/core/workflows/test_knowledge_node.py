"""The knowledge node inside a workflow: recalled chunks, with their source, feed the
next node; a bad definition names the node."""

from __future__ import annotations

import pytest

import coze_lab as cl
from coze_lab.core.knowledge import NewDocument
from coze_lab.core.workflows import WorkflowDefinitionError
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.testing import ModelServer


def test_a_workflow_recalls_from_a_knowledge_base(
    model_env: ModelServer, host: InProcessHost
) -> None:
    kb = host.runtime.knowledge
    dataset = kb.create_dataset(host.user.id, None, "faq")
    kb.create_documents(
        host.user.id,
        dataset.id,
        [
            NewDocument(
                "faq.csv",
                "csv",
                b"question,answer\nWifi password?,orange-42\nParking?,Lot B behind the station\n",
            ),
        ],
    )
    assert host.call(host.runtime.ingest.run_once()) == 1
    wf = cl.Workflow("ask_faq")
    wf.inputs(question=str)
    wf.knowledge("recall", datasets=[str(dataset.id)], query="{{start.question}}", top_k=1)
    wf.text("cite", template="{{recall.output}}")
    wf.end(answer="{{cite.output}}", chunks="{{recall.chunks}}")
    run = host.run(wf.validate(), {"question": "What is the wifi password?"})
    assert run.status == "succeeded", run.error
    (chunk,) = run.outputs["chunks"]
    assert chunk["document_name"] == "faq.csv" and chunk["dataset_id"] == str(dataset.id)
    assert run.outputs["answer"] == "question: Wifi password?\nanswer: orange-42"
    other = host.runtime.identity.ensure_user("someone-else")
    theirs = kb.create_dataset(other.id, None, "private")
    wf2 = cl.Workflow("peek")
    wf2.inputs(question=str)
    wf2.knowledge("recall", datasets=[str(theirs.id)], query="{{start.question}}")
    wf2.end(chunks="{{recall.chunks}}")
    peek = host.run(wf2.validate(), {"question": "anything"})
    assert peek.status == "failed" and "does not exist" in str(peek.error)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"dataset_ids": [], "query": "q"}, "dataset_ids"),
        ({"dataset_ids": ["x"], "query": "q"}, "is not an id"),
        ({"dataset_ids": ["7"], "query": "q", "top_k": 0}, "top_k"),
        ({"dataset_ids": ["7"], "query": "q", "min_score": 2}, "min_score"),
    ],
)
def test_knowledge_node_definition_errors_name_the_node(config: dict, message: str) -> None:
    wf = cl.Workflow("bad")
    wf.inputs(q=str)
    with pytest.raises(WorkflowDefinitionError, match=message) as caught:
        wf.node("knowledge", "recall", **config)
        wf.end(x="{{recall.output}}")
        wf.validate()
    assert "recall" in str(caught.value)
