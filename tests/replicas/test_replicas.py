"""Two real ``coze-lab serve`` processes (replicas A and B) on one PostgreSQL behave as one.

- a chat started on A is re-attached through B (``/v3/chat/events``, ``Last-Event-ID``) and
  followed there to its end;
- a cancel sent to B stops a chat and a workflow run executing on A: the model stream A
  reads is closed. Without LISTEN/NOTIFY nothing would reach A before the answer ends (on
  PostgreSQL a chat does not poll its status) or before its run's next lease renewal (10 s);
  the bound below is far under both and far over the wake-up (timings: ``bench/replicas.py``);
- A killed with SIGKILL mid-chat and mid-run: B fails the chat within ``chat_lost_after_s``
  with its partial answer kept, and finishes the run (a chat-flow's chat: failed too, its
  run finished by B);
- a chat-flow's chat started on A is re-attached and canceled through B (its run stops).

PostgreSQL only (marker ``postgresql``): selected when ``COZE_LAB_TEST_DATABASE_URL`` is
set, as CI does; a configured server that cannot be reached fails them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cozepy import ChatEventType, ChatStatus, Coze, Message, TokenAuth
from cozepy.bots import BotModelInfo, BotPromptInfo

import coze_lab as cl
from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer, TextReply
from tests.conftest import PG_URL
from tests.support import ServerProcess, pg_schema, read_sse_events, run_cli

pytestmark = pytest.mark.postgresql

WORDS = [f"word{i}" for i in range(400)]
ANSWER = " ".join(WORDS)
#: generous: a NOTIFY arrives in milliseconds; polling would take 10 s or never
STOP_BOUND_S = 3.0
LOST_AFTER_S = 5.0

talk = cl.Workflow("talk", description="One slow model call")


@talk.start
def begin(topic: str):
    """A topic."""


talk.llm("speak", prompt="Talk about {{begin.topic}}")
talk.end(said="{{speak.output}}")

flow = cl.Workflow("flow", description="A chat-flow: one slow model call")
flow.inputs(USER_INPUT=str)
flow.llm("speak", prompt="{{start.USER_INPUT}}")
flow.end(output="{{speak.output}}")


@pytest.fixture
def database() -> Iterator[str]:
    """A fresh schema on the configured PostgreSQL (both replicas use it)."""
    with pg_schema(PG_URL, "r_") as url:
        yield url


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    with ModelServer(chunk_delay=0.05) as server:  # 400 words: a 20 s answer
        yield server


class Replicas:
    def __init__(
        self, tmp_path: Path, database: str, model_server: ModelServer, **settings: str
    ) -> None:
        self.tmp_path, self.database, self.model_server = tmp_path, database, model_server
        self.env = {
            "OPENAI_BASE_URL": model_server.url,
            "OPENAI_API_KEY": "k",
            "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
            **settings,
        }
        runtime = Runtime(CozeLab(data_dir=str(tmp_path / "a"), database_url=database))
        runtime.start()
        self.user = runtime.identity.ensure_user("alice")
        self.token = runtime.tokens.create(self.user.id, "alice")[1]
        bob = runtime.identity.ensure_user("bob")
        self.bob_token = runtime.tokens.create(bob.id, "bob")[1]
        runtime.db.dispose()
        self.a = ServerProcess(tmp_path / "a", database, env=self.env).start()
        self.b = ServerProcess(tmp_path / "b", database, env=self.env).start()

    def coze(self, server: ServerProcess) -> Coze:
        return Coze(auth=TokenAuth(self.token), base_url=server.url)

    def bot(self) -> str:
        coze = self.coze(self.a)
        bot = coze.bots.create(
            space_id=str(self.user.workspace_id),
            name="Talker",
            prompt_info=BotPromptInfo(prompt="Talk."),
            model_info_config=BotModelInfo(model_id="default"),
        )
        coze.bots.publish(bot_id=bot.bot_id, connector_ids=["1024"])
        return bot.bot_id

    def workflow(self, workflow: cl.Workflow = talk) -> str:
        path = self.tmp_path / f"{workflow.name}.json"
        path.write_text(json.dumps(workflow.to_json()))
        args = ["--data-dir", str(self.tmp_path / "a"), "--database-url", self.database]
        made = run_cli(*args, "workflow", "import", str(path), "--user", "alice", "--publish")
        assert made.returncode == 0, made.stderr
        return made.stdout.strip().splitlines()[-1]

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", **extra}

    def stop(self) -> None:
        self.a.stop()
        self.b.stop()


@pytest.fixture
def replicas(tmp_path: Path, database: str, model_server: ModelServer) -> Iterator[Replicas]:
    pair = Replicas(tmp_path, database, model_server, COZE_LAB_CHAT_LOST_AFTER_S="30")
    yield pair
    pair.stop()


def start_chat(coze: Coze, bot_id: str, events: int) -> tuple[Any, str, int]:
    """Chat on a replica and leave after ``events`` events: (chat, text streamed, count)."""
    stream = coze.chat.stream(
        bot_id=bot_id, user_id="u", additional_messages=[Message.build_user_question_text("go")]
    )
    chat, streamed, seen = None, "", 0
    for event in stream:
        seen += 1
        if event.event == ChatEventType.CONVERSATION_CHAT_CREATED:
            chat = event.chat
        if event.event == ChatEventType.CONVERSATION_MESSAGE_DELTA:
            streamed += event.message.content
        if seen == events:
            break
    stream._raw_response.close()  # the client goes away (a reload, a lost network)
    assert chat is not None
    return chat, streamed, seen


def test_a_chat_started_on_a_is_reattached_and_finished_through_b(replicas: Replicas) -> None:
    bot_id = replicas.bot()
    replicas.model_server.chunk_delay = 0.01  # a 4 s answer
    replicas.model_server.script([TextReply(ANSWER)])
    chat, streamed, seen = start_chat(replicas.coze(replicas.a), bot_id, 40)
    assert streamed and len(streamed) < len(ANSWER)

    rest = read_sse_events(
        f"{replicas.b.url}/v3/chat/events",
        replicas.headers(**{"Last-Event-ID": str(seen)}),
        {"conversation_id": chat.conversation_id, "chat_id": chat.id},
    )
    assert [seq for seq, _, _ in rest] == list(range(seen + 1, seen + len(rest) + 1))
    names = [name for _, name, _ in rest]
    assert names[-2:] == ["conversation.chat.completed", "done"]
    deltas = [d["content"] for _, name, d in rest if name == "conversation.message.delta"]
    assert streamed + "".join(deltas) == ANSWER
    completed = [d for _, name, d in rest if name == "conversation.message.completed"]
    assert completed[-1]["content"] == ANSWER
    # B ran nothing: the chat ran on A (one model request), B only followed it
    assert len(replicas.model_server.requests) == 1
    # a reload after the end replays from any point, on either replica
    again = read_sse_events(
        f"{replicas.a.url}/v3/chat/events",
        replicas.headers(),
        {"conversation_id": chat.conversation_id, "chat_id": chat.id, "after": str(seen - 2)},
    )
    assert again[2:] == rest
    # another user's token gets 404, before anything streams
    refused = httpx.get(
        f"{replicas.b.url}/v3/chat/events",
        headers={"Authorization": f"Bearer {replicas.bob_token}"},
        params={"conversation_id": chat.conversation_id, "chat_id": chat.id},
    )
    assert refused.status_code == 404 or refused.json()["code"] != 0


def test_a_cancel_sent_to_b_stops_a_chat_running_on_a(replicas: Replicas) -> None:
    bot_id = replicas.bot()
    replicas.model_server.script([TextReply(ANSWER)])
    chat, streamed, _ = start_chat(replicas.coze(replicas.a), bot_id, 20)
    assert replicas.model_server.disconnects == 0
    sent = time.monotonic()
    canceled = replicas.coze(replicas.b).chat.cancel(
        conversation_id=chat.conversation_id, chat_id=chat.id
    )
    assert canceled.status == ChatStatus.CANCELED
    while replicas.model_server.disconnects == 0 and time.monotonic() - sent < 20:
        time.sleep(0.01)
    stopped = time.monotonic() - sent
    assert replicas.model_server.disconnects == 1, "A kept streaming the canceled chat"
    assert stopped < STOP_BOUND_S, f"A stopped after {stopped:.2f} s: not woken by NOTIFY"
    assert replicas.model_server.completed == 0
    # what was said before the cancel is kept, and the stream through B ends
    rest = read_sse_events(
        f"{replicas.b.url}/v3/chat/events",
        replicas.headers(),
        {"conversation_id": chat.conversation_id, "chat_id": chat.id},
    )
    assert rest[-1][1] == "done"

    def answers() -> list[Any]:
        messages = replicas.coze(replicas.b).chat.messages.list(
            conversation_id=chat.conversation_id, chat_id=chat.id
        )
        return [m for m in messages if m.type == "answer"]

    # what A had kept of the answer is marked canceled by the cancel itself
    kept = answers()
    assert all(m.meta_data == {"canceled": "true"} for m in kept), kept
    # A rewrites it with all it streamed once it has stopped (it may not have yet)
    deadline = time.monotonic() + 20
    while not (kept and streamed in kept[0].content) and time.monotonic() < deadline:
        time.sleep(0.05)
        kept = answers()
    assert len(kept) == 1 and kept[0].meta_data == {"canceled": "true"}
    assert ANSWER.startswith(kept[0].content) and streamed in kept[0].content


def test_a_cancel_sent_to_b_stops_a_run_executing_on_a(replicas: Replicas) -> None:
    workflow_id = replicas.workflow()
    replicas.model_server.script([TextReply(ANSWER, delay=30)])  # the llm node waits 30 s
    started = replicas.coze(replicas.a).workflows.runs.create(
        workflow_id=workflow_id, parameters={"topic": "rivers"}, is_async=True
    )
    while not replicas.model_server.requests:  # the llm node streams on A
        time.sleep(0.02)
    time.sleep(0.3)
    sent = time.monotonic()
    canceled = httpx.post(
        f"{replicas.b.url}/coze_lab/api/runs/{started.execute_id}/cancel",
        headers=replicas.headers(),
        json={},
    )
    assert canceled.json()["data"] == {"canceled": True}, canceled.text
    while replicas.model_server.disconnects == 0 and time.monotonic() - sent < 20:
        time.sleep(0.01)
    stopped = time.monotonic() - sent
    assert replicas.model_server.disconnects == 1, "A kept running the canceled run"
    assert stopped < STOP_BOUND_S, f"A stopped after {stopped:.2f} s: not woken by NOTIFY"
    run = httpx.get(
        f"{replicas.a.url}/coze_lab/api/runs/{started.execute_id}", headers=replicas.headers()
    ).json()["data"]
    assert run["status"] == "canceled"


def test_a_chat_flow_on_a_is_reattached_and_canceled_through_b(replicas: Replicas) -> None:
    workflow_id = replicas.workflow(flow)
    replicas.model_server.chunk_delay = 0.01
    replicas.model_server.script([TextReply(ANSWER), TextReply(ANSWER, delay=30)])

    def leave_after(events: int) -> tuple[Any, int]:
        stream = replicas.coze(replicas.a).workflows.chat.stream(
            workflow_id=workflow_id, additional_messages=[Message.build_user_question_text("go")]
        )
        chat = None
        for seen, event in enumerate(stream, 1):
            chat = chat or event.chat
            if seen == events:
                break
        stream._raw_response.close()
        return chat, events

    chat, seen = leave_after(1)
    params = {"conversation_id": chat.conversation_id, "chat_id": chat.id}
    rest = read_sse_events(
        f"{replicas.b.url}/v3/chat/events", replicas.headers(**{"Last-Event-ID": str(seen)}), params
    )
    assert [seq for seq, _, _ in rest] == list(range(seen + 1, seen + len(rest) + 1))
    assert [name for _, name, _ in rest][-3:] == [
        "conversation.message.completed",
        "conversation.chat.completed",
        "done",
    ]
    assert rest[-3][2]["content"] == ANSWER
    coze_b = replicas.coze(replicas.b)
    assert coze_b.chat.retrieve(**params).status == ChatStatus.COMPLETED

    waiting, _ = leave_after(2)
    while len(replicas.model_server.requests) < 2:  # the run's llm node waits on A
        time.sleep(0.02)
    sent = time.monotonic()
    canceled = coze_b.chat.cancel(conversation_id=waiting.conversation_id, chat_id=waiting.id)
    assert canceled.status == ChatStatus.CANCELED
    run_id = canceled.meta_data["execute_id"]
    run = httpx.get(
        f"{replicas.b.url}/coze_lab/api/runs/{run_id}", headers=replicas.headers()
    ).json()["data"]
    assert run["status"] == "canceled"
    # A stops the run's task (woken by NOTIFY), whichever signal reaches it first
    while f"run {run_id} canceled" not in replicas.a.log() and time.monotonic() - sent < 20:
        time.sleep(0.02)
    assert f"run {run_id} canceled" in replicas.a.log(), replicas.a.log()[-3000:]
    assert time.monotonic() - sent < STOP_BOUND_S
    ended = read_sse_events(
        f"{replicas.b.url}/v3/chat/events",
        replicas.headers(),
        {"conversation_id": waiting.conversation_id, "chat_id": waiting.id},
    )
    assert ended[-1][1] == "done"


def test_a_killed_mid_chat_and_mid_run_b_fails_the_chat_and_finishes_the_run(
    tmp_path: Path, database: str, model_server: ModelServer
) -> None:
    pair = Replicas(
        tmp_path,
        database,
        model_server,
        COZE_LAB_CHAT_LOST_AFTER_S=str(LOST_AFTER_S),
        COZE_LAB_WORKFLOW_LEASE_S="2",
    )
    try:
        bot_id, workflow_id, flow_id = pair.bot(), pair.workflow(), pair.workflow(flow)
        model_server.script(
            [TextReply(ANSWER, delay=30), TextReply(ANSWER), TextReply(ANSWER, delay=30)]
        )
        run = pair.coze(pair.a).workflows.runs.create(
            workflow_id=workflow_id, parameters={"topic": "rivers"}, is_async=True
        )
        while not model_server.requests:  # the run's llm node waits for its answer on A
            time.sleep(0.02)
        chat, streamed, seen = start_chat(pair.coze(pair.a), bot_id, 60)
        flow_stream = pair.coze(pair.a).workflows.chat.stream(
            workflow_id=flow_id, additional_messages=[Message.build_user_question_text("go")]
        )
        flow_chat = next(iter(flow_stream)).chat
        flow_stream._raw_response.close()
        while len(model_server.requests) < 3:  # the chat-flow's llm node waits on A
            time.sleep(0.02)
        # long enough for a few partial writes, and for B to see the chat alive
        time.sleep(4 * LOST_AFTER_S * 0.6 / 3)
        assert len(model_server.requests) == 3 and model_server.completed == 0
        pair.a.kill()  # SIGKILL: no shutdown code runs
        killed = time.monotonic()

        coze_b = pair.coze(pair.b)
        assert (
            coze_b.chat.retrieve(conversation_id=chat.conversation_id, chat_id=chat.id).status
            == ChatStatus.IN_PROGRESS
        )
        # a client re-attached through B sees the failure when it comes
        rest = read_sse_events(
            f"{pair.b.url}/v3/chat/events",
            pair.headers(**{"Last-Event-ID": str(seen)}),
            {"conversation_id": chat.conversation_id, "chat_id": chat.id},
        )
        failed_after = time.monotonic() - killed
        assert [name for _, name, _ in rest][-2:] == ["conversation.chat.failed", "done"]
        assert failed_after < LOST_AFTER_S + 3, f"failed after {failed_after:.1f} s"
        assert "stopped" in rest[-2][2]["last_error"]["msg"]
        deltas = "".join(d["content"] for _, n, d in rest if n == "conversation.message.delta")
        messages = coze_b.chat.messages.list(conversation_id=chat.conversation_id, chat_id=chat.id)
        answers = [m for m in messages if m.type == "answer"]
        assert len(answers) == 1 and answers[0].meta_data == {"partial": "true"}
        kept = answers[0].content
        assert ANSWER.startswith(kept) and kept.startswith(streamed)
        # the deltas B replayed are the ones A logged (logged at most 0.5 s behind the kept
        # answer, which is written every 0.5 s too)
        assert ANSWER.startswith(streamed + deltas)

        # the run: B takes it over once A's lease lapses, and finishes it
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            info = httpx.get(
                f"{pair.b.url}/coze_lab/api/runs/{run.execute_id}", headers=pair.headers()
            ).json()["data"]
            if info["status"] not in ("running",):
                break
            time.sleep(0.2)
        assert info["status"] == "succeeded", info
        assert info["outputs"]["said"]
        assert "recovering run" in pair.b.log()
        # the chat-flow's chat failed with A; its run is finished by B too
        flow_events = read_sse_events(
            f"{pair.b.url}/v3/chat/events",
            pair.headers(),
            {"conversation_id": flow_chat.conversation_id, "chat_id": flow_chat.id},
        )
        assert [name for _, name, _ in flow_events][-2:] == ["conversation.chat.failed", "done"]
        flow_run = flow_chat.meta_data["execute_id"]
        while time.monotonic() < deadline:
            info = httpx.get(
                f"{pair.b.url}/coze_lab/api/runs/{flow_run}", headers=pair.headers()
            ).json()["data"]
            if info["status"] not in ("running",):
                break
            time.sleep(0.2)
        assert info["status"] == "succeeded", info
    finally:
        pair.stop()


# ---- per-replica caches: a revoke or a removal counts on every replica at once -----------
echo = cl.Workflow("echo", description="No model: the topic back")
echo.inputs(topic=str)
echo.end(said="{{start.topic}}")


def run_on(server: ServerProcess, token: str, workflow_id: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/workflow/run",
        headers={"Authorization": f"Bearer {token}"},
        json={"workflow_id": workflow_id, "parameters": {"topic": "rivers"}},
        timeout=30,
    )


def test_a_token_revoked_through_a_is_refused_by_b_on_its_next_request(
    replicas: Replicas,
) -> None:
    """B keeps the tokens it checked in a cache: A's revoke reaches it with the commit's
    NOTIFY, before A answers."""
    workflow_id = replicas.workflow(echo)
    made = httpx.post(
        f"{replicas.a.url}/coze_lab/api/tokens", headers=replicas.headers(), json={"name": "ci"}
    ).json()["data"]
    for _ in range(3):  # checked once, then from B's cache
        ran = run_on(replicas.b, made["token"], workflow_id)
        assert ran.json()["code"] == 0, ran.text
    revoked = httpx.delete(
        f"{replicas.a.url}/coze_lab/api/tokens/{made['id']}", headers=replicas.headers()
    )
    assert revoked.json()["data"]["status"] == "revoked", revoked.text
    refused = run_on(replicas.b, made["token"], workflow_id)
    assert refused.status_code == 401 and "revoked" in refused.json()["msg"], refused.text
    # the replica's other tokens still work from its cache
    assert run_on(replicas.b, replicas.token, workflow_id).json()["code"] == 0


def test_a_member_removed_through_a_is_refused_by_b_on_their_next_request(
    replicas: Replicas,
) -> None:
    """Membership is never cached: bob's token is (on B), his access to the space is not."""
    runtime = Runtime(
        CozeLab(data_dir=str(replicas.tmp_path / "a"), database_url=replicas.database)
    )
    try:
        bob = runtime.identity.ensure_user("bob")
        team = runtime.spaces.create(replicas.user.id, "team")
        runtime.spaces.add_member(replicas.user.id, team.id, "bob", "member")
        workflow = runtime.workflows.save(replicas.user.id, echo.to_json(), space_id=team.id)
        runtime.workflows.publish(replicas.user.id, workflow.id)
    finally:
        runtime.db.dispose()
    for _ in range(2):
        ran = run_on(replicas.b, replicas.bob_token, str(workflow.id))
        assert ran.json()["code"] == 0, ran.text
    removed = httpx.request(
        "DELETE",
        f"{replicas.a.url}/v1/workspaces/{team.id}/members",
        headers=replicas.headers(),
        json={"user_ids": [str(bob.id)]},
    )
    assert removed.json()["data"]["removed_success_user_ids"] == [str(bob.id)], removed.text
    refused = run_on(replicas.b, replicas.bob_token, str(workflow.id))
    assert refused.status_code == 404, refused.text
