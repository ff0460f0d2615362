"""The import-layer contracts of pyproject.toml ([tool.importlinter]) hold: the core imports
neither the web layer, the notebook layer, nor tornado or Jupyter; the store imports nothing
above it; the web layer does not import the notebook layer; no import cycles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import ROOT


def test_import_layer_contracts_hold() -> None:
    command = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "4 kept, 0 broken" in result.stdout
