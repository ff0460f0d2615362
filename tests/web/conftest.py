"""Fixtures for the web tests."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator

import pytest

from coze_lab.testing import ModelServer
from tests.support import COZE_JS_MODULES, CozeJs


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """The scripted OpenAI-compatible model server on loopback (a module may override it,
    e.g. with a slow stream)."""
    with ModelServer() as server:
        yield server


@pytest.fixture(scope="session")
def coze_js() -> Callable[[str, str], CozeJs]:
    """``coze_js(base_url, token)``: the official JavaScript SDK driven by node.

    ``make install`` installs ``@coze/api`` into .cache/coze-js; a missing install fails
    the tests that need it (it is part of the suite, not optional)."""
    if shutil.which("node") is None:
        pytest.fail("node is not on PATH (the JavaScript SDK tests need it)")
    if not (COZE_JS_MODULES / "@coze" / "api" / "package.json").exists():
        pytest.fail(f"@coze/api is not installed in {COZE_JS_MODULES.parent}: run `make install`")
    return CozeJs
