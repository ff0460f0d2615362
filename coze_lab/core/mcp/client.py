"""Talking to MCP servers with the ``mcp`` SDK's client.

A stdio server is started on first use as a subprocess (with only the environment it was
configured with, plus PATH and HOME), kept for the next calls, and stopped when it has been
idle for ``idle_s``, when a call to it times out, or at shutdown; one process per server and
user, calls to it one at a time. An HTTP server is called per request, through the SSRF
guard, with the user's headers.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import shutil
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from coze_lab.core.errors import CozeLabError, InvalidParameter, PermissionDenied, Unavailable
from coze_lab.core.mcp.catalog import HTTP, Endpoint
from coze_lab.core.mcp.transport import GuardedTransport
from coze_lab.core.net import OutboundPolicy

log = logging.getLogger("coze_lab.mcp")
T = TypeVar("T")
Job = Callable[[Client], Awaitable[T]]


@dataclass(frozen=True)
class McpSettings:
    """Limits of MCP calls. ``stdio_commands``: the programs stdio servers may run (a name
    on PATH or an absolute path; ``*``: any); empty: stdio servers are off."""

    timeout_s: float = 30.0
    max_output_chars: int = 20_000
    idle_s: float = 300.0
    stdio_commands: tuple[str, ...] = ()
    #: where stdio servers run (a folder per server) and write their stderr
    work_dir: Path | None = None


class McpUnreachable(CozeLabError):
    """The server could not be started or reached, or did not answer in time."""

    code, status = 5040, 502


def check_command(command: str, settings: McpSettings) -> None:
    """Refuse a stdio command the configuration does not allow.

    Example:
        >>> check_command("uvx", McpSettings(stdio_commands=("uvx",)))
    """
    allowed = settings.stdio_commands
    if not allowed:
        raise PermissionDenied(
            "stdio MCP servers are off on this server (an administrator allows commands "
            "with the mcp_stdio_commands setting)"
        )
    if "*" in allowed or command in allowed or os.path.basename(command) in allowed:
        return
    raise PermissionDenied(f"the command '{command}' is not in mcp_stdio_commands")


class _StdioWorker:
    """One running stdio server: a task owns the SDK client (its task group must be entered
    and left in one task) and runs the calls it is handed, one at a time."""

    def __init__(self, endpoint: Endpoint, settings: McpSettings) -> None:
        self.endpoint = endpoint
        self.settings = settings
        self.jobs: asyncio.Queue[tuple[Job[Any], asyncio.Future[Any]]] = asyncio.Queue()
        self.done = False
        self.task = asyncio.create_task(self._run(), name=f"mcp-{endpoint.name}")

    async def call(self, job: Job[T]) -> T:
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        await self.jobs.put((job, future))
        return await future

    async def _serve(self, client: Client) -> None:
        endpoint, settings = self.endpoint, self.settings
        while True:
            try:
                with anyio.fail_after(settings.idle_s):
                    job, future = await self.jobs.get()
            except TimeoutError:
                log.info("stopping idle MCP server %s", endpoint.name)
                return
            if future.done():
                continue
            try:
                with anyio.fail_after(settings.timeout_s):
                    result = await job(client)
            except TimeoutError:
                future.set_exception(_timed_out(endpoint, settings))
                return  # a server that hangs is stopped; the next call starts it again
            except Exception as exc:
                if not future.done():
                    future.set_exception(exc)
            else:
                if not future.done():
                    future.set_result(result)

    async def _run(self) -> None:
        endpoint, settings = self.endpoint, self.settings
        command = endpoint.command or ""
        env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
        env.update(endpoint.env)
        work = (settings.work_dir or Path.cwd()) / str(endpoint.server_id)
        failure: BaseException | None = None
        try:
            work.mkdir(parents=True, exist_ok=True)
            errlog = await asyncio.to_thread(open, work / "stderr.log", "a")
            # the deadline covers the start (lifted after it): the SDK client's task group
            # must be entered and left inside one cancel scope of this task
            with anyio.CancelScope(deadline=anyio.current_time() + settings.timeout_s) as scope:
                async with AsyncExitStack() as stack:
                    stack.callback(errlog.close)
                    params = StdioServerParameters(
                        command=shutil.which(command, path=env.get("PATH")) or command,
                        args=list(endpoint.args),
                        env=env,
                        cwd=str(work),
                    )
                    client = await stack.enter_async_context(
                        Client(stdio_client(params, errlog=errlog), cache=None)
                    )
                    scope.deadline = math.inf
                    log.info("started MCP server %s (%s)", endpoint.name, command)
                    await self._serve(client)
            if scope.cancelled_caught:
                failure = _timed_out(endpoint, settings)
        except asyncio.CancelledError:
            failure = Unavailable(f"the MCP server {endpoint.name} was stopped")
            raise
        except Exception as exc:
            log.warning("MCP server %s failed: %s", endpoint.name, exc)
            failure = McpUnreachable(f"cannot start the MCP server {endpoint.name}: {exc}")
        finally:
            self.done = True
            while not self.jobs.empty():
                _, future = self.jobs.get_nowait()
                if not future.done():
                    future.set_exception(
                        failure or McpUnreachable(f"the MCP server {endpoint.name} stopped")
                    )


def _timed_out(endpoint: Endpoint, settings: McpSettings) -> McpUnreachable:
    return McpUnreachable(
        f"the MCP server {endpoint.name} did not answer within {settings.timeout_s:g} s"
    )


class McpConnections:
    """Runs a job (``async (client) -> T``) against a server, within the limits.

    Example:
        >>> tools = await connections.run(endpoint, lambda c: c.list_tools())  # doctest: +SKIP
    """

    def __init__(self, settings: McpSettings, policy: OutboundPolicy) -> None:
        self.settings = settings
        self.policy = policy
        self._workers: dict[tuple[int, int], _StdioWorker] = {}

    async def run(self, user_id: int, endpoint: Endpoint, job: Job[T]) -> T:
        if endpoint.transport == HTTP:
            return await self._http(endpoint, job)
        check_command(endpoint.command or "", self.settings)
        key = (endpoint.server_id, user_id)
        worker = self._workers.get(key)
        stale = worker is not None and worker.endpoint.updated_at != endpoint.updated_at
        if worker is not None and (worker.done or stale):
            worker.task.cancel()
            worker = None
        if worker is None:
            worker = self._workers[key] = _StdioWorker(endpoint, self.settings)
        try:
            return await worker.call(job)
        except (CozeLabError, MCPError):
            raise
        except Exception as exc:  # what the SDK raises for a server that misbehaves
            raise McpUnreachable(f"the MCP server {endpoint.name} failed: {_reason(exc)}") from exc

    async def _http(self, endpoint: Endpoint, job: Job[T]) -> T:
        settings = self.settings
        try:
            with anyio.fail_after(settings.timeout_s):
                http = httpx2.AsyncClient(
                    transport=GuardedTransport(self.policy),
                    headers=dict(endpoint.headers),
                    timeout=settings.timeout_s,
                )
                async with (
                    http,
                    Client(
                        streamable_http_client(endpoint.url or "", http_client=http), cache=None
                    ) as client,
                ):
                    return await job(client)
        except TimeoutError as exc:
            raise _timed_out(endpoint, settings) from exc
        except Exception as exc:
            cause = _leaf(exc)  # the SDK's task groups wrap what went wrong
            if isinstance(cause, CozeLabError | MCPError):
                raise cause from exc
            raise McpUnreachable(
                f"cannot reach the MCP server {endpoint.name}: {_reason(cause)}"
            ) from exc

    def running(self) -> int:
        """How many stdio servers run now."""
        return sum(1 for w in self._workers.values() if not w.done)

    async def close(self) -> None:
        """Stop every stdio server."""
        workers, self._workers = list(self._workers.values()), {}
        for worker in workers:
            worker.task.cancel()
        await asyncio.gather(*(w.task for w in workers), return_exceptions=True)


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups."""
    inner = getattr(exc, "exceptions", None)
    return _leaf(inner[0]) if inner else exc


def _reason(exc: BaseException) -> str:
    """The first cause worth telling in an exception group (anyio wraps the transport's)."""
    exc = _leaf(exc)
    if isinstance(exc, CozeLabError):
        return exc.msg
    return str(exc) or type(exc).__name__


__all__ = [
    "InvalidParameter",
    "McpConnections",
    "McpSettings",
    "McpUnreachable",
    "check_command",
]
