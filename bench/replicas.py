"""Replicas that behave as one: how fast a cancel sent to replica B stops work on replica A,
and how fast a client re-attached through B sees a chat running on A.

Two ``coze-lab serve`` processes on one PostgreSQL, the local model server streaming slowly.
Per round, ``--samples`` times each:

- chat cancel: a chat streams on A; ``/v3/chat/cancel`` goes to B; the time from sending
  it until A closes its model stream (seen by the model server);
- run cancel: a workflow run's llm node waits on A; ``/coze_lab/api/runs/{id}/cancel`` goes
  to B; the same time;
- re-attach: a client leaves A's chat stream after 20 events and opens ``/v3/chat/events``
  on B with ``Last-Event-ID``: the time to its first event.

Without LISTEN/NOTIFY a chat on PostgreSQL would not see the cancel before its answer ends,
and a run would see it at its next lease renewal (``workflow_lease_s / 3``, 10 s by default).

    python bench/replicas.py [--pg URL] [--samples 10]
"""

from __future__ import annotations

import argparse
import secrets
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _common import ROUNDS, Figures, banner  # noqa: E402

from coze_lab.testing import ModelServer, TextReply  # noqa: E402
from tests.replicas.test_replicas import ANSWER, Replicas, start_chat  # noqa: E402

PG_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


@contextmanager
def schema(pg: str) -> Iterator[str]:
    name = "bench_" + secrets.token_hex(6)
    admin = create_engine(pg)
    with admin.begin() as connection:
        connection.execute(text(f'create schema "{name}"'))
    try:
        url = make_url(pg).update_query_dict({"options": f"-csearch_path={name}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'drop schema "{name}" cascade'))
        admin.dispose()


def until_disconnect(server: ModelServer, before: int, sent: float) -> float:
    while server.disconnects == before:
        if time.monotonic() - sent > 30:
            raise RuntimeError("the work was not stopped within 30 s")
        time.sleep(0.002)
    return (time.monotonic() - sent) * 1000


def chat_cancel(pair: Replicas, bot_id: str) -> float:
    server = pair.model_server
    server.script([TextReply(ANSWER)])
    chat, _, _ = start_chat(pair.coze(pair.a), bot_id, 10)
    before = server.disconnects
    sent = time.monotonic()
    pair.coze(pair.b).chat.cancel(conversation_id=chat.conversation_id, chat_id=chat.id)
    return until_disconnect(server, before, sent)


def run_cancel(pair: Replicas, workflow_id: str) -> float:
    server = pair.model_server
    server.script([TextReply(ANSWER, delay=30)])
    asked = len(server.requests)
    run = pair.coze(pair.a).workflows.runs.create(
        workflow_id=workflow_id, parameters={"topic": "rivers"}, is_async=True
    )
    while len(server.requests) == asked:
        time.sleep(0.005)
    before = server.disconnects
    sent = time.monotonic()
    httpx.post(
        f"{pair.b.url}/coze_lab/api/runs/{run.execute_id}/cancel", headers=pair.headers(), json={}
    ).raise_for_status()
    return until_disconnect(server, before, sent)


def reattach(pair: Replicas, bot_id: str) -> float:
    pair.model_server.script([TextReply(ANSWER)])
    chat, _, seen = start_chat(pair.coze(pair.a), bot_id, 20)
    first = threading.Event()
    sent = time.monotonic()
    with httpx.stream(
        "GET",
        f"{pair.b.url}/v3/chat/events",
        headers=pair.headers(**{"Last-Event-ID": str(seen)}),
        params={"conversation_id": chat.conversation_id, "chat_id": chat.id},
        timeout=30,
    ) as response:
        for line in response.iter_lines():
            if line.startswith("id: "):
                first.set()
                break
    took = (time.monotonic() - sent) * 1000
    pair.coze(pair.a).chat.cancel(conversation_id=chat.conversation_id, chat_id=chat.id)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg", default=PG_DEFAULT)
    parser.add_argument("--samples", type=int, default=10)
    args = parser.parse_args()
    banner("replicas", "a cancel sent to replica B, work on replica A (PostgreSQL NOTIFY)")
    figures = Figures(ROUNDS)
    rows: dict[str, list[float]] = {
        "chat cancel B→A, p50 ms": [],
        "chat cancel B→A, max ms": [],
        "run cancel B→A, p50 ms": [],
        "run cancel B→A, max ms": [],
        "re-attach via B, first event ms": [],
    }
    with (
        TemporaryDirectory() as tmp,
        schema(args.pg) as database,
        ModelServer(chunk_delay=0.05) as server,
    ):
        pair = Replicas(Path(tmp), database, server)
        try:
            bot_id, workflow_id = pair.bot(), pair.workflow()
            for _ in range(ROUNDS):
                chats = sorted(chat_cancel(pair, bot_id) for _ in range(args.samples))
                runs = sorted(run_cancel(pair, workflow_id) for _ in range(args.samples))
                again = [reattach(pair, bot_id) for _ in range(args.samples)]
                rows["chat cancel B→A, p50 ms"].append(chats[len(chats) // 2])
                rows["chat cancel B→A, max ms"].append(chats[-1])
                rows["run cancel B→A, p50 ms"].append(runs[len(runs) // 2])
                rows["run cancel B→A, max ms"].append(runs[-1])
                rows["re-attach via B, first event ms"].append(sorted(again)[len(again) // 2])
        finally:
            pair.stop()
    for name, values in rows.items():
        figures.add(name, values, "ms", digits=1)
    figures.note("samples per round", str(args.samples))
    figures.print()


if __name__ == "__main__":
    main()
