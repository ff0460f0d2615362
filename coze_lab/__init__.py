"""coze_lab: Coze Studio as a Jupyter-native agent studio.

The notebook API lives here; the services are in ``coze_lab.core``, the storage in
``coze_lab.store`` and the HTTP layer in ``coze_lab.web``.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from coze_lab._version import __version__

if TYPE_CHECKING:
    from coze_lab.bot import Bot, ChatReply
    from coze_lab.core.workflows import Workflow, WorkflowDefinitionError
    from coze_lab.discovery import connect
    from coze_lab.plugin import Plugin

#: imported on first use: the server and the CLI start without the notebook API's weight
_LAZY = {
    "Bot": "coze_lab.bot",
    "ChatReply": "coze_lab.bot",
    "Plugin": "coze_lab.plugin",
    "Workflow": "coze_lab.core.workflows",
    "WorkflowDefinitionError": "coze_lab.core.workflows",
    "connect": "coze_lab.discovery",
}
_LAZY_MODULES = ("runs",)

__all__ = [
    "Bot",
    "ChatReply",
    "Plugin",
    "Workflow",
    "WorkflowDefinitionError",
    "__version__",
    "connect",
    "runs",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _LAZY_MODULES or importlib.util.find_spec(f"coze_lab.{name}") is not None:
        return importlib.import_module(f"coze_lab.{name}")  # cl.runs, cl.client, cl.widgets...
    raise AttributeError(f"module 'coze_lab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, *_LAZY_MODULES])


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from coze_lab.extension import CozeLabApp

    return [{"module": "coze_lab", "app": CozeLabApp}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "coze-lab"}]
