"""Chat figures, each side by side with its baseline in one run, over rounds.

1. The model client's CPU per streamed chat (and per non-streamed completion): the openai
   SDK path against the lean httpx path of ``coze_lab.core.models``, in this process,
   alternating in blocks, against the local model server in its own process. Then the
   same comparison inside the server: CPU per chat of two ``coze-lab serve`` processes,
   one on each path (``COZE_LAB_MODEL_CLIENT``), chats alternating between them.
2. Time to the first token through ``coze-lab serve`` against straight from the model
   server, read by the *same* client on both sides (httpx, the SSE lines as they arrive),
   in a new conversation and in one with 10 rounds of history. Samples are paired (one
   direct call and the same chat through the server, which goes first alternating), so
   drift and what a chat leaves running in the server touch both sides alike; the
   server's added time is the median of the paired differences. The server's CPU per chat
   comes from its process time (``/proc``).
3. N concurrent streaming chats (N = 50, 200): how many complete, and chats per second.

Why httpx on both sides of (2): the openai SDK can read only the model server's stream and
a Coze SDK only ours, and the SDK's own parsing (about 3.5 ms) would be counted on the
direct side alone, making "added by the server" read low. Reading the raw lines with the
same httpx client costs the same small amount on both sides, so the difference is the
server's.

    python bench/chat.py [--rounds 3] [--only client|server-cpu|latency]    # (make bench)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import ROUNDS, Figures, banner, percentile, process_cpu  # noqa: E402

from coze_lab.config import CozeLab  # noqa: E402
from coze_lab.core.models import ModelClient, ModelSpec  # noqa: E402
from coze_lab.services import Runtime  # noqa: E402
from coze_lab.store import sqlite_url  # noqa: E402
from coze_lab.web.requests import parse_bot_edit  # noqa: E402
from tests.support import ServerProcess  # noqa: E402

SAMPLES = 60  # paired samples per kind (new / history) per round
WARMUP = 10
HISTORY_ROUNDS = 10  # the bot's default history window
CLIENT_CHATS = 100  # per path per round, in blocks of CLIENT_BLOCK
CLIENT_BLOCK = 20
CONCURRENCY = (50, 200)
MODEL = "coze-lab-demo"
SYSTEM = "You are terse."
LONG_TEXT = " ".join(f"word{i}" for i in range(40))  # the demo model echoes it: ~45 chunks


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_model_server(chunk_delay: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "coze_lab.testing.model_server", "--port", str(port),
         "--chunk-delay", str(chunk_delay)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).raise_for_status()
            return proc, f"http://127.0.0.1:{port}/v1"
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the model server did not start")


# ---- 1. the model client's CPU: SDK path vs lean path --------------------------------------


async def client_cpu(rounds: int) -> None:
    banner(
        "model client: CPU per call in this process (the model server in its own process)",
        "the openai SDK path vs the lean httpx path of coze_lab.core.models, same requests, "
        f"same server, alternating every {CLIENT_BLOCK} calls, {CLIENT_CHATS} calls per path "
        "per round",
    )
    proc, base_url = start_model_server(0.0)
    spec = ModelSpec(id="bench", name="bench", base_url=base_url, model=MODEL)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": LONG_TEXT}]
    paths = ("openai", "httpx")
    stream_ms: dict[str, list[float]] = {p: [] for p in paths}
    complete_ms: dict[str, list[float]] = {p: [] for p in paths}
    chunks = 0
    try:
        clients = {p: ModelClient(backend=p) for p in paths}
        for client in clients.values():  # warm-up: connections, first imports
            for _ in range(10):
                [c async for c in client.stream(spec, messages)]
                await client.complete(spec, messages)
        for _ in range(rounds):
            used = {p: [0.0, 0.0] for p in paths}
            for _ in range(CLIENT_CHATS // CLIENT_BLOCK):
                for path, client in clients.items():
                    start = time.process_time()
                    for _ in range(CLIENT_BLOCK):
                        chunks = len([c async for c in client.stream(spec, messages)])
                    used[path][0] += time.process_time() - start
                    start = time.process_time()
                    for _ in range(CLIENT_BLOCK):
                        await client.complete(spec, messages)
                    used[path][1] += time.process_time() - start
            for path in paths:
                stream_ms[path].append(used[path][0] / CLIENT_CHATS * 1000)
                complete_ms[path].append(used[path][1] / CLIENT_CHATS * 1000)
        for client in clients.values():
            await client.aclose()
    finally:
        proc.kill()
    figures = Figures(rounds)
    figures.add(f"openai SDK: CPU per streamed chat ({chunks} chunks)", stream_ms["openai"], "ms")
    figures.add(f"lean httpx: CPU per streamed chat ({chunks} chunks)", stream_ms["httpx"], "ms")
    figures.add(
        "lean / SDK, streamed",
        [a / b for a, b in zip(stream_ms["httpx"], stream_ms["openai"], strict=True)],
    )
    figures.add("openai SDK: CPU per non-streamed completion", complete_ms["openai"], "ms")
    figures.add("lean httpx: CPU per non-streamed completion", complete_ms["httpx"], "ms")
    figures.print()


# ---- 2 and 3. through coze-lab serve ------------------------------------------------------


async def first_token(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str]
) -> tuple[float, dict[str, Any] | None]:
    """Seconds to the first token on either kind of stream, read line by line to the end;
    for a chat through the server, also its ``conversation.chat.completed`` data."""
    served = "/v3/chat" in url
    first = 0.0
    event = ""
    start = time.perf_counter()
    async with client.stream("POST", url, json=body, headers=headers) as response:
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif not line.startswith("data:"):
                continue
            elif served:
                if event == "conversation.message.delta" and not first:
                    first = time.perf_counter() - start
                elif event == "conversation.chat.completed":
                    return first, json.loads(line[5:])
            elif not first and line[5:].strip() != "[DONE]":
                choices = json.loads(line[5:]).get("choices") or [{}]
                if choices[0].get("delta", {}).get("content"):
                    first = time.perf_counter() - start
    return first, None


def model_messages(history: deque[tuple[str, str]], text: str) -> list[dict[str, str]]:
    """What the server sends the model for this chat: system, history rounds, the user."""
    messages = [{"role": "system", "content": SYSTEM}]
    for user, answer in history:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    return [*messages, {"role": "user", "content": text}]


def chat_body(bot_id: str, text: str) -> dict[str, Any]:
    return {
        "bot_id": bot_id,
        "user_id": "bench",
        "stream": True,
        "additional_messages": [{"role": "user", "content": text, "content_type": "text"}],
    }


async def serve_figures(
    server: ServerProcess, token: str, bot_id: str, model_url: str, rounds: int
) -> None:
    assert server.proc is not None
    pid = server.proc.pid
    limits = httpx.Limits(max_connections=400, max_keepalive_connections=400)
    ours = {"Authorization": f"Bearer {token}"}
    theirs = {"Authorization": "Bearer bench"}
    chat_url = f"{server.url}/v3/chat"
    model_url = f"{model_url}/chat/completions"
    kinds = ("new", "history")
    figures: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        figures.setdefault(name, []).append(value)

    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        # a conversation with HISTORY_ROUNDS rounds already in it
        _, done = await first_token(client, chat_url, chat_body(bot_id, "history 0"), ours)
        assert done is not None and done["status"] == "completed", done
        in_conversation = f"{chat_url}?conversation_id={done['conversation_id']}"
        history: deque[tuple[str, str]] = deque(maxlen=HISTORY_ROUNDS)
        history.append(("history 0", "[demo model] You said: history 0"))
        for i in range(1, HISTORY_ROUNDS):
            text = f"history {i}"
            await first_token(client, in_conversation, chat_body(bot_id, text), ours)
            history.append((text, f"[demo model] You said: {text}"))

        async def pair(kind: str, text: str, served_first: bool) -> tuple[float, float]:
            past = history if kind == "history" else deque()
            direct_body = {
                "model": MODEL,
                "messages": model_messages(past, text),
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            url = in_conversation if kind == "history" else chat_url
            if served_first:
                served, done = await first_token(client, url, chat_body(bot_id, text), ours)
            direct, _ = await first_token(client, model_url, direct_body, theirs)
            if not served_first:
                served, done = await first_token(client, url, chat_body(bot_id, text), ours)
            assert done is not None and done["status"] == "completed", done
            if kind == "history":
                history.append((text, f"[demo model] You said: {text}"))
            return direct, served

        for i in range(WARMUP):
            for kind in kinds:
                await pair(kind, f"warm-up {i}", bool(i % 2))
        for r in range(rounds):
            samples: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
            cpu = process_cpu(pid)
            for i in range(SAMPLES):
                for kind in kinds:
                    # which side goes first alternates: what one chat leaves running in the
                    # server (its event log's write) falls on either side alike
                    samples[kind].append(await pair(kind, f"round {r} sample {i}", bool(i % 2)))
            add("server_cpu", (process_cpu(pid) - cpu) / (SAMPLES * len(kinds)) * 1000)
            for kind, pairs in samples.items():
                added = [served - direct for direct, served in pairs]
                add(f"{kind}_direct", statistics.median(d for d, _ in pairs) * 1000)
                add(f"{kind}_served", statistics.median(s for _, s in pairs) * 1000)
                add(f"{kind}_added", statistics.median(added) * 1000)
                add(f"{kind}_added95", percentile(added, 0.95) * 1000)
            for n in CONCURRENCY:
                start = time.perf_counter()
                results = await asyncio.gather(
                    *(
                        first_token(client, chat_url, chat_body(bot_id, f"load {i}"), ours)
                        for i in range(n)
                    ),
                    return_exceptions=True,
                )
                elapsed = time.perf_counter() - start
                done_count = sum(
                    1
                    for r in results
                    if isinstance(r, tuple) and r[1] is not None and r[1]["status"] == "completed"
                )
                add(f"load{n}_done", done_count)
                add(f"load{n}_rate", done_count / elapsed)

    table = Figures(rounds)
    for kind, label in (("new", "new conversation"), ("history", "10 rounds of history")):
        table.add(f"{label}: first token straight from the model, p50", figures[f"{kind}_direct"],
                  "ms")  # fmt: skip
        table.add(f"{label}: first delta through coze-lab serve, p50", figures[f"{kind}_served"],
                  "ms")  # fmt: skip
        table.add(f"{label}: added by the server, p50 (target <= 5 ms)", figures[f"{kind}_added"],
                  "ms")  # fmt: skip
        table.add(f"{label}: added by the server, p95", figures[f"{kind}_added95"], "ms")
    table.add("server CPU per chat (process time, both kinds)", figures["server_cpu"], "ms")
    for n in CONCURRENCY:
        table.add(f"{n} concurrent streaming chats: completed", figures[f"load{n}_done"], "", 0)
        table.add(f"{n} concurrent streaming chats: chats/s", figures[f"load{n}_rate"], "", 0)
    table.print()


class Served:
    """A ``coze-lab serve`` with a published bot, on its own SQLite file."""

    def __init__(self, tmp: Path, model_url: str, backend: str = "httpx") -> None:
        data = tmp / backend
        url = sqlite_url(data / "coze_lab.db")
        runtime = Runtime(CozeLab(data_dir=str(data), database_url=url))
        runtime.start()
        user = runtime.identity.ensure_user("bench")
        self.token = runtime.tokens.create(user.id, "bench")[1]
        bot = runtime.bots.create(
            user.id,
            user.workspace_id,
            parse_bot_edit({"name": "bench", "prompt_info": {"prompt": SYSTEM}}, create=True),
        )
        runtime.bots.publish(user.id, bot.id, ["1024"])
        runtime.db.dispose()
        self.bot_id = str(bot.id)
        env = {
            "OPENAI_BASE_URL": model_url,
            "OPENAI_API_KEY": "bench",
            "COZE_LAB_DEFAULT_MODEL": MODEL,
            "COZE_LAB_MODEL_CLIENT": backend,
        }
        self.server = ServerProcess(data, url, env=env).start()
        assert self.server.proc is not None
        self.pid = self.server.proc.pid

    async def chat(self, client: httpx.AsyncClient, text: str) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        url = f"{self.server.url}/v3/chat"
        _, done = await first_token(client, url, chat_body(self.bot_id, text), headers)
        assert done is not None and done["status"] == "completed", done


def serve_bench(rounds: int) -> None:
    banner(
        "chat through coze-lab serve (SQLite), the model server in its own process",
        "time to first token through the server vs straight from the model server, both read "
        "with the same httpx client, paired samples, new conversation and 10 rounds of history",
    )
    model, base_url = start_model_server(0.005)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            served = Served(Path(tmp), base_url)
            try:
                asyncio.run(
                    serve_figures(served.server, served.token, served.bot_id, base_url, rounds)
                )
            finally:
                served.server.stop()
    finally:
        model.kill()


SERVER_CHATS = 100  # per server per round, in blocks of CLIENT_BLOCK


async def server_cpu_figures(servers: dict[str, Served], rounds: int) -> None:
    cpu: dict[str, list[float]] = {path: [] for path in servers}
    async with httpx.AsyncClient(timeout=120) as client:
        for served in servers.values():
            for i in range(WARMUP):
                await served.chat(client, f"warm-up {i}")
        for _ in range(rounds):
            used = dict.fromkeys(servers, 0.0)
            for _ in range(SERVER_CHATS // CLIENT_BLOCK):
                for path, served in servers.items():
                    start = process_cpu(served.pid)
                    for i in range(CLIENT_BLOCK):
                        await served.chat(client, f"hello {i}")
                    used[path] += process_cpu(served.pid) - start
            for path in servers:
                cpu[path].append(used[path] / SERVER_CHATS * 1000)
    figures = Figures(rounds)
    figures.add("server on the openai SDK path: CPU per chat", cpu["openai"], "ms")
    figures.add("server on the lean httpx path: CPU per chat", cpu["httpx"], "ms")
    figures.add(
        "saved per chat by the lean path",
        [a - b for a, b in zip(cpu["openai"], cpu["httpx"], strict=True)],
        "ms",
    )
    figures.print()


def server_cpu_bench(rounds: int) -> None:
    banner(
        "server CPU per chat (process time from /proc), by the server's model client path",
        "two coze-lab serve processes, one per path (COZE_LAB_MODEL_CLIENT=openai / httpx), "
        f"same bot and model server, alternating every {CLIENT_BLOCK} sequential chats, "
        f"{SERVER_CHATS} chats per server per round",
    )
    model, base_url = start_model_server(0.005)
    servers: dict[str, Served] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                for path in ("openai", "httpx"):
                    servers[path] = Served(Path(tmp), base_url, path)
                asyncio.run(server_cpu_figures(servers, rounds))
            finally:
                for served in servers.values():
                    served.server.stop()
    finally:
        model.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--only", choices=["client", "server-cpu", "latency"])
    options = parser.parse_args()
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    if options.only in (None, "client"):
        asyncio.run(client_cpu(options.rounds))
    if options.only in (None, "server-cpu"):
        if options.only is None:
            print()
        server_cpu_bench(options.rounds)
    if options.only in (None, "latency"):
        if options.only is None:
            print()
        serve_bench(options.rounds)


if __name__ == "__main__":
    main()
