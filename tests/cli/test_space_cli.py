"""``coze-lab space``: team spaces from the shell (in-process: the parser and the commands)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coze_lab.cli import main


def test_create_add_list_and_remove(
    tmp_path: Path, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--data-dir", str(tmp_path / "data"), "--database-url", db_url]
    assert main([*base, "space", "create", "--user", "alice", "data-team"]) == 0
    space_id = capsys.readouterr().out.split()[-1]
    assert main([*base, "space", "add-member", "--user", "alice", "data-team", "bob"]) == 0
    assert "bob is now member of 'data-team'" in capsys.readouterr().out
    assert main([*base, "space", "list", "--user", "bob"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert any(r.split()[:3] == [space_id, "team", "member"] for r in rows), rows
    # bob is a member: he cannot add anyone (exit 2, Coze's code in the message)
    assert main([*base, "space", "add-member", "--user", "bob", space_id, "carol"]) == 2
    assert "error 4101" in capsys.readouterr().err
    assert main([*base, "space", "remove-member", "--user", "alice", "data-team", "bob"]) == 0
    capsys.readouterr()
    assert main([*base, "space", "list", "--user", "bob"]) == 0
    assert space_id not in capsys.readouterr().out
