"""Session workspaces on a real file system: logical paths never lead out of the session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coze_lab.core.errors import InvalidParameter, NotFound
from coze_lab.core.workspace import SessionWorkspace, WorkspaceRoot


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("not yours")
    return secret


@pytest.fixture
def ws(tmp_path: Path) -> SessionWorkspace:
    return WorkspaceRoot(tmp_path / "coze_workspaces").session(11, 22)


def files_under(path: Path) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))


def test_a_session_has_input_scratchpad_and_output(tmp_path: Path, ws: SessionWorkspace) -> None:
    assert ws.root == tmp_path / "coze_workspaces" / "11" / "22"
    assert files_under(ws.root) == ["input", "output", "scratchpad"]
    ws.write("output/report/summary.md", b"# Done\n")
    ws.write("scratchpad/step1.txt", b"x")
    assert ws.read("output/report/summary.md") == b"# Done\n"
    assert (ws.root / "output" / "report" / "summary.md").read_bytes() == b"# Done\n"
    source = tmp_path / "upload"
    source.write_bytes(b"a,b\n1,2\n")
    ws.add_input("sales.csv", source)
    assert ws.read("input/sales.csv") == b"a,b\n1,2\n"
    source.write_bytes(b"a,b\n3,4\n")
    ws.add_input("sales.csv", source)  # a newer upload replaces the older one
    assert ws.read("input/sales.csv") == b"a,b\n3,4\n"
    assert ".sales.csv.coze-tmp" not in os.listdir(ws.root / "input")
    with pytest.raises(NotFound):
        ws.read("output/missing.txt")


@pytest.mark.parametrize(
    ("logical", "message"),
    [
        ("../22/input/x", "leaves the session workspace"),
        ("input/../../21/input/x", "leaves the session workspace"),
        ("output/./x", "leaves the session workspace"),
        ("/etc/passwd", "is absolute"),
        ("C:/Windows/win.ini", "is absolute"),
        ("output\\..\\..\\x", "backslashes"),
        ("output/a\x00b", "control characters"),
        ("output/a\nb", "control characters"),
        ("output//x", "empty or too long part"),
        ("secrets/x", "must be a file under input/, scratchpad/, output/"),
        ("output", "must be a file under"),
        ("", "missing"),
    ],
)
def test_paths_that_leave_the_session_are_refused(
    ws: SessionWorkspace, logical: str, message: str
) -> None:
    with pytest.raises(InvalidParameter) as err:
        ws.resolve(logical)
    assert message in err.value.msg
    with pytest.raises(InvalidParameter):
        ws.write(logical, b"x")


def test_symlinks_are_never_followed(tmp_path: Path, ws: SessionWorkspace, outside: Path) -> None:
    (ws.root / "output" / "link.txt").symlink_to(outside)
    (ws.root / "output" / "out").symlink_to(outside.parent, target_is_directory=True)
    for logical in ("output/link.txt", "output/out/secret.txt", "output/out/new.txt"):
        with pytest.raises(InvalidParameter) as err:
            ws.read(logical) if logical != "output/out/new.txt" else ws.write(logical, b"x")
        assert "symlink" in err.value.msg
    with pytest.raises(InvalidParameter):
        ws.write("output/link.txt", b"overwritten")
    assert outside.read_text() == "not yours"
    assert sorted(os.listdir(outside.parent)) == ["secret.txt"]
    # a session folder replaced by a symlink to somewhere else is refused too
    victim = WorkspaceRoot(tmp_path / "coze_workspaces").session(11, 23)
    (victim.root / "scratchpad").rmdir()
    (victim.root / "scratchpad").symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(InvalidParameter) as err:
        victim.write("scratchpad/new.txt", b"x")
    assert "symlink" in err.value.msg
    with pytest.raises(InvalidParameter):
        WorkspaceRoot(tmp_path / "coze_workspaces").session(11, 23)
    assert sorted(os.listdir(outside.parent)) == ["secret.txt"]


def test_hard_links_to_outside_files_are_refused(ws: SessionWorkspace, outside: Path) -> None:
    os.link(outside, ws.root / "input" / "copy.txt")
    with pytest.raises(InvalidParameter) as err:
        ws.read("input/copy.txt")
    assert "hard link" in err.value.msg
    os.link(outside, ws.root / "output" / "copy.txt")
    with pytest.raises(InvalidParameter):
        ws.write("output/copy.txt", b"overwritten")
    assert outside.read_text() == "not yours"


def test_input_is_for_uploads_only(tmp_path: Path, ws: SessionWorkspace) -> None:
    with pytest.raises(InvalidParameter) as err:
        ws.write("input/sales.csv", b"x")
    assert "input/ is read-only" in err.value.msg
    source = tmp_path / "f"
    source.write_bytes(b"x")
    with pytest.raises(InvalidParameter):
        ws.add_input("../escape.txt", source)
    with pytest.raises(InvalidParameter):
        ws.add_input("sub/dir.txt", source)
    assert files_under(ws.root) == ["input", "output", "scratchpad"]


def test_the_default_root_is_the_jupyter_root_else_the_data_dir(tmp_path: Path) -> None:
    from traitlets import Unicode
    from traitlets.config import Configurable

    from coze_lab.config import CozeLab

    class Server(Configurable):  # what CozeLab reads of its Jupyter ServerApp parent
        root_dir = Unicode()

    served = CozeLab(parent=Server(root_dir=str(tmp_path / "notebooks")), data_dir="/d")
    assert served.workspace_path == tmp_path / "notebooks" / "coze_workspaces"
    assert CozeLab(data_dir=str(tmp_path)).workspace_path == tmp_path / "coze_workspaces"
    chosen = CozeLab(data_dir="/d", workspace_root=str(tmp_path / "ws"))
    assert chosen.workspace_path == tmp_path / "ws"


def test_list_names_regular_files_and_skips_links(
    tmp_path: Path, ws: SessionWorkspace, outside: Path
) -> None:
    ws.write("output/report/summary.md", b"# Done\n")
    ws.write("scratchpad/a.txt", b"abc")
    (ws.root / "output" / "link.txt").symlink_to(outside)
    (ws.root / "scratchpad" / "dir-link").symlink_to(outside.parent, target_is_directory=True)
    assert ws.list() == [("output/report/summary.md", 7), ("scratchpad/a.txt", 3)]
    assert ws.list("scratchpad") == [("scratchpad/a.txt", 3)]
    with pytest.raises(InvalidParameter, match="folder must be one of"):
        ws.list("..")
