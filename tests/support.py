"""Helpers for tests: a movable clock, a real ``coze-lab serve`` process, free ports."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class FakeClock:
    now: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@contextmanager
def pg_schema(url: str, prefix: str = "t_") -> Iterator[str]:
    """The URL of a fresh schema on the PostgreSQL server at ``url``, dropped afterwards
    (every connection of the URL has it as its ``search_path``)."""
    schema = prefix + secrets.token_hex(6)
    admin = create_engine(url)
    with admin.begin() as connection:
        connection.execute(text(f'create schema "{schema}"'))
    scoped = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield scoped.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'drop schema "{schema}" cascade'))
        admin.dispose()


def coze_lab_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "coze_lab.cli", *args]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        coze_lab_command(*args),
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


class ServerProcess:
    """A real ``coze-lab serve`` on a free loopback port; output kept for log assertions."""

    def __init__(
        self,
        data_dir: Path,
        database_url: str,
        *extra: str,
        env: dict[str, str] | None = None,
        options_after_command: bool = False,
    ) -> None:
        self.options_after_command = options_after_command
        self.data_dir = data_dir
        self.database_url = database_url
        self.env = env or {}
        self.log_path = data_dir / "server.log"
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> ServerProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = self.log_path.open("ab")
        options = ["--data-dir", str(self.data_dir), "--database-url", self.database_url]
        serve = ["serve", "--port", "0"]
        if self.options_after_command:  # as the README writes it
            argv = [*self.extra, *serve, *options]
        else:
            argv = [*options, *self.extra, *serve]
        self.proc = subprocess.Popen(
            coze_lab_command(*argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env},
        )
        try:
            self._wait_until_listening(offset)
        except BaseException:
            self.stop()  # never leave a half-started server behind
            raise
        return self

    def _wait_until_listening(self, offset: int) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            match = re.search(r"listening on (http://\S+)", self.log()[offset:])
            if match:
                self.url = match.group(1)
                httpx.get(self.url + "/healthz", timeout=5).raise_for_status()
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"coze-lab serve exited:\n{self.log()}")
            time.sleep(0.05)
        raise RuntimeError(f"coze-lab serve did not start:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as when a machine dies."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class EchoServer:
    """A small HTTP server on 127.0.0.1 that echoes requests and counts connections.

    ``/echo`` answers JSON describing the request; ``/redirect?to=URL`` redirects;
    ``/big?n=N`` answers N bytes; ``/status?code=C`` answers that status.
    """

    def __init__(self) -> None:
        import http.server
        import json as _json
        import threading
        from urllib.parse import parse_qs, urlparse

        outer = self
        self.connections = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self) -> None:
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                if url.path == "/redirect":
                    self.send_response(302)
                    self.send_header("Location", query["to"])
                    self.end_headers()
                    return
                if url.path == "/big":
                    payload = b"x" * int(query["n"])
                    ctype = "text/plain"
                elif url.path == "/status":
                    self.send_response(int(query["code"]))
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error": "as requested"}')
                    return
                else:
                    payload = _json.dumps(
                        {
                            "method": self.command,
                            "path": url.path,
                            "query": query,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body,
                        }
                    ).encode()
                    ctype = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer

        class Server(http.server.ThreadingHTTPServer):
            def verify_request(self, request: object, client_address: object) -> bool:
                outer.connections += 1
                return True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    def __enter__(self) -> EchoServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


COZE_JS_MODULES = ROOT / ".cache" / "coze-js" / "node_modules"
COZE_JS_DRIVER = ROOT / "tests" / "web" / "coze_js" / "drive.cjs"


class CozeJs:
    """The official Coze JavaScript SDK (``@coze/api``, installed by ``make install``),
    run by node against a server as a user's program would use it.

    Each call names a client method and its arguments; the outcome is ``{"result": ...}``
    (a stream's events as a list) or ``{"error": {name, status, code, msg, message}}``.

    Example:
        >>> js = CozeJs(server.url, token)  # doctest: +SKIP
        >>> js.call("bots.retrieveNew", "42")["error"]["code"]  # doctest: +SKIP
        4200
    """

    def __init__(self, base_url: str, token: str) -> None:
        self.base_url = base_url
        self.token = token

    def run(self, *calls: tuple[str, ...] | tuple[object, ...]) -> list[dict]:
        """Every call in one node process (the SDK loads once); outcomes in order."""
        program = [{"call": name, "args": list(args)} for name, *args in calls]
        result = subprocess.run(
            ["node", str(COZE_JS_DRIVER)],
            input=json.dumps(program),
            capture_output=True,
            text=True,
            timeout=120,
            env={
                **os.environ,
                "NODE_PATH": str(COZE_JS_MODULES),
                "COZE_API_BASE": self.base_url,
                "COZE_API_TOKEN": self.token,
            },
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def call(self, name: str, *args: object) -> dict:
        return self.run((name, *args))[0]


def read_sse_events(
    url: str, headers: dict[str, str], params: dict[str, str], timeout: float = 60
) -> list[tuple[int, str, Any]]:
    """An SSE stream (``/v3/chat/events``) read to its end: (id, event, data) per event."""
    out: list[tuple[int, str, Any]] = []
    with httpx.stream("GET", url, headers=headers, params=params, timeout=timeout) as response:
        assert response.status_code == 200, response.read()
        fields: dict[str, str] = {}
        for line in response.iter_lines():
            if not line:
                if "event" in fields:
                    out.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(": ")
                fields[name] = value
    return out
