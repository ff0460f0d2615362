"""Workspace mounts (issue 14): ``input/`` read-only, ``scratchpad/`` and ``output/``
writable, nothing else of the host."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coze_lab.core.sandbox import SandboxError, WorkerPool
from coze_lab.core.sandbox.mounts import Mount, normalize, read_in, write_out

from .conftest import make_settings

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture
def session(tmp_path: Path) -> dict[str, Path]:
    dirs = {name: tmp_path / "session" / name for name in ("input", "scratchpad", "output")}
    for d in dirs.values():
        d.mkdir(parents=True)
    (dirs["input"] / "sales.csv").write_text("region,amount\nnorth,3\nsouth,4\n")
    (dirs["input"] / "sub").mkdir()
    (dirs["input"] / "sub" / "notes.txt").write_text("hello")
    (dirs["output"] / "old.md").write_text("from an earlier run")
    return dirs


def mounts(dirs: dict[str, Path]) -> dict[str, Mount]:
    return {
        "input": Mount(dirs["input"]),
        "scratchpad": Mount(dirs["scratchpad"], read_only=False),
        "output": Mount(dirs["output"], read_only=False),
    }


SUMMARY = """
import csv, os
def main(args):
    rows = list(csv.DictReader(open("input/sales.csv")))
    total = sum(int(r["amount"]) for r in rows)
    open("scratchpad/tmp.txt", "w").write("work")
    os.makedirs("output/charts", exist_ok=True)
    with open("output/summary.md", "w") as f:
        f.write(f"# Sales\\ntotal: {total}\\n")
    open("output/charts/a.txt", "w").write("chart")
    return {"total": total, "notes": open("input/sub/notes.txt").read(),
            "old": open("output/old.md").read(), "cwd": os.getcwd()}
"""


async def test_read_input_and_write_output_that_appears_on_the_host(
    solo: WorkerPool, session: dict[str, Path]
) -> None:
    res = await solo.run(SUMMARY, {}, owner="ann", mounts=mounts(session))
    assert res.error is None, res.to_dict()
    assert res.output == {
        "total": 7,
        "notes": "hello",
        "old": "from an earlier run",
        "cwd": "/home/pyodide",
    }
    assert (session["output"] / "summary.md").read_text() == "# Sales\ntotal: 7\n"
    assert (session["output"] / "charts" / "a.txt").read_text() == "chart"
    assert (session["scratchpad"] / "tmp.txt").read_text() == "work"
    assert sorted(res.meta["files_written"]) == [
        "output/charts/a.txt",
        "output/summary.md",
        "scratchpad/tmp.txt",
    ]  # unchanged files are not written back
    # nothing of the session stays in the interpreter for the next run
    nxt = await solo.run(
        "import os\ndef main(args):\n    return {'x': [os.path.exists(p) for p in ('input', 'output', 'scratchpad')]}\n",
        {},
        owner="ann",
    )
    assert nxt.output == {"x": [False, False, False]}


async def test_writing_to_input_fails_and_never_reaches_the_host(
    solo: WorkerPool, session: dict[str, Path]
) -> None:
    code = """
import os
def main(args):
    out = []
    for f in (lambda: open("input/sales.csv", "w"), lambda: open("input/new.txt", "w"),
              lambda: os.remove("input/sales.csv"), lambda: os.mkdir("input/d")):
        try:
            f(); out.append("ok")
        except PermissionError:
            out.append("denied")
    os.chmod("input", 0o755)               # even after taking the permission back
    os.chmod("input/sales.csv", 0o644)
    open("input/sales.csv", "w").write("pwned")
    open("input/planted.txt", "w").write("pwned")
    return {"out": out}
"""
    before = (session["input"] / "sales.csv").read_text()
    res = await solo.run(code, {}, owner="ann", mounts=mounts(session))
    assert res.error is None, res.to_dict()
    assert res.output == {"out": ["denied"] * 4}
    assert (session["input"] / "sales.csv").read_text() == before
    assert not (session["input"] / "planted.txt").exists()
    assert res.meta["files_written"] == []


async def test_paths_cannot_escape_the_session(
    solo: WorkerPool, session: dict[str, Path], tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("TOP SECRET")
    (session["input"] / "link.txt").symlink_to(secret)  # a host symlink is never followed
    (session["input"] / "linkdir").symlink_to(outside, target_is_directory=True)
    code = f"""
