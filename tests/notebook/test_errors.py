"""Errors as a notebook shows them: the message, not the library's frames (issue 16)."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    return InteractiveShell.instance()


def shown(shell: InteractiveShell, cell: str) -> str:
    with capture_output() as captured:
        shell.run_cell(cell)
    return captured.stdout + captured.stderr


def test_a_server_error_shows_its_message_without_the_http_client_frames(
    shell: InteractiveShell,
) -> None:
    out = shown(
        shell,
        "from coze_lab.notebook.http import studio_error\n"
        "def deep():\n"
        "    raise studio_error(4200, 'bot 5 does not exist', 404)\n"
        "deep()\n",
    )
    assert out.strip() == "StudioNotFound: [4200] bot 5 does not exist"


def test_a_domain_error_raised_in_process_shows_its_message_only(shell: InteractiveShell) -> None:
    out = shown(
        shell,
        "from coze_lab.core.errors import InvalidParameter\n"
        "raise InvalidParameter('unknown parameters [\\'norco\\']')\n",
    )
    assert out.strip() == "InvalidParameter: unknown parameters ['norco']"


def test_other_errors_keep_their_traceback(shell: InteractiveShell) -> None:
    out = shown(shell, "def user_code():\n    return 1 / 0\nuser_code()\n")
    assert "ZeroDivisionError" in out and "user_code" in out
