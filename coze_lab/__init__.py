"""coze_lab: Coze Studio as a Jupyter-native agent studio.

The notebook API lives here; the services are in ``coze_lab.core``, the storage in
``coze_lab.store`` and the HTTP layer in ``coze_lab.web``.
"""

from __future__ import annotations

from typing import Any

from coze_lab._version import __version__
from coze_lab.bot import Bot, ChatReply
from coze_lab.core.workflows import Workflow, WorkflowDefinitionError
from coze_lab.discovery import connect
from coze_lab.plugin import Plugin

__all__ = [
    "Bot",
    "ChatReply",
    "Plugin",
    "Workflow",
    "WorkflowDefinitionError",
    "__version__",
    "connect",
]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from coze_lab.extension import CozeLabApp

    return [{"module": "coze_lab", "app": CozeLabApp}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "coze-lab"}]
