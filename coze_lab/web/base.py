"""Handler plumbing shared by the Jupyter extension and ``coze-lab serve``.

Each handler is written once as a mixin (``get``/``post``/...) and bound to one of two
bases: inside Jupyter an ``APIHandler`` (Jupyter identity for the studio API), in the
standalone server a plain tornado handler (personal access tokens for everything).
"""

from __future__ import annotations

import inspect
import json
import logging
import secrets
from typing import Any

from tornado import web
from tornado.httputil import HTTPServerRequest

from coze_lab.core import connectors
from coze_lab.core.errors import (
    CozeLabError,
    InvalidParameter,
    PayloadTooLarge,
    PermissionDenied,
    Unauthenticated,
)
from coze_lab.core.identity import UserInfo
from coze_lab.core.ids import parse_id
from coze_lab.core.json_input import parse_json
from coze_lab.core.tokens import Principal, is_token_shaped
from coze_lab.services import Runtime
from coze_lab.web.envelope import error_body, ok, status_for

log = logging.getLogger("coze_lab.web")

RUNTIME_KEY = "coze_lab_runtime"

#: Coze endpoints that always answer with an event stream
STREAM_ENDPOINTS = ("/v1/workflow/stream_run", "/v1/workflow/stream_resume", "/v1/workflows/chat")
#: Coze endpoints that stream when the request body says ``"stream": true``
STREAM_WHEN_ASKED = ("/v3/chat", "/v3/chat/submit_tool_outputs")


def asks_for_stream(
    request: HTTPServerRequest, body: bytes | None = None, *, unread: bool = False
) -> bool:
    """Whether a request asked the Coze API for an event stream (``body``: the request's
    body as streamed in, else ``request.body``). ``unread``: the body was refused before it
    was read (too large), so whether it asked cannot be known; an endpoint that streams when
    asked then answers as a stream would (HTTP 200), which every client reads.

    Coze answers such a request's errors with HTTP 200 and the ``{code, msg}`` JSON body
    (no event stream, no trailing newline), and so must we: the JavaScript SDK reads a
    streamed call's body only from a 2xx response (a 4xx reaches its users as ``code:
    undefined``) and yields an unterminated body as an ``error`` event; cozepy raises
    ``CozeAPIError(code, msg)`` for any JSON answer to a stream call.

    Example:
        >>> from tornado.httputil import HTTPServerRequest
        >>> asks_for_stream(HTTPServerRequest("POST", "/v1/workflow/stream_run"))
        True
        >>> asks_for_stream(HTTPServerRequest("POST", "/v3/chat", body=b'{"stream": true}'))
        True
        >>> asks_for_stream(HTTPServerRequest("POST", "/v3/chat", body=b'{"bot_id": "1"}'))
        False
        >>> asks_for_stream(HTTPServerRequest("GET", "/v1/workflow/stream_run"))
        False
    """
    path = request.path
    if request.method != "POST":  # every stream is a POST; other methods get a plain 405
        return False
    if path.endswith(STREAM_ENDPOINTS):
        return True
    if not path.endswith(STREAM_WHEN_ASKED):
        return False
    if unread:
        return True
    try:
        value = json.loads((request.body if body is None else body) or b"{}")
    except (ValueError, RecursionError):  # not JSON, or hostile JSON: answered as plain 4xx
        return False
    return isinstance(value, dict) and value.get("stream") is True


