"""Chat figures, measured in one run on this machine.

1. Time to the first ``conversation.message.delta`` through ``coze-lab serve`` against time
   to the first content chunk straight from the model server (the openai SDK): the server's
   added latency, p50 / p95.
2. N concurrent streaming chats (N = 50, 200): how many complete, and chats per second.

The model is the local OpenAI-compatible model server in its own process, so neither the
load generator nor the model competes with ``coze-lab serve`` for the interpreter lock.

    python bench/chat.py              # (make bench) prints a table of figures
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import openai

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coze_lab.config import CozeLab  # noqa: E402
from coze_lab.services import Runtime  # noqa: E402
from coze_lab.store import sqlite_url  # noqa: E402
from tests.support import ServerProcess  # noqa: E402

SAMPLES = 200
WARMUP = 20
CONCURRENCY = (50, 200)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_model_server(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "coze_lab.testing.model_server", "--port", str(port),
         "--chunk-delay", "0.005"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).raise_for_status()
            return proc
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the model server did not start")


async def direct_first_chunk(client: openai.AsyncOpenAI, text: str) -> float:
    """Seconds to the first content chunk, straight from the model server."""
    start = time.perf_counter()
    stream = await client.chat.completions.create(
        model="coze-lab-demo",
        messages=[{"role": "system", "content": "You are terse."},
                  {"role": "user", "content": text}],
        stream=True,
        stream_options={"include_usage": True},
    )
    first = 0.0
    async for chunk in stream:
        if first == 0.0 and chunk.choices and chunk.choices[0].delta.content:
            first = time.perf_counter() - start
    return first


async def one_chat(
    client: httpx.AsyncClient, bot_id: str, text: str, *, first_only: bool
) -> tuple[float | None, bool]:
    """Seconds to the first delta, and whether the chat completed."""
    body = {"bot_id": bot_id, "user_id": "bench", "stream": True,
            "additional_messages": [{"role": "user", "content": text, "content_type": "text"}]}
    start = time.perf_counter()
    first = None
    event = ""
    async with client.stream("POST", "/v3/chat", json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                if event == "conversation.message.delta" and first is None:
                    first = time.perf_counter() - start
                    if first_only:
                        return first, True
                if event == "conversation.chat.completed":
                    return first, json.loads(line[5:])["status"] == "completed"
    return first, False


async def measure(url: str, token: str, bot_id: str, model_url: str) -> dict[str, object]:
    """Paired samples: one direct call, then one chat through the server, alternately, so
    that any drift of the machine touches both sides alike."""
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=400, max_keepalive_connections=400)
    model = openai.AsyncOpenAI(base_url=model_url, api_key="bench")
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120,
                                 limits=limits) as client:
        direct, firsts = [], []
        for i in range(SAMPLES + WARMUP):
            alone = await direct_first_chunk(model, f"hello {i}")
            first, _ = await one_chat(client, bot_id, f"hello {i}", first_only=False)
            if i >= WARMUP and first is not None:
                direct.append(alone)
                firsts.append(first)
        loads = {}
        for n in CONCURRENCY:
            start = time.perf_counter()
            results = await asyncio.gather(
                *(one_chat(client, bot_id, f"load {i}", first_only=False) for i in range(n)),
                return_exceptions=True,
            )
            elapsed = time.perf_counter() - start
            done = sum(1 for r in results if isinstance(r, tuple) and r[1])
            loads[n] = (done, elapsed)
    await model.close()
    return {"direct": direct, "firsts": firsts, "loads": loads}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    port = free_port()
    model = start_model_server(port)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data"
            url = sqlite_url(data / "coze_lab.db")
            runtime = Runtime(CozeLab(data_dir=str(data), database_url=url))
            runtime.start()
            user = runtime.identity.ensure_user("bench")
            token = runtime.tokens.create(user.id, "bench")[1]
            bot = runtime.bots.create(
                user.id, user.workspace_id,
                {"name": "bench", "prompt_info": {"prompt": "You are terse."}},
            )
            runtime.bots.publish(user.id, bot.id, ["1024"])
            runtime.db.dispose()
            env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "bench",
                   "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo"}
            server = ServerProcess(data, url, env=env).start()
            try:
                ours = asyncio.run(measure(server.url, token, str(bot.id), base_url))
            finally:
                server.stop()
    finally:
        model.kill()
    firsts, direct = ours["firsts"], ours["direct"]
    added = [f - d for f, d in zip(firsts, direct, strict=True)]
    added50 = statistics.median(added) * 1000
    added95 = percentile(added, 0.95) * 1000
    rows = [
        ("first content chunk straight from the model server, p50 / p95",
         f"{statistics.median(direct) * 1000:.2f} / {percentile(direct, 0.95) * 1000:.2f} ms"),
        ("first conversation.message.delta through coze-lab serve, p50 / p95",
         f"{statistics.median(firsts) * 1000:.2f} / {percentile(firsts, 0.95) * 1000:.2f} ms"),
        ("added by the server (paired samples), p50 / p95 (target p50 <= 5 ms)",
         f"{added50:.2f} / {added95:.2f} ms"),
    ]
    for n, (done, elapsed) in ours["loads"].items():
        rows.append((f"{n} concurrent streaming chats: completed, wall time, chats/s",
                     f"{done}/{n}, {elapsed:.2f} s, {done / elapsed:.0f}/s"))
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
