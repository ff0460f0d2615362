"""Retrying a failed run from its failed node: upstream outputs are reused, not recomputed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from coze_lab.core.errors import Conflict, InvalidParameter, NotFound
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.testing import ModelServer
from tests.core.workflows.examples import FRAGILE, REVIEW, parse_fixed


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelServer]:
    with ModelServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("COZE_LAB_DEFAULT_MODEL", "coze-lab-demo")
        yield server


def test_a_failed_run_retried_with_fixed_code_calls_no_model_again(
    host: InProcessHost, model_server: ModelServer
) -> None:
    model_server.script(["Two short words."])
    run = host.run(FRAGILE.validate(), {"doc": "a long document"})
    assert run.status == "failed" and run.error["node_id"] == "parse"
    assert len(model_server.requests) == 1

    retried = run.retry(code=parse_fixed)  # from the node it failed on
    assert retried.status == "succeeded", retried.error
    assert retried.retry_of == run.id and retried.id != run.id
    assert retried.outputs == {
        "words": 3,
        "chars": len("Two short words."),
        "summary": "Two short words.",
    }
    assert len(model_server.requests) == 1  # the LLM node before it was not called again
    for node in ("given", "summarize", "measure"):  # the old records, as they were
        assert retried.nodes[node] == run.nodes[node]
    assert retried.nodes["parse"].attempts == 1
    spec = host.runtime.runs.get(run.info.owner_id, retried.id).definition
    parse = next(n for n in spec["nodes"] if n["id"] == "parse")
    assert parse["config"]["entry"] == "parse_fixed"
    # the old run is untouched
    assert host.runtime.runs.get(run.info.owner_id, run.id).status == "failed"


def test_retry_from_an_upstream_node_reruns_it_and_what_follows(
    host: InProcessHost, model_server: ModelServer
) -> None:
    model_server.script(["no number"])
    failed = host.run(FRAGILE.validate(), {"doc": "y"})
    assert failed.status == "failed"
    # retrying from the model node calls the model again (and only it)
    model_server.script(["12"])
    again = failed.retry(from_node="summarize")
    assert again.status == "succeeded", again.error
    assert again.outputs["words"] == 12
    assert len(model_server.requests) == 2
    assert again.nodes["given"] == failed.nodes["given"]


def test_retry_refusals(host: InProcessHost, model_server: ModelServer) -> None:
    runs, owner = host.runtime.runs, host.user.id
    model_server.script(["words"])
    failed = host.run(FRAGILE.validate(), {"doc": "x"})
    assert failed.status == "failed"
    other = host.runtime.identity.ensure_user("mallory")
    with pytest.raises(NotFound):
        host.call(runs.retry(other.id, failed.id))
    with pytest.raises(InvalidParameter, match="'nope' is not in run"):
        host.call(runs.retry(owner, failed.id, from_node="nope"))
    with pytest.raises(InvalidParameter, match="only the retried node"):
        host.call(
            runs.retry(owner, failed.id, from_node="parse", node_changes={"measure": {"code": ""}})
        )
    waiting = host.run(REVIEW.validate(), {"doc": "a b"})
    assert waiting.status == "interrupted"
    with pytest.raises(Conflict, match="is interrupted: only a failed or canceled run"):
        host.call(runs.retry(owner, waiting.id))
    done = waiting.resume(waiting.pending[0].event_id, "yes")
    assert done.status == "succeeded"
    with pytest.raises(Conflict, match="is succeeded"):
        host.call(runs.retry(owner, done.id))
    # a canceled run: what finished is reused, the rest runs (the question is asked again)
    canceled = host.run(REVIEW.validate(), {"doc": "c d"})
    assert host.call(runs.cancel(owner, canceled.id)) is True
    again = host.call(runs.retry(owner, canceled.id))
    info = host.call(runs.wait(again))
    assert info.status == "interrupted" and info.retry_of == canceled.id
    assert info.nodes["tidy"] == host.runtime.runs.get(owner, canceled.id).nodes["tidy"]
