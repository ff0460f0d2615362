"""50 simulated hub users through the hub's proxy (``bench/hub.py`` part 3).

A real JupyterHub (the demo hub of ``make hub``: DummyAuthenticator, configurable-http-proxy)
with ``coze-lab serve`` as its service on one PostgreSQL; the users are created through the
hub's REST API and each gets a hub API token there. Each user has a published bot (the local
model server answers) and a workflow whose question node asks them something. Every user
loops: a streamed chat (``/v3/chat``), then a workflow run (``stream_run`` → the question →
``stream_resume`` → done), all at ``<hub>/services/coze-lab/``.

Run against 2 and then 1 service replicas: the second is a ``coze-lab serve`` with the
hub-managed one's environment, both binding the port with ``reuse_port`` (SO_REUSEPORT: the
kernel spreads the proxy's connections over them; each round prints each replica's CPU, so
an idle replica shows). CPU seconds of each process group per
operation come from ``/proc``.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import coze_lab as cl
from coze_lab.hub.demo import DemoHub, free_port
from coze_lab.testing import ModelServer

SERVICE = "services/coze-lab"
CLK = os.sysconf("SC_CLK_TCK")

ask = cl.Workflow("ask", description="One question to the user")
ask.inputs(topic=str)
ask.question("pick", question="Which {{start.topic}}?", choices=["red", "blue"])
ask.end(answer="{{pick.answer}}")


# ---- processes and their CPU ------------------------------------------------------------------
def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK


def postgres_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "postgres":
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


@dataclass
class Groups:
    """The processes whose CPU a round reads."""

    proxy: list[int]
    hub: list[int]
    replicas: list[int]

    def sample(self) -> dict[str, dict[int, float]]:
        """CPU seconds per process of each group."""
        return {
            "proxy": {p: cpu_s(p) for p in self.proxy},
            "hub": {p: cpu_s(p) for p in self.hub},
            "service": {p: cpu_s(p) for p in self.replicas},
            # every postgres process, other users of this server included
            "postgres": {p: cpu_s(p) for p in postgres_pids()},
            "load generator + model server": {0: sum(os.times()[:2])},
        }


def cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two samples by the processes alive at the second (one
    started meanwhile counts whole; one that ended meanwhile is lost)."""
    return sum(value - before.get(pid, 0.0) for pid, value in after.items())


