"""The demo notebooks run top to bottom."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from coze_lab.testing import ModelServer
from tests.conftest import SANDBOX_CACHE
from tests.support import ROOT

ALL_NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: notebooks that talk to a running server (``cl.connect()``) run in test_server_notebooks.py
NOTEBOOKS = [
    p
    for p in ALL_NOTEBOOKS
    if not nbformat.read(p, as_version=4).metadata.get("coze_lab", {}).get("needs_server")
]


@pytest.fixture
def demo_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelServer]:
    """What ``make lab`` provides when no model is configured: the offline demo model."""
    with ModelServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("COZE_LAB_DEFAULT_MODEL", "coze-lab-demo")
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        yield server


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, demo_model: ModelServer
) -> None:
    monkeypatch.setenv("COZE_LAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COZE_LAB_SANDBOX_CACHE_DIR", str(SANDBOX_CACHE))
    monkeypatch.setenv("COZE_LAB_SANDBOX_POOL_SIZE", "1")
    monkeypatch.delenv("COZE_LAB_DATABASE_URL", raising=False)
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook,
        timeout=180,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute(env=dict(os.environ))
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert (tmp_path / "data" / "coze_lab.db").exists()


def test_there_are_demo_notebooks() -> None:
    assert NOTEBOOKS
