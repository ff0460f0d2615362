"""The demo notebooks that use ``cl.connect()``, executed by nbclient against a running
Jupyter server (found with no configuration, through the shared runtime dir) and the
offline demo model, in order, top to bottom."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from coze_lab.testing import ModelServer
from tests.conftest import SANDBOX_CACHE
from tests.notebooks.test_notebooks import ALL_NOTEBOOKS, NOTEBOOKS
from tests.web.test_sidebar_browser import Lab, free_port, wait_until_ready

SERVER_NOTEBOOKS = [p for p in ALL_NOTEBOOKS if p not in NOTEBOOKS]


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    tmp = tmp_path_factory.mktemp("nb-server")
    (tmp / "root").mkdir()
    with ModelServer() as model:
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(tmp / "jupyter-config"),
            "JUPYTER_DATA_DIR": str(tmp / "jupyter-data"),
            "JUPYTER_RUNTIME_DIR": str(tmp / "jupyter-runtime"),
            "COZE_LAB_DATA_DIR": str(tmp / "data"),
            "COZE_LAB_SANDBOX_CACHE_DIR": str(SANDBOX_CACHE),
            "COZE_LAB_SANDBOX_POOL_SIZE": "1",
            "OPENAI_BASE_URL": model.url,
            "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
        }
        for name in ("COZE_LAB_DATABASE_URL", "OPENAI_API_KEY", "COZE_LAB_URL", "COZE_LAB_TOKEN"):
            env.pop(name, None)
        token = secrets.token_hex(16)
        port = free_port()
        log_path = tmp / "server.log"
        command = [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--ServerApp.port_retries=0",
            "--ServerApp.allow_root=True",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={tmp / 'root'}",
        ]
        with log_path.open("wb") as log:
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        lab = Lab(proc, f"http://127.0.0.1:{port}/", token, "", log_path)
        try:
            wait_until_ready(lab)
            env["_SERVER_LOG"] = str(log_path)
            yield env
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


@pytest.mark.parametrize("path", SERVER_NOTEBOOKS, ids=lambda p: p.name)
def test_server_notebook_runs(path: Path, tmp_path: Path, environment: dict[str, str]) -> None:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=180,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    env = {k: v for k, v in environment.items() if not k.startswith("_")}
    try:
        client.execute(env=env)
    except Exception:
        print(Path(environment["_SERVER_LOG"]).read_text(errors="replace")[-4000:])
        raise
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    # outputs are saved with the notebook (often into git): never a usable token in them
    shown = nbformat.writes(notebook)
    assert not re.search(r"pat_[A-Za-z0-9_-]{20,}", shown), "a live token in the outputs"


def test_the_notebooks_teach_in_order() -> None:
    names = [p.name for p in ALL_NOTEBOOKS]
    assert names[:4] == [
        "00_welcome.ipynb",
        "01_workflow_with_a_question.ipynb",
        "02_bot_with_a_workflow_tool.ipynb",
        "03_publish_and_call_with_cozepy.ipynb",
    ]
