"""Reading a plugin's OpenAPI document into a draft: bounded, and in a child process.

A document is untrusted input whose cost is not proportional to its size: ``$ref``\\ s
that fan out expand exponentially (a 3 KB document into gigabytes), YAML aliases do the
same, and thousands of operations take the validator seconds. So reading one is bounded
four ways (``ImportLimits``): the document's size, its number of operations, the values
its references expand into (and their depth), and the wall-clock time and memory of the
reader. Whatever passes a limit is refused with a problem that names the limit.

The reading runs in a child process, never on the server's event loop and never in one
of its threads: a process can be killed when it overruns its time (a thread cannot be
stopped), its memory is capped with ``RLIMIT_AS`` and returned to the system when it
exits, and it holds no lock the server needs (the GIL). Children are forked from a
helper process that has the readers imported already (``_ReaderProcess``), so the price
is a fork and the pickling of the result, a few milliseconds, not an interpreter start.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import queue
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Any

from coze_lab.core.errors import CozeLabError
from coze_lab.core.json_input import check_depth
from coze_lab.core.plugins.document import (
    ToolSpec,
    load_document,
    operation_count,
    server_url,
    tools_from_document,
    validate_document,
)
from coze_lab.core.plugins.manifest import Manifest, parse_manifest
from coze_lab.core.plugins.problems import PluginSpecError, Problem

MiB = 1024 * 1024


@dataclass(frozen=True)
class ImportLimits:
    """How much reading one plugin document may take (the ``plugin_*`` settings).

    Example:
        >>> ImportLimits(max_operations=50).max_operations
        50
    """

    #: the document's size (its text, or its JSON form when given as an object)
    max_document_bytes: int = 2 * MiB
    #: operations (one tool each)
    max_operations: int = 300
    #: values produced by expanding ``$ref`` in all tools together
    max_schema_nodes: int = 200_000
    #: wall-clock seconds of the reader process
    timeout_s: float = 20.0
    #: address space of the reader process (MB)
    memory_mb: int = 1024


@dataclass(frozen=True)
class Draft:
    """A document read and checked: what an import or a draft update stores."""

    doc: dict[str, Any]
    manifest: Manifest
    secrets: dict[str, str]
    tools: list[ToolSpec]
    server_url: str
    warnings: list[Problem]


def read_draft(
    openapi: str | bytes | dict[str, Any],
    manifest: dict[str, Any] | None,
    explicit_server: str | None,
    base_url: str | None,
    limits: ImportLimits,
) -> Draft:
    """The draft of a document (in this process); PluginSpecError lists every problem.

    Example:
        >>> read_draft(text, None, None, None, ImportLimits()).tools[0].name  # doctest: +SKIP
        'get_weather'
    """
    size = _size(openapi)
    if size > limits.max_document_bytes:
        raise _limit(
            "",
            f"the document has {size} bytes",
            limits.max_document_bytes,
            "plugin_max_document_bytes",
        )
    doc = _plain(load_document(openapi), limits)
    count = operation_count(doc)
    if count > limits.max_operations:
        raise _limit(
            "/paths",
            f"the document has {count} operations",
            limits.max_operations,
            "plugin_max_operations",
        )
    problems = validate_document(doc)
    parsed, secrets, manifest_problems = parse_manifest(manifest, doc)
    problems += manifest_problems
    tools: list[ToolSpec] = []
    warnings: list[Problem] = []
    try:
        tools, warnings = tools_from_document(doc, max_nodes=limits.max_schema_nodes)
    except PluginSpecError as exc:
        problems += exc.problems
    except (MemoryError, RecursionError, SystemError):
        raise
    except Exception as exc:  # a document broken in a way the validator reported
        if not problems:
            problems.append(Problem("/paths", f"cannot read the operations: {exc}"))
    if not tools and not problems:
        problems.append(Problem("/paths", "the document has no usable operation"))
    server = explicit_server or server_url(doc, base_url)
    if explicit_server is not None and not isinstance(explicit_server, str):
        problems.append(Problem("/server_url", "must be a string"))
    elif not server:
        problems.append(Problem("/servers", "no server URL: add servers or give server_url"))
    elif not str(server).startswith(("http://", "https://")):
        problems.append(Problem("/servers/0/url", f"must be an absolute http(s) URL: {server}"))
    if problems:
        raise PluginSpecError(problems)
    assert parsed is not None and server
    return Draft(doc, parsed, secrets, tools, str(server), warnings)


async def read_draft_isolated(
    openapi: str | bytes | dict[str, Any],
    manifest: dict[str, Any] | None,
    explicit_server: str | None,
    base_url: str | None,
    limits: ImportLimits,
) -> Draft:
    """``read_draft`` in a child process killed after ``limits.timeout_s``; the event loop
    only waits (in a thread) for its answer."""
    size = _size(openapi)  # refuse the obvious before paying for a process
    if size > limits.max_document_bytes:
        raise _limit(
            "",
            f"the document has {size} bytes",
            limits.max_document_bytes,
            "plugin_max_document_bytes",
        )
    outcome = await asyncio.to_thread(
        _in_child, (openapi, manifest, explicit_server, base_url, limits)
    )
    kind, value = outcome
    if kind == "problems":
        raise PluginSpecError(value)
    return value


# ---- the reader processes ---------------------------------------------------------------
#: documents read at once (more wait their turn); each slot is one reader process
_CONCURRENT = 2
_free: queue.LifoQueue[_ReaderProcess] | None = None  # the warm one first
_free_lock = threading.Lock()
#: every reader started, so that ``stop_readers`` can end them when the server stops
_readers: list[_ReaderProcess] = []
_HEADER = struct.Struct(">Q")
_WARM_UP = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {}}


class _ReaderProcess:
    """A helper process, started clean (``python -c``, so no thread of the server is
    forked and no ``__main__`` is re-run), that imports the readers once and forks one
    short-lived child per document: the child reads it under ``RLIMIT_AS``; the helper
    kills it at its deadline. It exits when the server goes away (its stdin closes)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None

    def read(self, args: tuple[Any, ...], limits: ImportLimits) -> tuple[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            # its own process group: the helper and the child it forked are stopped together
            self.proc = subprocess.Popen(
                [sys.executable, "-c", f"from {__name__} import serve_readers; serve_readers()"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            _send(self.proc.stdin, pickle.dumps(args))
            # the helper answers by the deadline; this margin only guards against a hung helper
            answer = _receive(self.proc.stdout, limits.timeout_s + 30)
        except (OSError, EOFError, TimeoutError):
            self.stop()
            return "problems", [Problem("", "the document reader stopped; try again")]
        return pickle.loads(answer)

    def stop(self) -> None:
        """Kill the helper and the child it is reading in (its process group)."""
        proc = self.proc
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (AttributeError, OSError):  # no process groups here, or already gone
            proc.kill()
        proc.wait()
        self.proc = None


def stop_readers() -> None:
    """End every document reader at once (the server is stopping): a runaway document
    neither holds up the shutdown nor goes on reading after it (review finding: an import
    made the server ignore SIGTERM). An import being read answers that its reader stopped;
    a later one starts a new reader."""
    with _free_lock:
        readers = list(_readers)
    for reader in readers:
        reader.stop()


def _in_child(args: tuple[Any, ...]) -> tuple[str, Any]:
    global _free
    with _free_lock:
        if _free is None:
            _free = queue.LifoQueue()
            for _ in range(_CONCURRENT):
                reader = _ReaderProcess()
                _readers.append(reader)
                _free.put(reader)
    reader = _free.get()
    try:
        return reader.read(args, args[-1])
    finally:
        _free.put(reader)


def serve_readers() -> None:
    """The helper's loop: one framed request (pickled arguments) in, one framed outcome out."""
    channel_in, channel_out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but answers may reach the channel
    validate_document(_WARM_UP)  # compiled once here, inherited by every child
    while True:
        try:
            request = _receive(channel_in, None)
        except EOFError:  # the server went away
            return
        args = pickle.loads(request)
        _send(channel_out, _read_in_fork(args, args[-1], server=channel_in.fileno()))


def _read_in_fork(args: tuple[Any, ...], limits: ImportLimits, server: int | None = None) -> bytes:
    """The pickled outcome of ``read_draft`` run in a forked child with a deadline.

    ``server``: the helper's end of the server's pipe; it becomes readable mid-read only when
    the server went away (it sends nothing while it waits), and then the child is killed."""
    if not hasattr(os, "fork"):  # no fork here: read in the helper (the server kills it late)
        return pickle.dumps(_outcome(args, limits))
    readable, writable = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe, then vanish
        os.close(readable)
        code = 0
        try:
            with os.fdopen(writable, "wb") as out:
                out.write(pickle.dumps(_outcome(args, limits)))
        except BaseException:
            code = 1
        os._exit(code)
    os.close(writable)
    deadline = time.monotonic() + limits.timeout_s
    chunks: list[bytes] = []
    with os.fdopen(readable, "rb", buffering=0) as answer:
        while True:
            left = deadline - time.monotonic()
            watched = [answer] if server is None else [answer, server]
            ready = select.select(watched, [], [], max(left, 0))[0] if left > 0 else []
            if server is not None and server in ready:  # the server is gone: so are we
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os._exit(0)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return pickle.dumps(
                    _problem(
                        f"reading the document took longer than {limits.timeout_s:g} s "
                        "(setting: plugin_import_timeout_s)"
                    )
                )
            chunk = answer.read(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not chunks:  # killed, or out of memory while answering
        return pickle.dumps(
            _problem(
                f"reading the document stopped (status {status}); it probably needs more "
                f"than {limits.memory_mb} MB (setting: plugin_import_memory_mb)"
            )
        )
    return b"".join(chunks)


def _outcome(args: tuple[Any, ...], limits: ImportLimits) -> tuple[str, Any]:
    try:
        import resource

        cap = limits.memory_mb * MiB
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):  # not on this platform: the time limit holds
        pass
    try:
        return "draft", read_draft(*args)
    except PluginSpecError as exc:
        return "problems", exc.problems
    except CozeLabError as exc:
        return _problem(exc.msg)
    except (MemoryError, SystemError):  # SystemError: a C allocation that failed at the cap
        return _problem(
            f"reading the document needs more than {limits.memory_mb} MB "
            "(setting: plugin_import_memory_mb)"
        )
    except RecursionError:
        return _problem("the document is nested too deeply")
    except Exception as exc:  # any other failure of a hostile document is its problem
        return _problem(f"cannot read the document: {type(exc).__name__}")


def _problem(message: str) -> tuple[str, Any]:
    return "problems", [Problem("", message)]


def _send(stream: IO[bytes], data: bytes) -> None:
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes], timeout: float | None) -> bytes:
    """One framed message; EOFError when the stream ends, TimeoutError past ``timeout``.
    Reads the file descriptor itself (a buffered read could hide bytes from select)."""
    fd = stream.fileno()
    deadline = None if timeout is None else time.monotonic() + timeout
    header = _read_exactly(fd, _HEADER.size, deadline)
    return _read_exactly(fd, _HEADER.unpack(header)[0], deadline)


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes:
    data = bytearray()
    while len(data) < size:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


# ---- helpers ----------------------------------------------------------------------------
def _size(openapi: str | bytes | dict[str, Any]) -> int:
    if isinstance(openapi, bytes):
        return len(openapi)
    if isinstance(openapi, str):
        return len(openapi.encode("utf-8", "replace"))
    return 0  # an object: measured once loaded (see _plain)


def _plain(doc: dict[str, Any], limits: ImportLimits) -> dict[str, Any]:
    """The document as a plain JSON tree: YAML aliases expanded (within the size limit),
    dates and other YAML types as strings, nesting bounded."""
    _count_values(doc, limits)
    text = json.dumps(doc, default=str)
    if len(text) > limits.max_document_bytes:
        raise _limit(
            "",
            f"the document has {len(text)} bytes as JSON",
            limits.max_document_bytes,
            "plugin_max_document_bytes",
        )
    plain = json.loads(text)
    check_depth(plain, "the document")
    return plain


def _count_values(doc: Any, limits: ImportLimits) -> None:
    """Refuse a document with more values than bytes allowed (YAML aliases repeat one
    value many times), without building the expansion."""
    budget = limits.max_document_bytes
    stack = [doc]
    while stack:
        item = stack.pop()
        budget -= 1
        if budget < 0:
            raise PluginSpecError(
                [
                    Problem(
                        "",
                        f"the document expands to more than {limits.max_document_bytes} values "
                        "(YAML aliases?) (setting: plugin_max_document_bytes)",
                    )
                ]
            )
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _limit(where: str, what: str, limit: int, setting: str) -> PluginSpecError:
    return PluginSpecError([Problem(where, f"{what}; the limit is {limit} (setting: {setting})")])
