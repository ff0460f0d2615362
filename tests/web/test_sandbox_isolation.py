"""Issue 11, finding 1, through the real server: users' workflow code nodes.

Eve's workflow patches ``json.decoder.JSONDecoder.decode`` and ``JSONEncoder.encode`` and
hooks ``MessagePort.prototype.postMessage``; victor's workflow hands his API key to a code
node; eve's second workflow asks her patches what they saw. One sandbox process serves both
users (``sandbox_pool_size=1``), as in the review. Then each of the six attributes of the
finding on its own: between two users, and within one user (the patch is detected and the
interpreter replaced before that user's next run).
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


Workflows = dict[str, list[tuple[str, str, list[str]]]]


def publish(
    process: ServerProcess, data_dir: Path, db_url: str, specs: Workflows
) -> tuple[dict[str, int], dict[str, Coze]]:
    """Each user's workflows saved and published; the ids by name, a cozepy client per user."""
    admin = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    ids: dict[str, int] = {}
    clients: dict[str, Coze] = {}
    for user, workflows in specs.items():
        info = admin.identity.ensure_user(user)
        for name, code, inputs in workflows:
            saved = admin.workflows.save(info.id, code_workflow(name, code, inputs))
            admin.workflows.publish(info.id, saved.id)
            ids[name] = saved.id
        args = ["--data-dir", str(data_dir), "--database-url", db_url]
        out = run_cli(*args, "pat", "create", "--user", user, "--name", "t")
        assert out.returncode == 0, out.stderr
        token = out.stdout.strip().splitlines()[-1]
        clients[user] = Coze(auth=TokenAuth(token), base_url=process.url)
    admin.db.dispose()
    return ids, clients


def run_workflow(coze: Coze, workflow_id: int, params: dict[str, str]) -> Any:
    result = coze.workflows.runs.create(workflow_id=str(workflow_id), parameters=params)
    return json.loads(result.data)["r"]


