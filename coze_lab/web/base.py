"""Handler plumbing shared by the Jupyter extension and ``coze-lab serve``.

Each handler is written once as a mixin (``get``/``post``/...) and bound to one of two
bases: inside Jupyter an ``APIHandler`` (Jupyter identity for the studio API), in the
standalone server a plain tornado handler (personal access tokens for everything).
"""

from __future__ import annotations

import json
import logging
import secrets
from typing import Any

from tornado import web

from coze_lab.core import connectors
from coze_lab.core.errors import CozeLabError, InvalidParameter, PayloadTooLarge, Unauthenticated
from coze_lab.core.identity import UserInfo
from coze_lab.core.json_input import parse_json
from coze_lab.core.pat import Principal
from coze_lab.runtime import Runtime
from coze_lab.web.envelope import error_body, ok, status_for

log = logging.getLogger("coze_lab.web")

RUNTIME_KEY = "coze_lab_runtime"


class CozeHandler(web.RequestHandler):
    """Envelope, errors, JSON parsing and authentication for every coze_lab endpoint."""

    #: the Jupyter authorizer resource of the handler's area
    AUTH_RESOURCE = "coze_lab"
    #: the token scope an OpenAPI endpoint needs (None: any valid token)
    SCOPE: str | None = None

    _principal: Principal | None = None
    _coze_user: UserInfo | None = None

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

    def check_json_size(self) -> None:
        length = self.request.headers.get("Content-Length")
        limit = self.runtime.config.max_json_bytes
        if length is not None and length.isdigit() and int(length) > limit:
            raise PayloadTooLarge(f"request body exceeds {limit} bytes")

    # ---- authentication -------------------------------------------------------------
    def bearer_token(self) -> str | None:
        header = self.request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        if not header:
            return None
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthenticated("Authorization header must be 'Bearer <personal access token>'")
        return value.strip()

    def principal(self) -> Principal:
        """The personal access token's principal; 401 when absent or invalid."""
        if self._principal is None:
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

    def studio_user(self) -> UserInfo:
        """The user of a studio API request; the Jupyter base answers with Jupyter's identity."""
        return self.coze_user()

    # ---- request and response bodies ------------------------------------------------
    def json_body(self) -> dict[str, Any]:
        """The request body as a JSON object; InvalidParameter when it is anything else."""
        self.check_json_size()
        body = parse_json(self.request.body or b"{}")
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


class NotFoundHandler(CozeHandler):
    """Any unknown path under an API prefix: a Coze 4200 body instead of an HTML page."""

    def prepare(self) -> None:
        raise web.HTTPError(404, "no such endpoint: %s", self.request.path)
