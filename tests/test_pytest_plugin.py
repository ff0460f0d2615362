"""The pytest plugin (``coze_lab.pytest_plugin``, the ``pytest11`` entry point): the
documented example test file passes under plain pytest, and a broken copy of it fails."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

EXAMPLE = Path(__file__).parents[1] / "examples" / "test_my_workflow.py"


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Plain pytest in a fresh folder (no conftest, no project configuration)."""
    (folder / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_the_plugin_is_an_entry_point_and_imports_cheaply() -> None:
    [found] = [e for e in entry_points(group="pytest11") if e.name == "coze_lab"]
    assert found.value == "coze_lab.pytest_plugin"
    code = (
        "import sys, coze_lab.pytest_plugin\n"
        "heavy = [m for m in ('coze_lab.services', 'coze_lab.notebook.in_process',"
        " 'tornado.web', 'sqlalchemy', 'openai') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_example_passes_and_a_broken_copy_fails(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.mkdir()
    (good / "test_my_workflow.py").write_text(EXAMPLE.read_text())
    passed = _pytest(good)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "3 passed" in passed.stdout
    broken = tmp_path / "broken"
    broken.mkdir()
    source = EXAMPLE.read_text()
    assert source.count('coze_model.reply("Rockets are fast.")') == 1
    (broken / "test_my_workflow.py").write_text(
        source.replace('coze_model.reply("Rockets are fast.")', 'coze_model.reply("Wrong.")')
    )
    failed = _pytest(broken)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "1 failed, 2 passed" in failed.stdout
    assert "Wrong." in failed.stdout  # the assertion names what the node gave
