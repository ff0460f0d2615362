"""The notebook's one transport: a small HTTP client over the studio API (``cl.connect()``,
``cl.Bot``, ``cl.Plugin``, ``wf.publish``, ``wf.run``, ``cl.runs`` and the widgets).

The same paths answer inside a Jupyter server (``<base_url>coze_lab/api/...``, the Jupyter
token or JupyterHub token) and on ``coze-lab serve`` (``/coze_lab/api/...``, a personal
access token without scopes). Every call unwraps the Coze envelope and raises
:class:`StudioError` with the server's ``code`` and ``msg``.

>>> studio = StudioClient("http://127.0.0.1:8765", "pat_...")      # doctest: +SKIP
>>> studio.me()["name"]                                     # doctest: +SKIP
'alice'
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Self

import httpx

from coze_lab.core.errors import (
    Conflict,
    InvalidParameter,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
)

API = "coze_lab/api"


class StudioError(Exception):
    """A studio API failure: the Coze ``code`` and ``msg`` (code -1: no envelope).

    A failure the server names with a domain error's code is also an instance of that
    error (``InvalidParameter``, ``NotFound``, ...), as it would be in-process.
    """

    def __init__(self, code: int, msg: str, status: int = 0) -> None:
        super().__init__(f"[{code}] {msg}")
        self.code = code
        self.msg = msg
        self.status = status

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it in a notebook: the server's answer, without the frames
        of the HTTP client that carried it."""
        return [f"{type(self).__name__}: {self}"]


#: the domain errors by (code, HTTP status): codes are Coze's, and one code can stand for
#: two errors (4000 is a bad parameter with 400 and a body too large with 413)
_DOMAIN_ERRORS = {
    (kind.code, kind.status): kind
    for kind in (
        InvalidParameter,
        Unauthenticated,
        PermissionDenied,
        NotFound,
        Conflict,
        PayloadTooLarge,
        Unavailable,
    )
}
_BY_CODE = {code: kind for (code, _), kind in reversed(list(_DOMAIN_ERRORS.items()))}
_MIXED: dict[type[Exception], type[StudioError]] = {}


def studio_error(code: int, msg: str, status: int = 0) -> StudioError:
    """The StudioError for an error body, typed by its code (and status) when it is a domain
    error's.

    Example:
        >>> isinstance(studio_error(4000, "bad"), InvalidParameter)
        True
        >>> isinstance(studio_error(4000, "too big", 413), PayloadTooLarge)
        True
    """
    kind = _DOMAIN_ERRORS.get((code, status)) or _BY_CODE.get(code)
    if kind is None:
        return StudioError(code, msg, status)
    mixed = _MIXED.get(kind)
    if mixed is None:
        mixed = _MIXED[kind] = type(f"Studio{kind.__name__}", (StudioError, kind), {})
    return mixed(code, msg, status)


@dataclass(frozen=True)
class SseEvent:
    """One server-sent event: ``id`` (0 when absent), ``event`` and the decoded ``data``."""

    id: int
    event: str
    data: Any


def parse_sse(lines: Iterator[str]) -> Iterator[SseEvent]:
    """Server-sent events from text lines (comments and keep-alives skipped).

    >>> list(parse_sse(iter(["id: 3", "event: done", 'data: {"a": 1}', ""])))
    [SseEvent(id=3, event='done', data={'a': 1})]
    """
    fields: dict[str, str] = {}
    data: list[str] = []
    for line in _terminated(lines):
        if not line:
            if data or fields.get("event"):
                yield _event(fields, data)
            fields, data = {}, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        else:
            fields[name] = value


def _terminated(lines: Iterator[str]) -> Iterator[str]:
    yield from lines
    yield ""


def _event(fields: dict[str, str], data: list[str]) -> SseEvent:
    raw = "\n".join(data)
    try:
        value: Any = json.loads(raw) if raw else None
    except json.JSONDecodeError:
        value = raw
    ident = fields.get("id", "")
    return SseEvent(int(ident) if ident.isdigit() else 0, fields.get("event", ""), value)