@web.stream_request_body
class CozeHandler(web.RequestHandler):
    """Envelope, errors, JSON parsing and authentication for every coze_lab endpoint.

    The body is streamed in, not buffered by tornado first: a body over ``body_limit()``
    is refused with 413 as soon as it is over (``Content-Length`` before reading a byte,
    a chunked body at the first chunk beyond the cap), whatever the server's own
    ``max_body_size`` (Jupyter's is 512 MB).
    """

    #: the Jupyter authorizer resource of the handler's area
    AUTH_RESOURCE = "coze_lab"
    #: the token scope an OpenAPI endpoint needs (None: any valid token)
    SCOPE: str | None = None

    _principal: Principal | None = None
    #: why the request's token was refused when :meth:`check_token` checked it
    _refusal: Unauthenticated | None = None
    _coze_user: UserInfo | None = None
    _received: bytearray | None = None
    _body_limit = 0

    @property
    def runtime(self) -> Runtime:
        return self.settings[RUNTIME_KEY]

    @property
    def request_id(self) -> str:
        if not hasattr(self, "_request_id"):
            self._request_id = secrets.token_hex(10)
        return self._request_id

    def set_default_headers(self) -> None:
        super().set_default_headers()
        self.set_header("X-Tt-Logid", self.request_id)

    # ---- the request body, streamed in under a cap -----------------------------------
    def body_limit(self) -> int:
        """The largest request body this endpoint reads, in bytes."""
        return self.runtime.config.max_json_bytes

    async def prepare(self) -> None:
        result = super().prepare()
        if inspect.isawaitable(result):  # jupyter_server's prepare authenticates, async
            await result
        if self._finished:
            return
        self._body_limit = self.body_limit()
        length = self.request.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > self._body_limit:
            raise self.too_large()

    async def check_token(self) -> None:
        """Check the request's personal access token now, so that its database read (a
        token not cached, or any token off PostgreSQL) runs off the event loop; a handler
        of a hot path awaits it first. The verdict is given where the handler asks for it
        (:meth:`principal`), so errors keep their order. (Not in ``prepare``: a body that
        streams in meanwhile would pile up unread, and a refusal mid-body then resets the
        connection before the client reads the answer.)"""
        token = self.bearer_pat()
        if token is None or self._principal is not None:
            return
        runtime = self.runtime
        try:
            self._principal = await runtime.tokens.authenticate_async(token, runtime.offload)
        except Unauthenticated as exc:
            self._refusal = exc

    def too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(f"the request body exceeds {self._body_limit} bytes")

    def data_received(self, chunk: bytes) -> None:
        if self._finished:  # refused already: the rest is dropped, the connection closes
            return
        if self._received is None:
            self._received = bytearray()
            # set in prepare; a subclass whose prepare skipped ours still gets the cap
            self._body_limit = self._body_limit or self.body_limit()
        self._received += chunk
        if len(self._received) > self._body_limit:
            self._received = None
            self.refuse(self.too_large())

    def refuse(self, exc: CozeLabError) -> None:
        """Answer at once with ``exc``, from ``data_received`` (where raising would only
        drop the connection)."""
        log.info("%s %s -> %s %s", self.request.method, self.request.path, exc.code, exc.msg)
        self.send_error(exc.status, exc_info=(type(exc), exc, None))

    def body_pending(self) -> bool:
        """Whether the request body is still (partly) unread: answering now closes the
        connection (tornado cannot skip the rest of a body)."""
        future = getattr(self.request, "_body_future", None)  # set for streaming handlers
        return future is not None and not future.done()

    # ---- authentication -------------------------------------------------------------
    def bearer_token(self) -> str | None:
        header = self.request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        if not header:
            return None
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthenticated("Authorization header must be 'Bearer <personal access token>'")
        return value.strip()

    def bearer_pat(self) -> str | None:
        """The request's ``Bearer`` token when it has the shape of a personal access token."""
        try:
            token = self.bearer_token()
        except Unauthenticated:  # refused where the handler asks for its principal
            return None
        return token if token is not None and is_token_shaped(token) else None

    def principal(self) -> Principal:
        """The personal access token's principal; 401 when absent or invalid."""
        if self._principal is None:
            if self._refusal is not None:
                raise self._refusal
            self._principal = self.runtime.tokens.authenticate(self.bearer_token())
        return self._principal

    def token_user(self) -> UserInfo:
        """The owner of the request's personal access token, after the scope check."""
        principal = self.principal()
        if self.SCOPE is not None:
            principal.require_scope(self.SCOPE)
        return self.runtime.identity.get_user(principal.user_id)

    def coze_user(self) -> UserInfo:
        """The user of an OpenAPI (``/v1``, ``/v3``) request: always the token's owner."""
        if self._coze_user is None:
            self._coze_user = self.token_user()
        return self._coze_user

    def connector(self) -> str:
        """The connector of an OpenAPI request: the token's binding, else the API (1024)."""
        return self.principal().connector_id or connectors.API

    def space_query(self, name: str = "space_id") -> int | None:
        """The space a list or a create names (``?space_id=``); None: the personal one.
        Whether the caller belongs to it is the service's to check."""
        raw = self.get_query_argument(name, None)
        return None if raw in (None, "") else parse_id(raw, name)

    def studio_user(self) -> UserInfo:
        """The user of a studio API request; the Jupyter base answers with Jupyter's identity."""
        return self.coze_user()

    def admin_user(self) -> UserInfo:
        """An administrator (a JupyterHub admin on the hub service); 403 for anyone else."""
        self.studio_user()
        raise PermissionDenied("only JupyterHub admins, signed in through the hub, see this")

    # ---- request and response bodies ------------------------------------------------
    def json_body(self) -> dict[str, Any]:
        """The request body as a JSON object; InvalidParameter when it is anything else."""
        body = parse_json(bytes(self._received) if self._received else b"{}")
        if not isinstance(body, dict):
            raise InvalidParameter("request body must be a JSON object")
        return body

    def reply(
        self, data: Any = None, status: int = 200, *, extra: dict[str, Any] | None = None
    ) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps(ok(data, **(extra or {}))))

    # ---- errors ----------------------------------------------------------------------
    def send_error(self, status_code: int = 500, **kwargs: Any) -> None:
        exc_info = kwargs.get("exc_info")
        exc = exc_info[1] if exc_info else None
        super().send_error(status_for(exc, status_code), **kwargs)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc_info = kwargs.get("exc_info")
        exc = exc_info[1] if exc_info else None
        if isinstance(exc, web.HTTPError) and exc.log_message:
            reason = exc.log_message % exc.args if exc.args else exc.log_message
        else:
            reason = self._reason
        if self.body_pending():
            self.set_header("Connection", "close")  # so a kept-alive client opens a new one
        if status_code == 405:  # RFC 9110: a 405 names the methods the resource supports
            self.set_header("Allow", ", ".join(m.upper() for m in own_methods(type(self))))
        unread = self.body_pending()
        if asks_for_stream(self.request, bytes(self._received or b""), unread=unread):
            self.set_status(200)  # as Coze does: see asks_for_stream
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(json.dumps(error_body(status_code, exc, reason)))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, CozeLabError) and value.status < 500:
            log.info(
                "%s %s -> %s %s", self.request.method, self.request.path, value.code, value.msg
            )
            return
        if isinstance(value, web.HTTPError) and value.status_code < 500:
            return
        log.error(
            "internal error, logid=%s, %s %s",
            self.request_id,
            self.request.method,
            self.request.path,
            exc_info=(typ, value, tb),
        )


HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def own_methods(handler: type) -> list[str]:
    """The HTTP methods a handler implements itself (what a 405's ``Allow`` lists)."""
    names: set[str] = set()
    for klass in handler.__mro__:
        if klass in (CozeHandler, web.RequestHandler, object):
            break
        names.update(n for n in HTTP_METHODS if n in klass.__dict__)
    return [n for n in HTTP_METHODS if n in names]


class NotFoundHandler(CozeHandler):
    """Any unknown path under an API prefix: a Coze 4200 body instead of an HTML page."""

    def prepare(self) -> None:
        raise web.HTTPError(404, "no such endpoint: %s", self.request.path)
