"""Real HTTP servers on loopback for plugin tests: a pet API and an OAuth 2 provider."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import secrets
import threading
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse


class PluginTestServer:
    """One server for everything plugins talk to.

    - ``/pets/{id}`` (GET, DELETE), ``/pets`` (POST JSON), ``/form`` (POST form): echo what
      arrived (path, query, headers, cookies, body) as JSON.
    - ``/flaky``: 503 for the first ``flaky_failures`` calls, then 200.
    - ``/secure``: 200 only with ``Authorization: Bearer <api key>`` or ``?key=<api key>``.
    - ``/authorize``: an OAuth authorization page that approves at once (302 back with a
      code), ``/token``: authorization_code (PKCE checked), refresh_token and
      client_credentials grants, ``/me``: 200 only with a live access token.
    - ``/openapi.yaml``: ``self.document`` (for imports by URL).
    """

    API_KEY = "k-123"
    CLIENT_ID = "lab-client"
    CLIENT_SECRET = "lab-client-secret"

    def __init__(self) -> None:
        outer = self
        self.requests: list[dict[str, Any]] = []
        self.flaky_failures = 2
        self.flaky_calls = 0
        self.codes: dict[str, dict[str, str]] = {}
        self.access_tokens: set[str] = set()
        self.refresh_tokens: set[str] = set()
        self.token_requests: list[dict[str, str]] = []
        self.expires_in = 3600
        self.document = ""

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(
                self, status: int, payload: Any, headers: dict[str, str] | None = None
            ) -> None:
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _answer(self) -> None:
                url = urlparse(self.path)
                query = {k: v if len(v) > 1 else v[0] for k, v in parse_qs(url.query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                seen = {
                    "method": self.command,
                    "path": url.path,
                    "query": query,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                }
                outer.requests.append(seen)
                auth = self.headers.get("Authorization", "")
                if url.path == "/openapi.yaml":
                    raw = outer.document.encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/yaml")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                elif url.path == "/flaky":
                    outer.flaky_calls += 1
                    if outer.flaky_calls <= outer.flaky_failures:
                        self._send(503, {"error": "try again"})
                    else:
                        self._send(200, {"calls": outer.flaky_calls})
                elif url.path == "/secure":
                    if auth == f"Bearer {outer.API_KEY}" or query.get("key") == outer.API_KEY:
                        self._send(200, {"secret": "granted"})
                    else:
                        self._send(401, {"error": "no key"})
                elif url.path == "/authorize":
                    self._authorize(query)
                elif url.path == "/token":
                    self._token(auth, {k: v[0] for k, v in parse_qs(body).items()})
                elif url.path == "/me":
                    token = auth.removeprefix("Bearer ")
                    if token in outer.access_tokens:
                        self._send(200, {"user": "octocat", "token_suffix": token[-4:]})
                    else:
                        self._send(401, {"error": "invalid_token"})
                elif url.path == "/big":
                    self._send(200, {"text": "x" * int(query.get("n", "10"))})
                else:
                    self._send(200, seen)

            def _authorize(self, query: dict[str, Any]) -> None:
                if query.get("client_id") != outer.CLIENT_ID:
                    self._send(400, {"error": "unknown client"})
                    return
                code = secrets.token_urlsafe(8)
                outer.codes[code] = query
                target = (
                    query["redirect_uri"] + "?" + urlencode({"code": code, "state": query["state"]})
                )
                self._send(302, {}, {"Location": target})

            def _token(self, auth: str, form: dict[str, str]) -> None:
                outer.token_requests.append(form)
                client_id, client_secret = form.get("client_id"), form.get("client_secret")
                if auth.startswith("Basic "):
                    client_id, _, client_secret = base64.b64decode(auth[6:]).decode().partition(":")
                if (client_id, client_secret) != (outer.CLIENT_ID, outer.CLIENT_SECRET):
                    self._send(401, {"error": "invalid_client"})
                    return
                grant = form.get("grant_type")
                if grant == "authorization_code":
                    asked = outer.codes.pop(form.get("code", ""), None)
                    if asked is None or asked["redirect_uri"] != form.get("redirect_uri"):
                        self._send(400, {"error": "invalid_grant"})
                        return
                    verifier = form.get("code_verifier", "")
                    challenge = (
                        base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
                        .rstrip(b"=")
                        .decode()
                    )
                    if asked.get("code_challenge") != challenge:
                        self._send(400, {"error": "invalid_grant", "why": "pkce"})
                        return
                elif grant == "refresh_token":
                    if form.get("refresh_token") not in outer.refresh_tokens:
                        self._send(400, {"error": "invalid_grant"})
                        return
                    outer.refresh_tokens.discard(form["refresh_token"])
                    outer.access_tokens.clear()  # the old access token dies with the refresh
                elif grant != "client_credentials":
                    self._send(400, {"error": "unsupported_grant_type"})
                    return
                access = "at-" + secrets.token_urlsafe(8)
                outer.access_tokens.add(access)
                answer: dict[str, Any] = {
                    "access_token": access,
                    "token_type": "bearer",
                    "expires_in": outer.expires_in,
                }
                if grant != "client_credentials":
                    refresh = "rt-" + secrets.token_urlsafe(8)
                    outer.refresh_tokens.add(refresh)
                    answer["refresh_token"] = refresh
                self._send(200, answer)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    def __enter__(self) -> PluginTestServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


PETS_YAML = """
openapi: 3.0.3
info:
  title: Pet Store
  version: "1.0"
  description: Pets and their owners.