def test_finding_11_1_through_the_server_eve_cannot_see_or_alter_victors_run(
    server: tuple[ServerProcess, Path], db_url: str
) -> None:
    process, data_dir = server
    install_py, peek_py = ATTACKS["json.decoder.JSONDecoder.decode"]
    install_js, peek_js = ATTACKS["MessagePort.prototype.postMessage"]
    specs: Workflows = {
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
    ids, users = publish(process, data_dir, db_url, specs)
    assert run_workflow(users["eve"], ids["patch"], {}) == {}
    for _ in range(2):
        mine = run_workflow(users["victor"], ids["call_api"], {"key": KEY})
        assert mine == {"api": "sk-", "n": len(KEY)}
    for name in ("peek_py", "peek_js"):
        seen = run_workflow(users["eve"], ids[name], {})
        assert "sk-victor" not in json.dumps(seen), seen


def test_finding_11_1_through_the_server_none_of_the_six_patches_reaches_another_user(
    server: tuple[ServerProcess, Path], db_url: str
) -> None:
    process, data_dir = server
    attacks = list(ATTACKS.items())
    specs: Workflows = {
        "eve": [(f"patch_{i}", wrap(install), []) for i, (_, (install, _)) in enumerate(attacks)]
        + [(f"peek_{i}", wrap(peek), []) for i, (_, (_, peek)) in enumerate(attacks)],
        "victor": [("call_api", VICTOR_CODE, ["key"])],
    }
    ids, users = publish(process, data_dir, db_url, specs)
    for i, (attribute, _) in enumerate(attacks):
        assert run_workflow(users["eve"], ids[f"patch_{i}"], {}) == {}, attribute
        for _ in range(2):
            mine = run_workflow(users["victor"], ids["call_api"], {"key": KEY})
            assert mine == {"api": "sk-", "n": len(KEY)}, attribute  # not replaced
        seen = run_workflow(users["eve"], ids[f"peek_{i}"], {})
        assert "sk-victor" not in json.dumps(seen), (attribute, seen)


def test_finding_11_1_within_one_user_through_the_server_a_patch_is_detected_and_replaced(
    server: tuple[ServerProcess, Path], db_url: str
) -> None:
    """Mallory patches, runs her own code with her key, then asks the patch: each time her
    next run finds a fresh interpreter (the patch is gone), so it saw and changed nothing."""
    process, data_dir = server
    attacks = list(ATTACKS.items())
    specs: Workflows = {
        "mallory": [
            (f"patch_{i}", wrap(install), []) for i, (_, (install, _)) in enumerate(attacks)
        ]
        + [(f"peek_{i}", wrap(peek), []) for i, (_, (_, peek)) in enumerate(attacks)]
        + [("call_api", VICTOR_CODE, ["key"])],
    }
    ids, users = publish(process, data_dir, db_url, specs)
    mallory = users["mallory"]
    assert run_workflow(mallory, ids["call_api"], {"key": KEY}) == {"api": "sk-", "n": len(KEY)}
    for i, (attribute, _) in enumerate(attacks):
        assert run_workflow(mallory, ids[f"patch_{i}"], {}) == {}, attribute
        mine = run_workflow(mallory, ids["call_api"], {"key": KEY})
        assert mine == {"api": "sk-", "n": len(KEY)}, attribute  # not replaced
        assert run_workflow(mallory, ids[f"peek_{i}"], {}) == {"seen": "None"}, attribute
    # her warm runs go on after the last replacement
    for _ in range(3):
        assert run_workflow(mallory, ids["call_api"], {"key": KEY}) == {"api": "sk-", "n": 20}


# state a run leaves where the checks do not look (a cache inside a module): it stays with
# the interpreter, so it shows which runs share one
STASH = (
    "import re\n"
    "def main(args):\n"
    "    re._cache[('note', 0, 0)] = args.params['v']\n"
    "    return {'out': {}}\n"
)
PEEK = "import re\ndef main(args):\n    return {'out': {'v': re._cache.get(('note', 0, 0))}}\n"


def test_a_teammates_workflow_runs_apart_from_the_runners_own_workflows(
    server: tuple[ServerProcess, Path], db_url: str
) -> None:
    """Code a teammate wrote (eve's workflow in a team space) runs in victor's interpreter
    for that space, never in the one of victor's own workflows: what it leaves behind in
    a place the checks do not see cannot reach his personal runs."""
    process, data_dir = server
    admin = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    eve, victor = admin.identity.ensure_user("eve"), admin.identity.ensure_user("victor")
    team = admin.spaces.create(eve.id, "team")
    admin.spaces.add_member(eve.id, team.id, "victor", "member")
    ids: dict[str, int] = {}
    for name, code, inputs, owner, space in (
        ("stash", STASH, ["v"], eve, team.id),
        ("team_peek", PEEK, [], eve, team.id),
        ("my_peek", PEEK, [], victor, None),
    ):
        saved = admin.workflows.save(owner.id, code_workflow(name, code, inputs), space_id=space)
        admin.workflows.publish(owner.id, saved.id)
        ids[name] = saved.id
    args = ["--data-dir", str(data_dir), "--database-url", db_url]
    out = run_cli(*args, "pat", "create", "--user", "victor", "--name", "t")
    assert out.returncode == 0, out.stderr
    admin.db.dispose()
    coze = Coze(auth=TokenAuth(out.stdout.strip().splitlines()[-1]), base_url=process.url)
    assert run_workflow(coze, ids["my_peek"], {}) == {"v": None}  # his interpreter is warm
    assert run_workflow(coze, ids["stash"], {"v": "from eve's code"}) == {}
    assert run_workflow(coze, ids["my_peek"], {}) == {"v": None}  # not in his own runs
    # the control: the note is there for the space's workflows (it is the same interpreter)
    assert run_workflow(coze, ids["team_peek"], {}) == {"v": "from eve's code"}