class StudioClient:
    """The studio API of one server, as one user.

    ``url`` is the server's base URL (a Jupyter server's, with its ``base_url``, or a
    ``coze-lab serve``); ``token`` a Jupyter/JupyterHub token or a personal access token
    (``pat_...``, sent as ``Bearer``). ``page_base`` is the Jupyter base path the browser
    uses for the same server (widgets then call it directly), ``None`` when the page cannot
    reach this server. ``space_id`` is the space the client works in (``studio.space()``):
    what it lists and creates is that space's; None: the personal space.

    >>> studio = cl.connect()                       # doctest: +SKIP
    >>> [w["name"] for w in studio.workflows()]     # doctest: +SKIP
    ['doc_review']
    """

    def __init__(
        self,
        url: str,
        token: str = "",
        *,
        page_base: str | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        space_id: str | None = None,
    ) -> None:
        self.url = url if url.endswith("/") else url + "/"
        self.token = token
        self.page_base = page_base
        self.space_id = space_id
        self._transport = transport
        self._timeout = timeout
        headers = {"Accept": "application/json"}
        if token:
            scheme = "Bearer" if token.startswith("pat_") else "token"
            headers["Authorization"] = f"{scheme} {token}"
        self._http = httpx.Client(
            base_url=self.url + API, headers=headers, timeout=timeout, transport=transport
        )

    def __repr__(self) -> str:
        where = f", space_id={self.space_id!r}" if self.space_id else ""
        return f"{type(self).__name__}({self.url!r}{where})"

    def close(self) -> None:
        self._http.close()

    # ---- plumbing ---------------------------------------------------------------------
    def request(
        self, method: str, path: str, body: Any = None, *, envelope: bool = False, **params: Any
    ) -> Any:
        """Call ``coze_lab/api/<path>`` and return the envelope's ``data`` (or, with
        ``envelope``, the whole body: some answers put a field beside ``data``).

        The client's space goes along as ``space_id`` (lists and creates honour it; the
        other endpoints ignore it: an object knows its space)."""
        query = {k: v for k, v in params.items() if v is not None}
        if self.space_id and "space_id" not in query:
            query["space_id"] = self.space_id
        try:
            response = self._http.request(
                method, "/" + path.lstrip("/"), json=body, params=query or None
            )
        except httpx.HTTPError as exc:
            raise StudioError(-1, f"cannot reach {self.url}: {exc}") from exc
        data = _unwrap(response)
        return response.json() if envelope else data

    def stream(
        self, method: str, path: str, body: Any = None, *, after: int = 0, timeout: float = 60.0
    ) -> Iterator[SseEvent]:
        """Server-sent events of ``coze_lab/api/<path>`` (``Last-Event-ID: after``).

        ``timeout`` bounds the wait for one chunk; the servers send ``: ping`` comments.
        """
        headers = {"Accept": "text/event-stream"}
        if after:
            headers["Last-Event-ID"] = str(after)
        try:
            with self._http.stream(
                method,
                "/" + path.lstrip("/"),
                json=body,
                headers=headers,
                timeout=httpx.Timeout(self._http.timeout.connect, read=timeout),
            ) as response:
                if response.status_code >= 400 or not response.headers.get(
                    "content-type", ""
                ).startswith("text/event-stream"):
                    response.read()
                    _unwrap(response)
                    raise StudioError(-1, "expected an event stream", response.status_code)
                yield from parse_sse(response.iter_lines())
        except httpx.HTTPError as exc:
            raise StudioError(-1, f"stream from {self.url} broke: {exc}") from exc

    # ---- who and what -----------------------------------------------------------------
    def me(self) -> dict[str, Any]:
        """The current user and workspace: ``{id, name, workspace_id, ...}``."""
        return self.request("GET", "me")

    def health(self) -> dict[str, Any]:
        return self.request("GET", "health")

    # ---- spaces -----------------------------------------------------------------------
    def spaces(self) -> list[dict[str, Any]]:
        """Your spaces: ``[{id, name, workspace_type, role, ...}]`` (personal and team)."""
        return self.request("GET", "spaces")["spaces"]

    def space(self, ref: str | int) -> Self:
        """A client of the same server working in one of your spaces, named by id, by name
        or ``"personal"``: what it lists and creates (bots, workflows, plugins, tables) is
        that space's.

        >>> team = studio.space("team-a")                 # doctest: +SKIP
        >>> team.create_bot(name="helper")                # doctest: +SKIP
        """
        found = self._find_space(ref)
        return type(self)(
            self.url,
            self.token,
            page_base=self.page_base,
            transport=self._transport,
            timeout=self._timeout,
            space_id=None if found["workspace_type"] == "personal" else found["id"],
        )

    def create_space(self, name: str) -> Self:
        """A new team space (you are its owner), and a client working in it."""
        made = self.request("POST", "spaces", {"name": name})
        return self.space(made["id"])

    def members(self) -> list[dict[str, Any]]:
        """The members of this client's space: ``[{user_id, name, role, joined_at}]``."""
        return self.request("GET", f"spaces/{self._space()}/members")["members"]

    def add_member(self, name: str, role: str = "member") -> dict[str, Any]:
        """Add a user (by name) to this client's team space as ``member`` or ``admin``."""
        return self.request("POST", f"spaces/{self._space()}/members", {"name": name, "role": role})

    def remove_member(self, user: str | int) -> None:
        """Remove a member (by name or user id); removing yourself leaves the space."""
        ident = str(user)
        if not ident.isdigit():
            match = [m for m in self.members() if m["name"] == ident]
            if not match:
                raise studio_error(4200, f"{ident} is not a member of this space", 404)
            ident = match[0]["user_id"]
        self.request("DELETE", f"spaces/{self._space()}/members/{ident}")

    def _space(self) -> str:
        return self.space_id or str(self.me()["workspace_id"])

    def _find_space(self, ref: str | int) -> dict[str, Any]:
        spaces = self.spaces()
        ref = str(ref)
        if ref.isdigit():
            found = [s for s in spaces if s["id"] == ref]
        elif ref == "personal":
            found = [s for s in spaces if s["workspace_type"] == "personal"]
        else:
            found = [s for s in spaces if s["name"] == ref]
        if not found:
            raise studio_error(4200, f"you are in no space {ref!r}", 404)
        if len(found) > 1:
            ids = ", ".join(s["id"] for s in found)
            raise studio_error(4000, f"several of your spaces are called {ref!r} ({ids})", 400)
        return found[0]

    # ---- workflows and runs -----------------------------------------------------------
    def workflows(self) -> list[dict[str, Any]]:
        return self.request("GET", "workflows")["workflows"]

    def save_workflow(self, definition: Any, *, publish: bool = False) -> dict[str, Any]:
        """Save a definition (a ``cl.Workflow`` or its JSON) as the draft (upsert by name)."""
        spec = definition.to_json() if hasattr(definition, "to_json") else definition
        return self.request("POST", "workflows", {"definition": spec, "publish": publish})

    def publish_workflow(self, workflow_id: str) -> int:
        return int(self.request("POST", f"workflows/{workflow_id}/publish")["version"])

    def start_run(
        self, workflow_id: str, inputs: dict[str, Any] | None = None, *, workspace: bool = False
    ) -> str:
        """Run a stored workflow's draft on the server; returns the run id at once.
        ``workspace``: the run gets a workspace of its own (``<space>/run-<id>/``)."""
        body: dict[str, Any] = {"parameters": inputs or {}}
        if workspace:
            body["workspace"] = True
        return str(self.request("POST", f"workflows/{workflow_id}/runs", body)["execute_id"])

    def run_info(self, run_id: str | int) -> dict[str, Any]:
        """The run's trace: status, inputs, outputs, error, every node's record."""
        return self.request("GET", f"runs/{run_id}")

    def activity(
        self, *, run_id: str | int | None = None, conversation_id: str | int | None = None
    ) -> dict[str, Any]:
        """A run's or a conversation's timeline and run state (``state``, ``items``, ``usage``)."""
        if (run_id is None) == (conversation_id is None):
            raise ValueError("give run_id or conversation_id")
        if run_id is not None:
            return self.request("GET", f"runs/{run_id}/activity")
        return self.request("GET", f"conversations/{conversation_id}/activity")

    def runs(self, workflow_id: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        return self.request("GET", "runs", workflow_id=workflow_id, limit=limit)["runs"]

    def events(self, run_id: str | int, after: int = 0) -> Iterator[SseEvent]:
        """A run's events from ``after`` on, until it stops or pauses."""
        return self.stream("GET", f"runs/{run_id}/events", after=after)

    def cancel(self, run_id: str | int) -> bool:
        return bool(self.request("POST", f"runs/{run_id}/cancel")["canceled"])

    def retry(
        self,
        run_id: str | int,
        from_node: str | None = None,
        node_changes: dict[str, dict[str, Any]] | None = None,
    ) -> str:
        """Retry a failed or canceled run from a node as a new run; returns its id."""
        body: dict[str, Any] = {"node_changes": node_changes or {}}
        if from_node is not None:
            body["from_node"] = from_node
        return str(self.request("POST", f"runs/{run_id}/retry", body)["execute_id"])

    def pending(self, run_id: str | int | None = None) -> list[dict[str, Any]]:
        """Open questions across your runs (or one run's)."""
        return self.request("GET", "interrupts", run_id=run_id)["interrupts"]

    def resume(self, event_id: str | int, data: Any) -> dict[str, Any]:
        """Answer a pending question/input: ``studio.resume(event_id, "yes")``."""
        return self.request("POST", f"interrupts/{event_id}/resume", {"data": data})

    # ---- bots and chat ----------------------------------------------------------------
    def bots(self) -> list[dict[str, Any]]:
        data = self.request("GET", "bots")
        return data.get("bots", data.get("items", [])) if isinstance(data, dict) else data

    def bot(self, bot_id: str) -> dict[str, Any]:
        return self.request("GET", f"bots/{bot_id}")

    def create_bot(self, **fields: Any) -> dict[str, Any]:
        """Create a bot: ``create_bot(name="helper", prompt="...", model_id="default")``."""
        return self.request("POST", "bots", fields)

    def update_bot(self, bot_id: str, **fields: Any) -> dict[str, Any]:
        return self.request("PUT", f"bots/{bot_id}", fields)

    def publish_bot(self, bot_id: str, connector_ids: list[str] | None = None) -> Any:
        """Publish the draft to connectors (``"1024"`` API, ``"999"`` Web SDK)."""
        ids = connector_ids or ["1024", "999"]
        return self.request("POST", f"bots/{bot_id}/publish", {"connector_ids": ids})

    def chat_stream(
        self,
        bot_id: str,
        message: str,
        *,
        conversation_id: str | None = None,
        custom_variables: dict[str, str] | None = None,
    ) -> Iterator[SseEvent]:
        """Chat with a bot's draft (Playground): Coze ``/v3/chat`` events as they stream."""
        body: dict[str, Any] = {"message": message, "stream": True}
        if conversation_id:
            body["conversation_id"] = conversation_id
        if custom_variables:
            body["custom_variables"] = custom_variables
        return self.stream("POST", f"bots/{bot_id}/chat", body, timeout=120.0)

    def submit_tool_outputs(
        self, conversation_id: str, chat_id: str, outputs: list[dict[str, str]]
    ) -> Iterator[SseEvent]:
        """The outputs of a chat's client functions (``requires_action``): the chat's events
        as it goes on."""
        body = {"conversation_id": conversation_id, "tool_outputs": outputs, "stream": True}
        return self.stream("POST", f"chats/{chat_id}/submit_tool_outputs", body, timeout=120.0)

    def chat_events(
        self, chat_id: str, conversation_id: str | None = None, *, after: int = 0
    ) -> Iterator[SseEvent]:
        """Re-attach to a Playground chat (running or finished): its events numbered after
        ``after`` (each with its ``id``), until ``done``."""
        path = f"chats/{chat_id}/events"
        if conversation_id:
            path += f"?conversation_id={conversation_id}"
        return self.stream("GET", path, after=after, timeout=120.0)

    def cancel_chat(self, chat_id: str) -> Any:
        return self.request("POST", f"chats/{chat_id}/cancel")

    def conversations(self, bot_id: str) -> list[dict[str, Any]]:
        data = self.request("GET", f"bots/{bot_id}/conversations")
        return data.get("conversations", []) if isinstance(data, dict) else data

    def messages(self, conversation_id: str) -> list[dict[str, Any]]:
        data = self.request("GET", f"conversations/{conversation_id}/messages")
        return data.get("messages", data.get("data", [])) if isinstance(data, dict) else data

    def clear(self, conversation_id: str) -> Any:
        """Start a new context window (section); the messages stay."""
        return self.request("POST", f"conversations/{conversation_id}/clear")

    # ---- long-term memory ---------------------------------------------------------------
    def memory(self) -> dict[str, Any]:
        """Your memory in this client's space: ``{user, skills, changes, jobs}``."""
        return self.request("GET", "memory")

    def put_memory(self, path: str, content: str) -> dict[str, Any]:
        """Replace ``user.md`` or ``skills/<name>.md`` with ``content``."""
        return self.request("PUT", _memory_route(path), {"content": content})

    def delete_memory(self, path: str) -> Any:
        """Forget ``user.md`` or ``skills/<name>.md``."""
        return self.request("DELETE", _memory_route(path))

    # ---- personal access tokens -------------------------------------------------------
    def tokens(self) -> list[dict[str, Any]]:
        data = self.request("GET", "tokens")
        return data.get("tokens", []) if isinstance(data, dict) else data

    def create_token(self, name: str, **options: Any) -> dict[str, Any]:
        """A new personal access token (``token`` is in the answer once, never again).

        Options: ``expires_in_days``, ``scopes`` (``["chat", ...]``), ``connector_id``.
        """
        return self.request("POST", "tokens", {"name": name, **options})

    def revoke_token(self, token_id: str) -> None:
        self.request("DELETE", f"tokens/{token_id}")


def _unwrap(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("code"), int):
        if body["code"] != 0:
            raise studio_error(body["code"], str(body.get("msg", "")), response.status_code)
        if response.status_code < 400:
            return body.get("data")
    detail = response.text[:200] if body is None else str(body)[:200]
    raise StudioError(-1, f"HTTP {response.status_code}: {detail}", response.status_code)


def _memory_route(path: str) -> str:
    """The studio route of a memory document.

    >>> _memory_route("skills/csv.md"), _memory_route("user.md")
    ('memory/skills/csv', 'memory/user')
    """
    if path in ("user", "user.md"):
        return "memory/user"
    name = path.removeprefix("skills/").removesuffix(".md")
    return f"memory/skills/{name}"