servers:
  - url: {url}
paths:
  /pets/{{pet_id}}:
    parameters:
      - name: pet_id
        in: path
        required: true
        schema: {{type: integer}}
    get:
      operationId: getPet
      summary: Get a pet by id.
      parameters:
        - name: verbose
          in: query
          schema: {{type: boolean, default: false}}
        - name: tags
          in: query
          schema: {{type: array, items: {{type: string}}}}
        - name: X-Trace
          in: header
          schema: {{type: string}}
        - name: session
          in: cookie
          schema: {{type: string}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {{$ref: "#/components/schemas/Echo"}}
    delete:
      operationId: deletePet
      responses:
        "204": {{description: gone}}
  /pets:
    post:
      operationId: create pet!
      description: Create a pet.
      requestBody:
        required: true
        content:
          application/json:
            schema: {{$ref: "#/components/schemas/NewPet"}}
      responses:
        "200": {{description: ok}}
  /form:
    post:
      operationId: sendForm
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              properties:
                a: {{type: string}}
                n: {{type: integer}}
      responses:
        "200": {{description: ok}}
  /flaky:
    get:
      operationId: flakyGet
      responses:
        "200": {{description: ok}}
    post:
      operationId: flakyPost
      responses:
        "200": {{description: ok}}
  /upload:
    post:
      operationId: upload
      requestBody:
        content:
          multipart/form-data:
            schema: {{type: object, properties: {{file: {{type: string, format: binary}}}}}}
      responses:
        "200": {{description: ok}}
  /big:
    get:
      operationId: big
      parameters:
        - {{name: n, in: query, schema: {{type: integer}}}}
      responses:
        "200": {{description: ok}}
components:
  schemas:
    Echo:
      type: object
      properties:
        method: {{type: string}}
        path: {{type: string}}
    NewPet:
      type: object
      required: [name, kind]
      properties:
        id: {{type: integer, readOnly: true}}
        name: {{type: string}}
        kind: {{type: string, enum: [cat, dog]}}
        age: {{type: integer, minimum: 0}}
        owner: {{$ref: "#/components/schemas/Owner"}}
        nickname: {{type: string, nullable: true}}
    Owner:
      type: object
      properties:
        name: {{type: string}}
        pets: {{type: array, items: {{$ref: "#/components/schemas/NewPet"}}}}
"""

SECURE_JSON = {
    "openapi": "3.1.0",
    "info": {"title": "Secure", "version": "1"},
    "paths": {
        "/secure": {"get": {"operationId": "secure", "responses": {"200": {"description": "ok"}}}}
    },
}

ME_JSON = {
    "openapi": "3.1.0",
    "info": {"title": "Me", "version": "1"},
    "paths": {
        "/me": {
            "get": {
                "operationId": "whoami",
                "summary": "Who the authorized user is",
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}


def oauth_manifest(
    server: PluginTestServer, grant: str = "authorization_code", **extra: Any
) -> dict[str, Any]:
    return {
        "name_for_model": "me",
        "auth": {
            "type": "oauth",
            "grant_type": grant,
            "authorization_url": f"{server.url}/authorize",
            "token_url": f"{server.url}/token",
            "client_id": PluginTestServer.CLIENT_ID,
            "client_secret": PluginTestServer.CLIENT_SECRET,
            "scope": "read",
            **extra,
        },
    }