# ---- the hub ------------------------------------------------------------------------------
@dataclass
class BenchHub:
    demo: DemoHub
    admin_token: str
    process: subprocess.Popen[bytes]
    model: ModelServer
    tokens: dict[str, str] = field(default_factory=dict)
    extra: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def service(self) -> str:
        return self.demo.url + SERVICE

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"token {self.admin_token}"}
        return httpx.request(
            method, self.demo.url + "hub/api/" + path, headers=headers, timeout=60, **kwargs
        )

    def replica_pids(self) -> list[int]:
        port = str(self.demo.service_port)
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                line = _cmdline(int(entry.name))
                if "serve" in line and port in line and "coze_lab.cli" in line:
                    found.append(int(entry.name))
        return sorted(found)

    def proxy_pids(self) -> list[int]:
        pid = int((self.demo.root / "proxy.pid").read_text().strip())
        return [pid, *_children(pid)]

    def add_replica(self) -> None:
        """A second ``coze-lab serve`` on the same port, with the managed one's environment."""
        first = self.replica_pids()[0]
        raw = Path(f"/proc/{first}/environ").read_bytes().split(b"\0")
        env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
        log = (self.demo.root / "replica2.log").open("ab")
        proc = subprocess.Popen(
            _cmdline(first)[:-1] if _cmdline(first)[-1] == "" else _cmdline(first),
            env=env,
            cwd=Path(f"/proc/{first}/cwd").resolve(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.extra.append(proc)
        deadline = time.monotonic() + 60
        while "listening on" not in (self.demo.root / "replica2.log").read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the second replica did not start")
            time.sleep(0.2)

    def remove_replica(self) -> None:
        """Stop the replica ``add_replica`` started."""
        proc = self.extra.pop()
        proc.terminate()
        proc.wait(30)

    def stop(self) -> None:
        for proc in self.extra:
            proc.terminate()
            proc.wait(30)
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()


@contextmanager
def hub(database_url: str, root: Path, users: list[str]) -> Iterator[BenchHub]:
    admin_token = secrets.token_hex(24)
    with ModelServer() as model:
        demo = DemoHub(
            root=root,
            database_url=database_url,
            port=free_port(),
            hub_port=free_port(),
            proxy_api_port=free_port(),
            service_port=free_port(),
            users=users,
            admins=[],
            environment={
                "OPENAI_BASE_URL": model.url,
                "OPENAI_API_KEY": "bench",
                "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
                "COZE_LAB_REUSE_PORT": "1",
            },
            extra=f"""
c.JupyterHub.services.append({{"name": "bench-admin", "api_token": {admin_token!r}}})
c.JupyterHub.load_roles.append({{
    "name": "bench-admin",
    "scopes": ["admin:users", "tokens"],
    "services": ["bench-admin"],
}})
""",
        )
        root.mkdir(parents=True, exist_ok=True)
        with (root / "hub.log").open("ab") as log:
            process = subprocess.Popen(
                demo.command(), cwd=root, stdout=log, stderr=subprocess.STDOUT
            )
        bench = BenchHub(demo, admin_token, process, model)
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(bench.service + "/healthz", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the hub did not start; see " + str(root / "hub.log"))
                time.sleep(0.5)
            made = bench.api("POST", "users", json={"usernames": users})
            assert made.status_code in (201, 409), made.text
            for user in users:
                reply = bench.api(
                    "POST", f"users/{user}/tokens", json={"note": "bench", "expires_in": 7200}
                )
                assert reply.status_code == 201, reply.text
                bench.tokens[user] = reply.json()["token"]
            yield bench
        finally:
            bench.stop()


# ---- what each user has and does ----------------------------------------------------------
async def prepare_user(client: httpx.AsyncClient, token: str) -> tuple[str, str]:
    """The user's published bot and workflow (through the proxy, with the hub token)."""
    headers = {"Authorization": f"Bearer {token}"}
    spaces = (await client.get("/v1/workspaces", headers=headers)).json()
    space = spaces["data"]["workspaces"][0]["id"]
    bot = (
        await client.post(
            "/v1/bot/create",
            headers=headers,
            json={"space_id": space, "name": "Helper", "prompt_info": {"prompt": "Help."}},
        )
    ).json()
    bot_id = bot["data"]["bot_id"]
    published = await client.post(
        "/v1/bot/publish", headers=headers, json={"bot_id": bot_id, "connector_ids": ["1024"]}
    )
    assert published.json()["code"] == 0, published.text
    saved = await client.post(
        "/coze_lab/api/workflows",
        headers=headers,
        json={"definition": ask.to_json(), "publish": True},
    )
    assert saved.status_code == 201, saved.text
    return bot_id, saved.json()["data"]["id"]


async def sse(response: httpx.Response) -> Any:
    """(event, data) of an SSE response as they arrive."""
    fields: dict[str, str] = {}
    async for line in response.aiter_lines():
        if not line:
            if "event" in fields:
                yield fields["event"], json.loads(fields.get("data") or "null")
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.lstrip(" ")


@dataclass
class Tally:
    first_delta_ms: list[float] = field(default_factory=list)
    chat_ms: list[float] = field(default_factory=list)
    run_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def chat_once(client: httpx.AsyncClient, token: str, bot_id: str, tally: Tally) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    body = {
        "bot_id": bot_id,
        "user_id": "u",
        "stream": True,
        "additional_messages": [{"role": "user", "content": "Hello there", "content_type": "text"}],
    }
    began = time.perf_counter()
    first = None
    completed = False
    async with client.stream("POST", "/v3/chat", headers=headers, json=body) as response:
        async for event, _data in sse(response):
            if event == "conversation.message.delta" and first is None:
                first = time.perf_counter()
            if event == "conversation.chat.completed":
                completed = True
            if event == "conversation.chat.failed":
                tally.errors.append(f"chat failed: {_data}")
    if not completed or first is None:
        tally.errors.append(f"chat did not complete ({response.status_code})")
        return
    tally.first_delta_ms.append((first - began) * 1000)
    tally.chat_ms.append((time.perf_counter() - began) * 1000)


async def run_once(client: httpx.AsyncClient, token: str, workflow_id: str, tally: Tally) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    began = time.perf_counter()
    interrupt = None
    body = {"workflow_id": workflow_id, "parameters": {"topic": "colour"}}
    async with client.stream(
        "POST", "/v1/workflow/stream_run", headers=headers, json=body
    ) as response:
        async for event, data in sse(response):
            if event == "Interrupt":
                interrupt = data["interrupt_data"]
    if interrupt is None:
        tally.errors.append(f"run asked nothing ({response.status_code})")
        return
    resume = {
        "workflow_id": workflow_id,
        "event_id": interrupt["event_id"],
        "resume_data": "blue",
        "interrupt_type": interrupt["type"],
    }
    done = False
    async with client.stream(
        "POST", "/v1/workflow/stream_resume", headers=headers, json=resume
    ) as response:
        async for event, data in sse(response):
            if event == "Message" and data.get("node_is_finish") and "blue" in data["content"]:
                done = True
            if event == "Error":
                tally.errors.append(f"run failed: {data}")
    if not done:
        tally.errors.append("run did not finish with the answer")
        return
    tally.run_ms.append((time.perf_counter() - began) * 1000)


async def users_round(
    service: str, users: list[tuple[str, str, str]], per_user: int
) -> tuple[Tally, float]:
    """Every user does ``per_user`` (chat, run) pairs at once; (tally, seconds)."""
    tally = Tally()
    limits = httpx.Limits(max_connections=len(users) * 2, max_keepalive_connections=len(users))
    async with httpx.AsyncClient(base_url=service, timeout=120, limits=limits) as client:

        async def user(token: str, bot_id: str, workflow_id: str) -> None:
            for _ in range(per_user):
                try:
                    await chat_once(client, token, bot_id, tally)
                    await run_once(client, token, workflow_id, tally)
                except (httpx.HTTPError, KeyError, ValueError) as exc:
                    tally.errors.append(f"{type(exc).__name__}: {exc}")

        began = time.perf_counter()
        await asyncio.gather(*(user(*u) for u in users))
        return tally, time.perf_counter() - began


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def spread(values: list[float], unit: str, digits: int = 0) -> str:
    return (
        f"{min(values):.{digits}f} / {statistics.median(values):.{digits}f} / "
        f"{max(values):.{digits}f} {unit}"
    )


def hub_users(
    database_url: str, root: Path, *, count: int, per_user: int, rounds: int
) -> list[tuple[str, str]]:
    """The hub-users figures (1 then 2 replicas) as (name, value) rows."""
    names = [f"user{i:02d}" for i in range(count)]
    rows: list[tuple[str, str]] = []
    with hub(database_url, root, names) as bench:

        async def setup() -> list[tuple[str, str, str]]:
            async with httpx.AsyncClient(base_url=bench.service, timeout=60) as client:
                made = []
                for name in names:  # one at a time: set-up is not measured
                    made.append(
                        (bench.tokens[name], *await prepare_user(client, bench.tokens[name]))
                    )
                return made

        # the proxy keeps its connections to the service open and reuses them: the second
        # replica listens before any traffic, so the kernel spreads those connections over
        # both; for one replica it stops, its connections close and the proxy reconnects to
        # the first (the warm-up round absorbs that)
        bench.add_replica()
        users = asyncio.run(setup())
        medians: dict[int, float] = {}
        for replicas in (2, 1):
            if replicas == 1:
                bench.remove_replica()
            asyncio.run(users_round(bench.service, users, 1))  # warm-up
            groups = Groups(bench.proxy_pids(), [bench.process.pid], bench.replica_pids())
            rates, first, done, errors = [], [], [], 0
            cpu: dict[str, list[float]] = {}
            busy: list[float] = []
            for _ in range(rounds):
                before, machine = groups.sample(), machine_busy()
                tally, elapsed = asyncio.run(users_round(bench.service, users, per_user))
                after, machine_after = groups.sample(), machine_busy()
                ops = len(tally.chat_ms) + len(tally.run_ms)
                rates.append(ops / elapsed)
                first.append(pct(tally.first_delta_ms, 0.5))
                first.append(pct(tally.first_delta_ms, 0.95))
                done.append(pct(tally.run_ms, 0.5))
                done.append(pct(tally.run_ms, 0.95))
                errors += len(tally.errors)
                for message in tally.errors[:3]:
                    print("   error:", message, flush=True)
                for key in before:
                    spent = cpu_delta(before[key], after[key])
                    cpu.setdefault(key, []).append(spent / max(ops, 1) * 1000)
                split = [
                    after["service"][p] - before["service"].get(p, 0.0) for p in after["service"]
                ]
                jiffies = machine_after[0] - machine[0], machine_after[1] - machine[1]
                busy.append(100 * jiffies[0] / max(jiffies[1], 1))
                print(
                    f"  {replicas} replica(s): {ops / elapsed:.1f} ops/s, first delta p50 "
                    f"{first[-2]:.0f} ms p95 {first[-1]:.0f} ms, run p50 {done[-2]:.0f} ms "
                    f"p95 {done[-1]:.0f} ms, errors {len(tally.errors)}, CPUs busy "
                    f"{busy[-1]:.0f}%, service CPU s per replica "
                    f"{' / '.join(f'{v:.1f}' for v in split)} ({load()})",
                    flush=True,
                )
            medians[replicas] = statistics.median(rates)
            label = f"hub, {count} users, {replicas} replica(s)"
            rows += [
                (f"{label}: chats + runs per s", f"{spread(rates, 'ops/s', 1)}  ({load()})"),
                (
                    f"{label}: first delta p50 / p95 (median round)",
                    f"{statistics.median(first[0::2]):.0f} / "
                    f"{statistics.median(first[1::2]):.0f} ms  ({load()})",
                ),
                (
                    f"{label}: run start→question→done p50 / p95 (median round)",
                    f"{statistics.median(done[0::2]):.0f} / "
                    f"{statistics.median(done[1::2]):.0f} ms  ({load()})",
                ),
                (f"{label}: errors", f"{errors}  ({load()})"),
                (f"{label}: both CPUs busy", f"{spread(busy, '%')}  ({load()})"),
            ]
            for key, values in cpu.items():
                rows.append(
                    (f"{label}: CPU ms per op, {key}", f"{spread(values, 'ms', 1)}  ({load()})")
                )
            for row in rows[-(5 + len(cpu)) :]:
                print(*row, flush=True)
        rows.append(
            (
                f"hub, {count} users: 2 replicas / 1 replica (medians; target >= 1.7)",
                f"{medians[2] / medians[1]:.2f}  ({load()})",
            )
        )
    return rows


if __name__ == "__main__":  # a quick look: python bench/hub_users.py [PG URL]
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support import pg_schema

    pg = sys.argv[1] if len(sys.argv) > 1 else "postgresql+psycopg://postgres@127.0.0.1:5432/test"
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, pg_schema(pg, "bench_") as url:
        for row in hub_users(url, Path(tmp) / "hub", count=5, per_user=1, rounds=1):
            print(*row)
