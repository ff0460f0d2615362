"""Pyodide packages in code nodes, end to end: ``coze-lab serve`` configured with
``COZE_LAB_SANDBOX_PACKAGE_INDEX_URL`` (a real package index on loopback serving small
wheels listed in its ``pyodide-lock.json``), a published workflow whose code node imports
a package, run through cozepy. The pool-level details (cache, read-only files, owners) are
in ``tests/core/sandbox/test_packages.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cozepy import Coze, CozeAPIError, TokenAuth

import coze_lab as cl
from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from tests.conftest import SANDBOX_CACHE
from tests.core.sandbox.test_packages import Index, index  # noqa: F401  (the index fixture)
from tests.support import ServerProcess

# ---- workflows whose code nodes import packages (module level: inspect reads the source) ----
uses_package = cl.Workflow("uses_package")


@uses_package.start
def begin(n: int):
    """A number."""


@uses_package.code
def use(n: int) -> dict:
    import cozepkg

    return {"tag": cozepkg.tag(), "n": n}


uses_package.end(tag="{{use.tag}}", n="{{use.n}}")

uses_tampered = cl.Workflow("uses_tampered")


@uses_tampered.start
def begin_tampered(n: int):
    """A number."""


@uses_tampered.code
def use_tampered(n: int) -> dict:
    import cozeevil

    return {"x": cozeevil.X}


uses_tampered.end(x="{{use_tampered.x}}")

uses_pandas = cl.Workflow("uses_pandas")


@uses_pandas.start
def begin_pandas(n: int):
    """A number."""


@uses_pandas.code
def frame(n: int) -> dict:
    import pandas as pd

    return {"rows": len(pd.DataFrame({"n": [n]}))}


uses_pandas.end(rows="{{frame.rows}}")


class Lab:
    def __init__(self, server: ServerProcess, token: str, ids: dict[str, str]) -> None:
        self.server, self.token, self.ids = server, token, ids

    def run(self, name: str) -> dict:
        coze = Coze(auth=TokenAuth(self.token), base_url=self.server.url)
        result = coze.workflows.runs.create(workflow_id=self.ids[name], parameters={"n": 3})
        return json.loads(result.data)


def start_lab(tmp_path: Path, db_url: str, index_url: str) -> tuple[ServerProcess, Lab]:
    data_dir = tmp_path / "server-data"
    admin = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    admin.start()
    alice = admin.identity.ensure_user("alice")
    ids = {}
    for workflow in (uses_package, uses_tampered, uses_pandas):
        info = admin.workflows.save(alice.id, workflow.validate().to_dict())
        admin.workflows.publish(alice.id, info.id)
        ids[workflow.name] = str(info.id)
    token = admin.tokens.create(alice.id, "t")[1]
    admin.db.dispose()
    env = {
        "COZE_LAB_SANDBOX_CACHE_DIR": str(SANDBOX_CACHE),
        "COZE_LAB_SANDBOX_POOL_SIZE": "1",
        "COZE_LAB_SANDBOX_PACKAGE_INDEX_URL": index_url,
        "COZE_LAB_SANDBOX_PACKAGES": "numpy,pandas,cozepkg,cozeevil",
    }
    server = ServerProcess(data_dir, db_url, env=env).start()
    return server, Lab(server, token, ids)


@pytest.fixture
def lab(tmp_path: Path, db_url: str, index: Index) -> Iterator[Lab]:  # noqa: F811
    server, lab = start_lab(tmp_path, db_url, index.url)
    yield lab
    server.stop()


def test_a_code_node_imports_a_package_the_server_fetched_and_verified(
    lab: Lab,
    index: Index,  # noqa: F811
) -> None:
    assert lab.run("uses_package") == {"tag": index.tag, "n": 3}  # type: ignore[attr-defined]
    # the host fetched the lock and both wheels (the dependency first) from the index
    # (the index fixture is shared by the database parameters: later ones hit the cache)
    assert "pyodide/pyodide-lock.json" in index.hits
    assert "pyodide/cozedep-1.0-py3-none-any.whl" in index.hits
    assert "pyodide/cozepkg-1.0-py3-none-any.whl" in index.hits
    # a package whose bytes do not match the lock's sha256 is refused, naming why
    with pytest.raises(CozeAPIError) as err:
        lab.run("uses_tampered")
    message = err.value.msg or ""
    assert "cozeevil was refused" in message
    assert "does not match the sha256 in pyodide-lock.json" in message


def test_offline_pandas_names_the_setting_to_change(tmp_path: Path, db_url: str) -> None:
    server, lab = start_lab(tmp_path, db_url, "http://127.0.0.1:9/pyodide/")
    try:
        with pytest.raises(CozeAPIError) as err:
            lab.run("uses_pandas")
    finally:
        server.stop()
    message = err.value.msg or ""
    assert "pandas is not available: no Pyodide package index is reachable" in message
    assert "Set sandbox_package_index_url to a Pyodide package index or a local mirror" in message
