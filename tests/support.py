"""Helpers for tests: a movable clock, a real ``coze-lab serve`` process, free ports."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class FakeClock:
    now: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


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

    def __init__(self, data_dir: Path, database_url: str, *extra: str,
                 env: dict[str, str] | None = None) -> None:
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
        self.proc = subprocess.Popen(
            coze_lab_command(
                "--data-dir",
                str(self.data_dir),
                "--database-url",
                self.database_url,
                *self.extra,
                "serve",
                "--port",
                "0",
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env},
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            match = re.search(r"listening on (http://\S+)", self.log()[offset:])
            if match:
                self.url = match.group(1)
                httpx.get(self.url + "/healthz", timeout=5).raise_for_status()
                return self
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
