"""The Web SDK connector's public pages: a chat page for a published bot and its embed script.

``GET coze_lab/sdk/chat?bot_id=...#token=pat_...`` is a standalone chat page;
``<script src=".../coze_lab/sdk/embed.js" data-bot-id="..." data-token="pat_...">`` puts a
chat button on any site. Both are static files: the page calls ``/v3/chat`` with the
personal access token (bound to the Web SDK connector, 999), never a Jupyter login.
"""

from __future__ import annotations

from pathlib import Path

from tornado import web

from coze_lab.web.base import CozeHandler

STATIC = Path(__file__).resolve().parents[1] / "static" / "sdk"
#: asset name in the URL -> (file, content type)
ASSETS = {
    "chat": ("chat.html", "text/html; charset=utf-8"),
    "chat.js": ("chat.js", "text/javascript; charset=utf-8"),
    "chat.css": ("chat.css", "text/css; charset=utf-8"),
    "embed.js": ("embed.js", "text/javascript; charset=utf-8"),
}
#: the page may be framed anywhere (that is what embedding is); it only talks to us
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors *"
)


class SdkAssetHandler(CozeHandler):
    """GET one of the Web SDK files (public, cacheable for a short while)."""

    @property
    def content_security_policy(self) -> str:  # jupyter_server's header, when mounted there
        return PAGE_POLICY

    def get(self, name: str) -> None:
        if name not in ASSETS:
            raise web.HTTPError(404, "no such Web SDK file: %s", name)
        file_name, content_type = ASSETS[name]
        self.set_header("Content-Type", content_type)
        self.set_header("Content-Security-Policy", PAGE_POLICY)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Cache-Control", "public, max-age=300")
        if name == "embed.js":
            self.set_header("Access-Control-Allow-Origin", "*")
        self.write((STATIC / file_name).read_bytes())
        # not APIHandler.finish, which would force application/json inside Jupyter
        web.RequestHandler.finish(self)
