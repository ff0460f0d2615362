"""Studio API for plugins: import, drafts, publish, credentials, OAuth, debug calls."""

from __future__ import annotations

import html

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.params import int_value
from coze_lab.web.requests import parse_plugin_source


class PluginsArea(CozeHandler):
    AUTH_RESOURCE = "coze_lab.plugins"


class PluginsHandler(PluginsArea):
    """GET: a space's plugins (``?space_id=``, default personal). POST: import one
    (``openapi`` text/object or ``url``, ``manifest``) into ``?space_id=``."""

    def get(self) -> None:
        user = self.studio_user()
        items = self.runtime.plugins.list(user.id, space_id=self.space_query())
        self.reply({"plugins": [serialize.plugin(p) for p in items]})

    async def post(self) -> None:
        user = self.studio_user()
        body = self.json_body()
        credentials = body.get("credentials")
        if credentials is not None and not isinstance(credentials, dict):
            raise InvalidParameter("credentials must be an object")
        info = await self.runtime.plugins.import_plugin(
            user.id,
            credentials=credentials,
            space_id=self.space_query(),
            **parse_plugin_source(body),
        )
        self.reply(serialize.plugin(info, full=True), status=201)


class PluginItemHandler(PluginsArea):
    def get(self, plugin_id: str) -> None:
        user = self.studio_user()
        scene = self.get_query_argument("scene", "draft")
        info = self.runtime.plugins.get(user.id, parse_id(plugin_id, "plugin_id"), scene=scene)
        self.reply(serialize.plugin(info, full=True))

    async def put(self, plugin_id: str) -> None:
        user = self.studio_user()
        body = self.json_body()
        info = await self.runtime.plugins.update_draft(
            user.id, parse_id(plugin_id, "plugin_id"), **parse_plugin_source(body)
        )
        self.reply(serialize.plugin(info, full=True))

    def delete(self, plugin_id: str) -> None:
        user = self.studio_user()
        self.runtime.plugins.delete(user.id, parse_id(plugin_id, "plugin_id"))
        self.reply(None)


class PluginPublishHandler(PluginsArea):
    def post(self, plugin_id: str) -> None:
        user = self.studio_user()
        number = self.runtime.plugins.publish(user.id, parse_id(plugin_id, "plugin_id"))
        self.reply({"version": number})


class PluginCredentialsHandler(PluginsArea):
    """PUT ``{"credentials": {"api_key": ...}}`` stores them encrypted; nothing reads them."""

    def put(self, plugin_id: str) -> None:
        user = self.studio_user()
        values = self.json_body().get("credentials")
        if not isinstance(values, dict):
            raise InvalidParameter("credentials must be an object of name → text")
        names = self.runtime.plugins.set_credentials(
            user.id, parse_id(plugin_id, "plugin_id"), values
        )
        self.reply({"configured": names})

    def delete(self, plugin_id: str) -> None:
        user = self.studio_user()
        self.runtime.plugins.clear_credentials(user.id, parse_id(plugin_id, "plugin_id"))
        self.reply(None)


class PluginAuthorizeHandler(PluginsArea):
    """A fresh OAuth authorization URL for the current user to open."""

    def post(self, plugin_id: str) -> None:
        user = self.studio_user()
        body = self.json_body()
        scene = body.get("scene", "draft")
        url = self.runtime.plugins.authorization_url(
            user.id, parse_id(plugin_id, "plugin_id"), scene=scene
        )
        self.reply({"authorization_url": url})


class PluginCallsHandler(PluginsArea):
    def get(self, plugin_id: str) -> None:
        user = self.studio_user()
        limit = int_value(
            self.get_query_argument("limit", None), "limit", default=20, low=1, high=100
        )
        calls = self.runtime.plugins.calls(user.id, parse_id(plugin_id, "plugin_id"), limit=limit)
        self.reply({"calls": [serialize.call(c) for c in calls]})


class PluginToolDebugHandler(PluginsArea):
    """Call a tool from the studio: ``{"arguments": {...}, "scene": "draft"}``."""

    async def post(self, plugin_id: str, tool_id: str) -> None:
        user = self.studio_user()
        body = self.json_body()
        result = await self.runtime.plugins.debug_call(
            user.id,
            parse_id(plugin_id, "plugin_id"),
            parse_id(tool_id, "tool_id"),
            body.get("arguments") or {},
            scene=body.get("scene", "draft"),
        )
        self.reply(serialize.tool_result(result))


class OAuthCallbackHandler(PluginsArea):
    """Where the OAuth provider sends the user back; the state proves who started it."""

    async def get(self) -> None:
        info = await self.runtime.plugins.complete_authorization(
            self.get_query_argument("state", None),
            self.get_query_argument("code", None),
            error=self.get_query_argument("error", None),
        )
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.finish(
            "<!doctype html><meta charset='utf-8'><title>Authorized</title>"
            f"<p>{html.escape(info.name)} is authorized. You can close this window.</p>"
        )
