"""``coze-lab`` as a subprocess: the token is the last stdout line, errors exit non-zero."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.store.migrate import head_revision
from tests.core.workflows.examples import REVIEW
from tests.support import ServerProcess, run_cli


@pytest.fixture
def cli_args(tmp_path: Path, db_url: str) -> list[str]:
    return ["--data-dir", str(tmp_path / "cli-data"), "--database-url", db_url]


def runtime_for(tmp_path: Path, db_url: str) -> Runtime:
    return Runtime(CozeLab(data_dir=str(tmp_path / "cli-data"), database_url=db_url))


def test_db_upgrade_and_current(cli_args) -> None:
    assert run_cli(*cli_args, "db", "current").stdout.strip() == "none"
    upgraded = run_cli(*cli_args, "db", "upgrade")
    assert upgraded.returncode == 0 and upgraded.stdout.strip() == head_revision()
    assert run_cli(*cli_args, "db", "current").stdout.strip() == head_revision()


def test_global_options_work_after_the_sub_command_too(cli_args) -> None:
    # `coze-lab db current --data-dir X --database-url U`, as people type it
    after = run_cli("db", "current", *cli_args)
    assert after.returncode == 0, after.stderr
    assert after.stdout.strip() == "none"  # the given database (a fresh one), not the default
    run_cli(*cli_args, "db", "upgrade")
    assert run_cli("db", "current", *cli_args).stdout.strip() == head_revision()
    # before the sub-command as well, and nothing given after it overrides that
    assert run_cli(*cli_args, "db", "current").stdout.strip() == head_revision()


def test_pat_create_prints_the_token_last(cli_args, tmp_path, db_url) -> None:
    result = run_cli(
        *cli_args,
        "pat",
        "create",
        "--user",
        "alice",
        "--name",
        "ci",
        "--expires-in-days",
        "30",
        "--scope",
        "files",
        "--scope",
        "chat",
    )
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip().splitlines()[-1]
    assert token.startswith("pat_") and len(token) == 47
    assert token not in result.stderr
    runtime = runtime_for(tmp_path, db_url)
    principal = runtime.tokens.authenticate(token)
    assert principal.scopes == frozenset({"chat", "files"})
    assert runtime.identity.get_user(principal.user_id).name == "alice"
    runtime.db.dispose()


def test_pat_list_and_revoke(cli_args, tmp_path, db_url) -> None:
    token = run_cli(*cli_args, "pat", "create", "--user", "alice", "--name", "laptop").stdout
    token = token.strip().splitlines()[-1]
    runtime = runtime_for(tmp_path, db_url)
    token_id = str(runtime.tokens.authenticate(token).token_id)
    listing = run_cli(*cli_args, "pat", "list", "--user", "alice")
    assert token_id in listing.stdout and "laptop" in listing.stdout and "active" in listing.stdout
    assert token[4:] not in listing.stdout
    assert run_cli(*cli_args, "pat", "revoke", "--user", "bob", token_id).returncode == 2
    assert run_cli(*cli_args, "pat", "revoke", "--user", "alice", token_id).returncode == 0
    assert "revoked" in run_cli(*cli_args, "pat", "list", "--user", "alice").stdout
    runtime.db.dispose()


@pytest.mark.parametrize(
    "argv",
    [
        ["pat", "create", "--user", "alice", "--name", "x", "--expires-in-days", "0"],
        ["pat", "create", "--user", "alice", "--name", "x", "--scope", "admin"],
        ["pat", "create", "--user", "alice"],
        ["pat", "revoke", "--user", "alice", "abc"],
        ["nonsense"],
    ],
)
def test_bad_arguments_fail_clearly(cli_args, argv) -> None:
    result = run_cli(*cli_args, *argv)
    assert result.returncode != 0
    assert result.stderr.strip()
    assert "Traceback" not in result.stderr


def test_a_bare_command_prints_the_help() -> None:
    result = run_cli()
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: coze-lab") and "serve" in result.stdout


def test_global_options_after_the_sub_command(tmp_path: Path, db_url: str) -> None:
    data_dir = tmp_path / "after"
    options = ["--data-dir", str(data_dir), "--database-url", db_url]
    created = run_cli("pat", "create", "--user", "alice", "--name", "x", *options)
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip().splitlines()[-1]
    # given before the sub-command, they are not reset by it
    listed = run_cli(
        "--data-dir", str(data_dir), "--database-url", db_url, "pat", "list", "--user", "alice"
    )
    assert "active" in listed.stdout, listed.stderr
    server = ServerProcess(data_dir, db_url, options_after_command=True).start()
    try:
        me = httpx.get(
            f"{server.url}/coze_lab/api/me", headers={"Authorization": f"Bearer {token}"}
        )
        assert me.status_code == 200 and me.json()["data"]["name"] == "alice", me.text
    finally:
        server.stop()


def test_lists_default_to_the_local_user(cli_args, tmp_path: Path, db_url: str) -> None:
    runtime = runtime_for(tmp_path, db_url)
    runtime.start()
    carol, dave = (runtime.identity.ensure_user(name) for name in ("carol", "dave"))
    runtime.tokens.create(carol.id, "carols")
    runtime.tokens.create(dave.id, "daves")
    runtime.workflows.save(carol.id, REVIEW.validate().to_dict())
    runtime.db.dispose()
    env = {"COZE_LAB_LOCAL_USER": "carol"}
    listed = run_cli(*cli_args, "pat", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "carols" in listed.stdout and "daves" not in listed.stdout
    workflows = run_cli(*cli_args, "workflow", "list", env=env)
    assert workflows.returncode == 0, workflows.stderr
    assert "review_no_model" in workflows.stdout
    assert "review_no_model" not in run_cli(*cli_args, "workflow", "list", "--user", "dave").stdout


def test_workflow_import_of_a_deeply_nested_file_is_a_clear_error(cli_args, tmp_path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"name": "deep", "nodes": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = run_cli(*cli_args, "workflow", "import", str(path), "--user", "alice")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "RecursionError" not in result.stderr
    assert f"{path} is nested deeper than 100 levels" in result.stderr
    missing = run_cli(*cli_args, "workflow", "import", str(tmp_path / "nope.json"), "--user", "a")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
