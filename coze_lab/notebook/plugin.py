"""``cl.Plugin``: plugins from a notebook, stored in the same database as the lab server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coze_lab.core.plugins import PluginInfo, ToolResult


class Plugin:
    """A stored plugin: its tools can be called here, used by bots and workflow nodes.

    Example:
        >>> weather = Plugin.from_openapi("weather.yaml", manifest={"auth": {
        ...     "type": "service_token", "template": "Bearer {{api_key}}"}})  # doctest: +SKIP
        >>> weather.set_credentials(api_key="...")                          # doctest: +SKIP
        >>> weather.call("get_weather", city="Oslo").output                 # doctest: +SKIP
        '{"temperature": 4}'
        >>> wf.plugin("forecast", plugin=weather, tool="get_weather",
        ...           inputs={"city": "{{start.city}}"})                    # doctest: +SKIP
    """

    def __init__(self, info: PluginInfo) -> None:
        self.info = info

    @classmethod
    def from_openapi(
        cls,
        source: str | Path | dict[str, Any],
        *,
        manifest: dict[str, Any] | None = None,
        server_url: str | None = None,
        credentials: dict[str, str] | None = None,
    ) -> Plugin:
        """Import an OpenAPI 3 document: a dict, a file path, an http(s) URL or the text."""
        host = _host()
        kwargs: dict[str, Any] = {
            "manifest": manifest,
            "server_url": server_url,
            "credentials": credentials,
        }
        if isinstance(source, str) and source.startswith(("http://", "https://")):
            kwargs["url"] = source
        elif isinstance(source, Path) or (
            isinstance(source, str) and "\n" not in source and Path(source).is_file()
        ):
            kwargs["openapi"] = Path(source).read_text(encoding="utf-8")
        else:
            kwargs["openapi"] = source
        plugins = host.runtime.plugins
        return cls(host.call(plugins.import_plugin(host.user.id, **kwargs)))

    @classmethod
    def get(cls, plugin_id: int | str) -> Plugin:
        host = _host()
        return cls(host.runtime.plugins.get(host.user.id, int(plugin_id)))

    @classmethod
    def list(cls) -> list[Plugin]:
        host = _host()
        return [cls(info) for info in host.runtime.plugins.list(host.user.id)]

    @property
    def id(self) -> int:
        return self.info.id

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def tools(self) -> dict[str, int]:
        """Tool name → tool id (what bots list as their plugin tools)."""
        return {t.name: t.id for t in self.info.tools}

    def call(self, tool: str, *, scene: str = "draft", **arguments: Any) -> ToolResult:
        """Call a tool as the notebook's user (the draft unless ``scene="online"``)."""
        host = _host()
        return host.call(
            host.runtime.plugins.call_tool_by_name(
                host.user.id, self.id, tool, arguments, scene=scene
            )
        )

    def set_credentials(self, **values: str) -> None:
        """Store your token variables (``api_key=...``) or ``client_secret``, encrypted."""
        host = _host()
        host.runtime.plugins.set_credentials(host.user.id, self.id, values)
        self.refresh()

    def authorization_url(self) -> str:
        """Open this link to authorize an OAuth plugin."""
        host = _host()
        return host.runtime.plugins.authorization_url(host.user.id, self.id)

    def publish(self) -> int:
        """Copy the draft to the next online version; returns its number."""
        host = _host()
        number = host.runtime.plugins.publish(host.user.id, self.id)
        self.refresh()
        return int(number)

    def refresh(self) -> Plugin:
        host = _host()
        self.info = host.runtime.plugins.get(host.user.id, self.id)
        return self

    def _repr_markdown_(self) -> str:
        rows = "\n".join(
            f"| `{t.name}` | {t.method} {t.path} | {t.description} |" for t in self.info.tools
        )
        online = self.info.online_version or "not published"
        return (
            f"**{self.name}** (plugin {self.id}, online: {online}, auth: "
            f"{self.info.auth.get('type')})\n\n| tool | request | description |\n|---|---|---|\n"
            + rows
        )

    def __repr__(self) -> str:
        return f"Plugin({self.name!r}, id={self.id}, tools={list(self.tools)})"


def _host() -> Any:
    from coze_lab.notebook.in_process import default_host

    return default_host()
