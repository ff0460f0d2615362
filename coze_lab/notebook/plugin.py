"""``cl.Plugin``: plugins from a notebook, on the server ``cl.connect()`` found (the
notebook's one transport, the studio API)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from coze_lab.core.errors import NotFound
from coze_lab.core.plugins import PluginInfo, ToolInfo, ToolResult
from coze_lab.notebook.http import StudioClient


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

    def __init__(self, info: PluginInfo, studio: StudioClient | None = None) -> None:
        self.info = info
        self._studio = studio

    @property
    def studio(self) -> StudioClient:
        if self._studio is None:
            self._studio = _studio()
        return self._studio

    @classmethod
    def from_openapi(
        cls,
        source: str | Path | dict[str, Any],
        *,
        manifest: dict[str, Any] | None = None,
        server_url: str | None = None,
        credentials: dict[str, str] | None = None,
        space: str | int | None = None,
    ) -> Plugin:
        """Import an OpenAPI 3 document: a dict, a file path, an http(s) URL or the text,
        into ``space`` (a team space's name or id; default: the connection's space)."""
        studio = _studio(space)
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
        body = {k: v for k, v in kwargs.items() if v is not None}
        return cls(plugin_info(studio.request("POST", "plugins", body)), studio)

    @classmethod
    def get(cls, plugin_id: int | str) -> Plugin:
        studio = _studio()
        return cls(plugin_info(studio.request("GET", f"plugins/{int(plugin_id)}")), studio)

    @classmethod
    def list(cls, *, space: str | int | None = None) -> list[Plugin]:
        """The plugins of ``space`` (default: the connection's space)."""
        studio = _studio(space)
        return [cls(plugin_info(p), studio) for p in studio.request("GET", "plugins")["plugins"]]

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
        tool_id = self.tools.get(tool)
        if tool_id is None:
            self.refresh()
            tool_id = self.tools.get(tool)
        if tool_id is None:
            raise NotFound(f"plugin {self.id} has no tool '{tool}'")
        result = self.studio.request(
            "POST",
            f"plugins/{self.id}/tools/{tool_id}/debug",
            {"arguments": arguments, "scene": scene},
        )
        call_id = result.pop("call_id", None)
        return ToolResult(**result, call_id=None if call_id is None else int(call_id))

    def set_credentials(self, **values: str) -> None:
        """Store your token variables (``api_key=...``) or ``client_secret``, encrypted."""
        self.studio.request("PUT", f"plugins/{self.id}/credentials", {"credentials": values})
        self.refresh()

    def authorization_url(self) -> str:
        """Open this link to authorize an OAuth plugin."""
        answer = self.studio.request("POST", f"plugins/{self.id}/oauth/authorize", {})
        return str(answer["authorization_url"])

    def publish(self) -> int:
        """Copy the draft to the next online version; returns its number."""
        number = self.studio.request("POST", f"plugins/{self.id}/publish")["version"]
        self.refresh()
        return int(number)

    def refresh(self) -> Plugin:
        self.info = plugin_info(self.studio.request("GET", f"plugins/{self.id}"))
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


def _studio(space: str | int | None = None) -> StudioClient:
    from coze_lab.notebook.connect import in_space

    return in_space(None, space)


def plugin_info(data: dict[str, Any]) -> PluginInfo:
    """A plugin of the studio API as the core's PluginInfo."""
    plugin_id = int(data["id"])
    return PluginInfo(
        id=plugin_id,
        owner_id=0,  # not part of the studio API: always the caller
        name=data["name"],
        description=data.get("description") or "",
        manifest=data.get("manifest") or {},
        server_url=data.get("server_url") or "",
        online_version=data.get("online_version"),
        tools=[
            ToolInfo(
                id=int(tool["id"]),
                plugin_id=plugin_id,
                name=tool["name"],
                description=tool.get("description") or "",
                method=tool["method"],
                path=tool["path"],
                parameters=tool.get("parameters") or {},
            )
            for tool in data.get("tools") or []
        ],
        auth=data.get("auth") or {},
        created_at=_time(data.get("created_at")),
        updated_at=_time(data.get("updated_at")),
        openapi=data.get("openapi"),
        version=data.get("version"),
        warnings=data.get("warnings") or [],
    )


def _time(unix: Any) -> datetime:
    return datetime.fromtimestamp(int(unix or 0), timezone.utc)
