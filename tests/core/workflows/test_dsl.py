from __future__ import annotations

import copy
import json

import pytest

import coze_lab as cl
from coze_lab.core.workflows import WorkflowDefinitionError
from coze_lab.core.workflows.mermaid import mermaid
from tests.core.workflows.examples import DOC_REVIEW


def test_the_issue_example_builds_the_expected_graph() -> None:
    data = DOC_REVIEW.to_json()
    assert [n["id"] for n in data["nodes"]] == ["start", "clean", "summarize", "approve", "end"]
    assert [(e["source"], e["target"]) for e in data["edges"]] == [
        ("start", "clean"),
        ("clean", "summarize"),
        ("summarize", "approve"),
        ("approve", "end"),
    ]
    assert data["inputs"] == [
        {"name": "doc", "type": "string", "required": True, "default": None, "description": ""},
        {
            "name": "reviewer",
            "type": "string",
            "required": False,
            "default": "anonymous",
            "description": "",
        },
    ]
    clean = data["nodes"][1]
    assert clean["inputs"] == {"doc": "{{start.doc}}"}
    assert set(clean["outputs"]) == {"text", "words"}
    assert clean["config"]["code"].startswith("def clean(doc: str) -> dict:")
    assert "@wf.code" not in clean["config"]["code"]
    assert data["nodes"][3]["config"]["choices"] == ["yes", "no"]
    assert data["nodes"][4]["inputs"]["approved"] == "{{approve.answer}}"


def test_json_round_trips_exactly() -> None:
    data = DOC_REVIEW.to_json()
    text = json.dumps(data, sort_keys=True)
    again = cl.Workflow.from_json(json.loads(text)).to_json()
    assert json.dumps(again, sort_keys=True) == text


def _mutated(change) -> dict:
    data = copy.deepcopy(DOC_REVIEW.to_json())
    change(data)
    return data


@pytest.mark.parametrize(
    ("change", "node", "words"),
    [
        (
            lambda d: d["nodes"][2]["config"].update(prompt="{{ghost.text}}"),
            "summarize",
            "unknown node",
        ),
        (
            lambda d: d["nodes"][2]["config"].update(prompt="{{clean.nope}}"),
            "summarize",
            "no output 'nope'",
        ),
        (
            lambda d: d["edges"].append({"source": "approve", "target": "clean", "port": None}),
            None,
            "cycle",
        ),
        (lambda d: d["nodes"].pop(4) and d["edges"].pop(), None, "no end node"),
        (lambda d: d["nodes"][1].update(id="start"), "start", "duplicate"),
        (lambda d: d["edges"][1].update(port="yes"), "clean", "no port 'yes'"),
        (lambda d: d["nodes"][1]["error"].update(retry=99), "clean", "retry"),
        (lambda d: d["nodes"][2].update(type="teleport"), "summarize", "unknown node type"),
        (lambda d: d["nodes"][3]["config"].update(choices=[]), "approve", "choices"),
    ],
)
def test_invalid_definitions_name_the_node(change, node, words) -> None:
    with pytest.raises(WorkflowDefinitionError) as err:
        cl.Workflow.from_json(_mutated(change))
    assert words in str(err.value)
    if node:
        assert err.value.node_id == node


def test_errors_surface_at_definition_time() -> None:
    wf = cl.Workflow("typed")

    @wf.start
    def start(count: int):
        """A count."""

    wf.text("label", template="n={{start.count}}")
    with pytest.raises(WorkflowDefinitionError, match="expects integer") as err:

        @wf.code(inputs={"n": "{{label.output}}"})
        def double(n: int) -> dict:
            return {"n": n * 2}

    assert err.value.node_id == "double"
    assert [n.id for n in wf.spec().nodes] == ["start", "label"]  # the bad node was not kept
    with pytest.raises(WorkflowDefinitionError, match="matches no workflow input"):

        @wf.code
        def lonely(missing: str) -> dict:
            return {}

    with pytest.raises(WorkflowDefinitionError, match="no end node"):
        wf.to_json()


def test_a_displayed_workflow_is_a_graph_picture() -> None:
    picture = DOC_REVIEW._repr_markdown_()
    assert picture.startswith("```mermaid\nflowchart TD")
    assert "n_start --> n_clean" in picture and "n_approve --> n_end" in picture
    coloured = mermaid(DOC_REVIEW.spec(), {"clean": "succeeded", "approve": "interrupted"})
    assert "style n_clean fill:#d4f7dc" in coloured
