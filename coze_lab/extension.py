"""The jupyter_server extension: the same handlers and services inside JupyterLab."""

from __future__ import annotations

from jupyter_server.extension.application import ExtensionApp
from traitlets import Instance

from coze_lab._version import __version__
from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.web.base import RUNTIME_KEY
from coze_lab.web.routes import jupyter_routes


class CozeLabApp(ExtensionApp):
    """Mounts the studio API and the Coze OpenAPI under ``<base_url>coze_lab/``.

    Configure it with ``c.CozeLab.<setting>`` (see ``coze_lab.config.CozeLab``).
    """

    name = "coze_lab"
    description = "Coze Studio as a Jupyter-native agent studio"
    version = __version__
    load_other_extensions = True
    classes = [CozeLab]

    runtime = Instance(Runtime, allow_none=True)

    def initialize_settings(self) -> None:
        self.runtime = Runtime(CozeLab(parent=self.serverapp))
        self.runtime.start()
        self.settings[RUNTIME_KEY] = self.runtime
        self.log.info(
            "coze_lab %s: database %s, data in %s",
            __version__,
            self.runtime.db.dialect,
            self.runtime.config.data_path,
        )

    def initialize_handlers(self) -> None:
        self.handlers.extend(jupyter_routes())

    async def _start_jupyter_server_extension(self, serverapp: object) -> None:
        # the server's event loop runs now: workflows whose worker died continue here
        assert self.runtime is not None
        self.runtime.start_serving()

    async def stop_extension(self) -> None:
        if self.runtime is not None:
            await self.runtime.close()
