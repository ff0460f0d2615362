"""coze_lab: Coze Studio as a Jupyter-native agent studio.

The notebook API lives here; the services are in ``coze_lab.core``, the storage in
``coze_lab.store`` and the HTTP layer in ``coze_lab.web``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from coze_lab._version import __version__

if TYPE_CHECKING:
    from coze_lab.core.workflows import WorkflowDefinitionError
    from coze_lab.notebook.bot import Bot, ChatReply
    from coze_lab.notebook.connect import connect
    from coze_lab.notebook.knowledge import Knowledge
    from coze_lab.notebook.plugin import Plugin
    from coze_lab.notebook.table import Table
    from coze_lab.notebook.workflow import Workflow

#: imported on first use: the server and the CLI start without the notebook API's weight
_LAZY = {
    "Bot": "coze_lab.notebook.bot",
    "ChatReply": "coze_lab.notebook.bot",
    "Knowledge": "coze_lab.notebook.knowledge",
    "Plugin": "coze_lab.notebook.plugin",
    "Table": "coze_lab.notebook.table",
    "Workflow": "coze_lab.notebook.workflow",
    "WorkflowDefinitionError": "coze_lab.core.workflows",
    "connect": "coze_lab.notebook.connect",
}
#: modules that are public names of the package (``cl.runs.pending()``)
_LAZY_MODULES = {
    "runs": "coze_lab.notebook.runs",
    "memory": "coze_lab.notebook.memory",
    "mcp": "coze_lab.notebook.mcp",
}

__all__ = [
    "Bot",
    "ChatReply",
    "Knowledge",
    "Plugin",
    "Table",
    "Workflow",
    "WorkflowDefinitionError",
    "__version__",
    "connect",
    "mcp",
    "memory",
    "runs",
]


def __getattr__(name: str) -> Any:
    """Only the names in ``__all__`` load lazily; anything else is an AttributeError."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _LAZY_MODULES:
        value = importlib.import_module(_LAZY_MODULES[name])
    else:
        raise AttributeError(f"module 'coze_lab' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from coze_lab.extension import CozeLabApp

    return [{"module": "coze_lab", "app": CozeLabApp}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "coze-lab"}]
