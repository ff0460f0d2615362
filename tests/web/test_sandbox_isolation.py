"""Issue 11, finding 1, through the real server: two users' workflow code nodes.

Eve's workflow patches ``json.decoder.JSONDecoder.decode`` and ``JSONEncoder.encode`` and
hooks ``MessagePort.prototype.postMessage``; victor's workflow hands his API key to a code
node; eve's second workflow asks her patches what they saw. One sandbox process serves both
users (``sandbox_pool_size=1``), as in the review.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cozepy import Coze, TokenAuth

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from tests.conftest import SANDBOX_CACHE
from tests.core.sandbox.test_owners import ATTACKS, KEY
from tests.support import ServerProcess, run_cli


def code_workflow(name: str, code: str, inputs: list[str]) -> dict[str, Any]:
    """start(inputs) -> one code node (main(args)) -> end(r = the node's output)."""
    node = {"retry": 0, "timeout": None, "on_error": "fail", "default_output": None}
    return {
        "schema_version": 1,
        "name": name,
        "description": "",
        "inputs": [
            {"name": i, "type": "string", "required": True, "default": None, "description": ""}
            for i in inputs
        ],
        "nodes": [
            {
                "id": "begin",
                "type": "start",
                "title": "begin",
                "inputs": {},
                "outputs": dict.fromkeys(inputs, "string"),
                "config": {},
                "error": node,
            },
            {
                "id": "node",
                "type": "code",
                "title": "node",
                "inputs": {i: "{{begin." + i + "}}" for i in inputs},
                "outputs": {"out": "any"},
                "config": {
                    "language": "python",
                    "code": code,
                    "entry": None,
                    "params": dict.fromkeys(inputs, "string"),
                },
                "error": node,
            },
            {
                "id": "end",
                "type": "end",
                "title": "end",
                "inputs": {"r": "{{node.out}}"},
                "outputs": {"r": "any"},
                "config": {},
                "error": node,
            },
        ],
        "edges": [
            {"source": "begin", "target": "node", "port": None},
            {"source": "node", "target": "end", "port": None},
        ],
    }


def wrap(code: str) -> str:
    """The attack's main(args) returns its result under 'out' (what the end node reads)."""
    return code.replace("def main(args):", "def _main(args):") + (
        "\ndef main(args):\n    return {'out': _main(args)}\n"
    )


VICTOR_CODE = (
    "def main(args):\n"
    "    print('calling the API with', args.params['key'])\n"
    "    return {'out': {'api': args.params['key'][:3], 'n': len(args.params['key'])}}\n"
)


@pytest.fixture
def server(tmp_path: Path, db_url: str) -> Iterator[tuple[ServerProcess, Path]]:
    data_dir = tmp_path / "data"
    env = {"COZE_LAB_SANDBOX_CACHE_DIR": str(SANDBOX_CACHE), "COZE_LAB_SANDBOX_POOL_SIZE": "1"}
    process = ServerProcess(data_dir, db_url, env=env).start()
    yield process, data_dir
    process.stop()


def test_finding_11_1_through_the_server_eve_cannot_see_or_alter_victors_run(
    server: tuple[ServerProcess, Path], db_url: str
) -> None:
    process, data_dir = server
    admin = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    install_py, peek_py = ATTACKS["json.decoder.JSONDecoder.decode"]
    install_js, peek_js = ATTACKS["MessagePort.prototype.postMessage"]
    specs = {
        "eve": [
            (
                "patch",
                wrap(
                    install_py + "\n" + install_js.replace("def main(args):\n    return {}\n", "")
                ),
                [],
            ),
            ("peek_py", wrap(peek_py), []),
            ("peek_js", wrap(peek_js), []),
        ],
        "victor": [("call_api", VICTOR_CODE, ["key"])],
    }
    ids: dict[str, int] = {}
    tokens: dict[str, str] = {}
    for user, workflows in specs.items():
        info = admin.identity.ensure_user(user)
        for name, code, inputs in workflows:
            saved = admin.workflows.save(info.id, code_workflow(name, code, inputs))
            admin.workflows.publish(info.id, saved.id)
            ids[name] = saved.id
        args = ["--data-dir", str(data_dir), "--database-url", db_url]
        out = run_cli(*args, "pat", "create", "--user", user, "--name", "t")
        assert out.returncode == 0, out.stderr
        tokens[user] = out.stdout.strip().splitlines()[-1]
    admin.db.dispose()
    eve = Coze(auth=TokenAuth(tokens["eve"]), base_url=process.url)
    victor = Coze(auth=TokenAuth(tokens["victor"]), base_url=process.url)

    def run(coze: Coze, name: str, params: dict[str, str]) -> Any:
        result = coze.workflows.runs.create(workflow_id=str(ids[name]), parameters=params)
        return json.loads(result.data)["r"]

    assert run(eve, "patch", {}) == {}
    for _ in range(2):
        assert run(victor, "call_api", {"key": KEY}) == {"api": "sk-", "n": len(KEY)}
    for name in ("peek_py", "peek_js"):
        seen = run(eve, name, {})
        assert "sk-victor" not in json.dumps(seen), seen
