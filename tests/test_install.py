"""A clean clone's ``make dist`` gives a wheel that installs with both Jupyter extensions enabled."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

pytestmark = pytest.mark.slow
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run(*cmd: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    result = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, env=env, cwd=cwd, timeout=1200
    )
    assert result.returncode == 0, (
        f"{cmd} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return ANSI.sub("", result.stdout + result.stderr)


def test_make_dist_of_a_fresh_clone_installs_with_both_extensions_enabled(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    run("git", "clone", "--quiet", ROOT, clone)
    # `make dist` of the clone with this test's environment as the build venv (-o install:
    # it is installed already): wheel + sdist, the lab extension built once, twine-checked
    built = run("make", "-C", clone, "-o", "install", "dist", f"VENV={sys.prefix}")
    assert "PASSED" in built and "FAILED" not in built, built
    [wheel] = (clone / "dist").glob("coze_lab-*-py3-none-any.whl")
    [sdist] = (clone / "dist").glob("coze_lab-*.tar.gz")
    assert sdist.stat().st_size > 0

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(venv),
    }
    env.pop("PYTHONPATH", None)
    run(venv / "bin" / "pip", "install", "--quiet", wheel, env=env)

    server = run(venv / "bin" / "jupyter", "server", "extension", "list", env=env)
    assert "coze_lab enabled" in server, server
    assert "coze_lab 0.1.0 OK" in server, server
    lab = run(venv / "bin" / "jupyter", "labextension", "list", env=env)
    assert "coze-lab v0.1.0 enabled OK" in lab, lab

    site = run(
        venv / "bin" / "python",
        "-c",
        "import coze_lab, pathlib; print(pathlib.Path(coze_lab.__file__).parent)",
        env=env,
        cwd=tmp_path,
    ).strip()
    assert str(venv) in site  # the installed copy, not the source tree
    version = run(venv / "bin" / "coze-lab", "--version", env=env)
    assert "0.1.0" in version