import os
def main(args):
    seen = {{}}
    for p in ("input/link.txt", "input/linkdir/secret.txt", "input/../../../{secret}",
              {str(secret)!r}):
        try:
            seen[p] = open(p).read()
        except OSError as e:
            seen[p] = type(e).__name__
    open("output/../escaped.txt", "w").write("x")          # lands beside, not in, output/
    os.symlink({str(secret)!r}, "output/evil-link")         # a symlink never leaves
    os.symlink("/home/pyodide", "output/evil-dir")
    return {{"seen": seen}}
"""
    res = await solo.run(code, {}, owner="ann", mounts=mounts(session))
    assert res.error is None, res.to_dict()
    assert "TOP SECRET" not in str(res.output)
    assert set(res.output["seen"].values()) == {"FileNotFoundError"}  # type: ignore[index]
    assert res.meta["files_written"] == []
    assert sorted(os.listdir(session["output"])) == ["old.md"]
    assert not (session["output"].parent / "escaped.txt").exists()
    assert secret.read_text() == "TOP SECRET"


async def test_a_host_symlink_in_output_is_not_written_through(
    solo: WorkerPool, session: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep")
    (session["output"] / "report.md").symlink_to(target)
    res = await solo.run(
        "def main(args):\n    open('output/report.md', 'w').write('x')\n    return {}\n",
        {},
        owner="ann",
        mounts=mounts(session),
    )
    assert res.error is not None and res.error.type == "invalid_result", res.to_dict()
    assert target.read_text() == "keep"


async def test_limits_and_bad_mounts(sandbox_cache: Path, session: dict[str, Path]) -> None:
    pool = WorkerPool(make_settings(pool_size=1, mount_max_bytes=1000, mount_max_files=5))
    try:
        big = (
            "def main(args):\n    open('output/big.bin', 'wb').write(b'x' * 5000)\n    return {}\n"
        )
        res = await pool.run(big, {}, owner="ann", mounts=mounts(session))
        assert res.error is not None and res.error.type == "output_too_large", res.to_dict()
        assert not (session["output"] / "big.bin").exists()
        (session["input"] / "huge.bin").write_bytes(b"y" * 5000)
        res = await pool.run("def main(args):\n    return {}\n", {}, mounts=mounts(session))
        assert res.error is not None and res.error.type == "invalid_input"
        assert "too large" in res.error.message
    finally:
        await pool.close()
    for bad in ("..", "a/b", "", ".hidden/x"):
        with pytest.raises(SandboxError):
            normalize({bad: Mount(session["input"])})


async def test_javascript_gets_no_mounts(pool: WorkerPool, session: dict[str, Path]) -> None:
    res = await pool.run(
        "function main() { return {}; }", {}, language="javascript", mounts=mounts(session)
    )
    assert res.error is not None and res.error.type == "invalid_input"


async def test_forged_files_from_the_sandbox_are_refused(session: dict[str, Path]) -> None:
    m = mounts(session)
    for forged in ("output/../x.txt", "input/x.txt", "/etc/x", "output//x", "nope/x", "output/"):
        with pytest.raises(SandboxError):
            write_out(m, [{"path": forged, "b64": "eA=="}], 10_000, 10)
    # one bad file among good ones: nothing is written
    with pytest.raises(SandboxError):
        write_out(
            m,
            [{"path": "output/good.txt", "b64": "eA=="}, {"path": "output/../bad", "b64": "eA=="}],
            10_000,
            10,
        )
    assert not (session["output"] / "good.txt").exists()
    assert read_in({"x": Mount(session["output"] / "missing")}, 100, 1) == [
        {"name": "x", "read_only": True, "files": []}
    ]
