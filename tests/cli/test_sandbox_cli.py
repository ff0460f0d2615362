"""`coze-lab sandbox install|run|status` through a stand-alone argparse parser."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from coze_lab.cli import sandbox as cli
from coze_lab.core.sandbox import SandboxSettings, install_pyodide
from tests.core.sandbox.conftest import CACHE


@pytest.fixture(scope="module")
def data_dir() -> Path:
    """A data dir whose ``sandbox`` cache is the shared test cache."""
    install_pyodide(SandboxSettings(cache_dir=CACHE))
    return CACHE.parent


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="coze-lab")
    parser.add_argument("--data-dir", dest="data_dir", default=None)
    cli.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(list(argv))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    args = parse(*argv)
    rc = args.func(args)
    out, err = capsys.readouterr()
    return rc, out, err


def test_run_python_file_prints_json(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = tmp_path / "node.py"
    node.write_text("def main(args):\n    print('dbg')\n    return {'y': args.params['x'] + 1}\n")
    rc, out, _ = run(
        capsys, "--data-dir", str(data_dir), "sandbox", "run", str(node), "--params", '{"x": 41}'
    )
    assert rc == 0
    result = json.loads(out)
    assert result["output"] == {"y": 42} and result["stdout"] == "dbg\n" and result["error"] is None
    assert set(result) == {"output", "stdout", "stderr", "error", "duration_ms"}


def test_run_error_exits_nonzero(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = tmp_path / "loop.py"
    node.write_text("def main(args):\n    while True:\n        pass\n")
    rc, out, _ = run(
        capsys,
        "--data-dir",
        str(data_dir),
        "sandbox",
        "run",
        str(node),
        "--timeout",
        "0.5",
        "--compact",
    )
    assert rc == 1
    assert json.loads(out)["error"]["type"] == "timeout"
    assert "\n" not in out.strip()


def test_run_javascript_and_entry(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = tmp_path / "node.js"
    node.write_text("async function main({params}) { return {n: params.n * 3}; }")
    rc, out, _ = run(
        capsys, "--data-dir", str(data_dir), "sandbox", "run", str(node), "--params", '{"n": 2}'
    )
    assert rc == 0 and json.loads(out)["output"] == {"n": 6}
    fn = tmp_path / "clean.txt"
    fn.write_text("def clean(doc: str) -> dict:\n    return {'doc': doc.strip()}\n")
    rc, out, _ = run(
        capsys,
        "--data-dir",
        str(data_dir),
        "sandbox",
        "run",
        str(fn),
        "--language",
        "python",
        "--entry",
        "clean",
        "--params",
        '{"doc": " a "}',
    )
    assert rc == 0 and json.loads(out)["output"] == {"doc": "a"}


def test_bad_params_and_missing_file(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = tmp_path / "node.py"
    node.write_text("def main(args):\n    return {}\n")
    rc, _, err = run(
        capsys, "--data-dir", str(data_dir), "sandbox", "run", str(node), "--params", "[1]"
    )
    assert rc == 2 and "JSON object" in err
    rc, _, err = run(
        capsys, "--data-dir", str(data_dir), "sandbox", "run", str(tmp_path / "nope.py")
    )
    assert rc == 2 and "cannot read" in err


def test_install_and_status(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "--data-dir", str(data_dir), "sandbox", "install")
    assert rc == 0 and str(CACHE) in out
    rc, out, _ = run(capsys, "--data-dir", str(data_dir), "sandbox", "status")
    assert rc == 0 and json.loads(out)["installed"] is True


def test_status_of_empty_data_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "--data-dir", str(tmp_path), "sandbox", "status")
    assert rc == 1 and json.loads(out)["cache_dir"] == str(tmp_path / "sandbox")


def test_settings_follow_the_shared_configuration(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("COZE_LAB_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("COZE_LAB_SANDBOX_CACHE_DIR", raising=False)
    assert cli._settings(parse("sandbox", "status")).cache_dir == tmp_path / "sandbox"
    monkeypatch.setenv("COZE_LAB_SANDBOX_CACHE_DIR", str(tmp_path / "shared"))
    monkeypatch.setenv("COZE_LAB_SANDBOX_TIMEOUT", "7")
    settings = cli._settings(parse("sandbox", "status"), pool_size=1)
    assert settings.cache_dir == tmp_path / "shared"
    assert settings.timeout_s == 7 and settings.pool_size == 1
