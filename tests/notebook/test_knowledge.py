"""``cl.Knowledge`` over the studio API of a real (in-process) server: add a PDF and text,
search into a DataFrame, a bad file raises with its reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import coze_lab as cl
from coze_lab.notebook.http import StudioError
from coze_lab.notebook.in_process import InProcessHost
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer
from coze_lab.testing.documents import pdf_bytes


@pytest.fixture
def host(model_env: ModelServer, runtime: Runtime) -> Iterator[InProcessHost]:
    local = InProcessHost(runtime, "alice")
    yield local
    local.close()


def test_add_and_search_from_a_notebook(host: InProcessHost, tmp_path: Path) -> None:
    report = tmp_path / "report.pdf"
    report.write_bytes(pdf_bytes(["Revenue in 2026 was 41 million euros.", "Costs fell."]))
    docs = cl.Knowledge("docs", studio=host.studio)
    added = docs.add(report)
    assert added["status_name"] == "done" and added["slice_count"] == 1
    docs.add("Our office dog is called Biscuit.", name="dog.md", file_type="md")
    again = cl.Knowledge("docs", studio=host.studio)  # found by name, not made twice
    assert again.id == docs.id
    found = again.search("What was the revenue?", top_k=2)
    assert list(found.columns[:3]) == ["score", "document_name", "content"]
    assert found.iloc[0]["document_name"] == "report.pdf"
    assert "41 million" in found.iloc[0]["content"]
    with pytest.raises(StudioError, match="the pdf file cannot be read"):
        docs.add(b"%PDF-1.7 broken", name="broken.pdf")
    assert [d["status_name"] for d in docs.documents()] == ["done", "done", "failed"]
