"""A local OpenAI-compatible model server: scripted replies for tests, a demo model offline.

``POST /v1/chat/completions`` (streamed or not, ``stream_options.include_usage``),
``POST /v1/embeddings`` (deterministic: see :func:`demo_embedding`) and ``GET /v1/models``.
Tests script the next replies; with nothing scripted the server is the deterministic
*demo model* (see :func:`demo_reply`). It records every chat request body and counts
clients that hang up before their response was complete (cancel tests rely on it).

Example:
    >>> with ModelServer() as srv:  # doctest: +SKIP
    ...     srv.script(["Hello there", ErrorReply(503, "overloaded")])
    ...     spec = srv.spec()  # a ModelSpec pointing at srv.url, function_call on
    ...     # ... call ModelClient().complete(spec, ...) twice, then:
    ...     assert srv.requests[0]["messages"][-1]["role"] == "user"

Command line (``make lab`` uses it as the offline demo model)::

    python -m coze_lab.testing.model_server --port 8799 [--api-key KEY] [--chunk-delay 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import tornado.httpserver
import tornado.iostream
import tornado.netutil
import tornado.web

from coze_lab.core.models.spec import ModelCapabilities, ModelSpec

DEMO_MODEL = "coze-lab-demo"
DEMO_PREFIX = "[demo model]"
ECHO_CHARS = 200
ARGUMENT_PIECE = 8  # characters of tool-call arguments per streamed chunk
log = logging.getLogger(__name__)


# --- replies -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextReply:
    """Answer with ``text`` (streamed word by word). ``delay`` seconds pass before answering.

    ``fail_after``: when streaming, send that many words, then an in-stream error event
    (``{"error": {"message": fail_message}}``) and end the stream, as providers do when a
    generation breaks off. Non-streamed requests get a 500 with ``fail_message`` instead.
    ``disconnect_after``: when streaming, send that many words, then drop the connection
    mid-response (no error event, no end of the chunked body), as a crashed provider does.
    """

    text: str
    delay: float = 0.0
    fail_after: int | None = None
    fail_message: str = "the generation was interrupted"
    disconnect_after: int | None = None


@dataclass(frozen=True)
class ScriptedToolCall:
    """One function call; ``arguments`` is a dict (serialised) or raw JSON text."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        """The arguments as the JSON text the client receives."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True)
class ToolCallsReply:
    """Answer with tool calls (``finish_reason == "tool_calls"``), optionally with text first."""

    calls: Sequence[ScriptedToolCall]
    text: str = ""
    delay: float = 0.0


@dataclass(frozen=True)
class ErrorReply:
    """Answer with an HTTP error in OpenAI's format.

    ``retry`` sets the ``x-should-retry`` header the SDK obeys: by default ``false``, so a
    scripted error reaches the caller once instead of being retried into the next reply.
    ``retry_after`` (seconds) adds a ``retry-after`` header.
    """

    status: int
    message: str
    type: str = "server_error"
    code: str | None = None
    retry: bool = False
    delay: float = 0.0
    retry_after: float | None = None


Reply = TextReply | ToolCallsReply | ErrorReply


def as_reply(item: Reply | str | Mapping[str, Any]) -> Reply:
    """Normalise a scripted item: a reply object, a string (text), or a dict shorthand.

    Dicts: ``{"text": ...}``, ``{"tool_calls": [{"name", "arguments"}]}`` or
    ``{"error": {"status", "message"}}``.

    Example:
        >>> as_reply({"tool_calls": [{"name": "add", "arguments": {"a": 1}}]}).calls[0].name
        'add'
        >>> as_reply({"error": {"status": 429, "message": "slow down"}}).status
        429
    """
    if isinstance(item, TextReply | ToolCallsReply | ErrorReply):
        return item
    if isinstance(item, str):
        return TextReply(item)
    if "error" in item:
        error = dict(item["error"])
        return ErrorReply(int(error.pop("status", 500)), str(error.pop("message", "")), **error)
    if "tool_calls" in item:
        calls = [ScriptedToolCall(**dict(call)) for call in item["tool_calls"]]
        return ToolCallsReply(calls, text=str(item.get("text", "")))
    if "text" in item:
        return TextReply(str(item["text"]), float(item.get("delay", 0.0)))
    raise ValueError(f"cannot script {item!r}: use text, tool_calls or error")


# --- deterministic behaviour ---------------------------------------------------------------


def count_tokens(text: str) -> int:
    """The server's token count: whitespace-separated words.

    Example:
        >>> count_tokens("Hello  big world")
        3
    """
    return len(text.split())


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a message: string content, or its text parts joined by spaces."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return ""


def input_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """Prompt tokens: the words of every message's text content."""
    return sum(count_tokens(message_text(message)) for message in messages)


def demo_reply(body: Mapping[str, Any]) -> Reply:
    """What the demo model answers when nothing is scripted.

    1. After a tool result (last message has role ``tool``): ``[demo model] The tool returned: …``.
    2. Tools offered, ``tool_choice`` not ``"none"``, and the last user message mentions a
       tool's name (or ``tool_choice`` names one): call that tool, with arguments built from its
       JSON schema's *required* properties (see :func:`demo_value`).
    3. ``response_format`` ``json_object`` → ``{"answer": "[demo model] You said: …"}``;
       ``json_schema`` → an object with every property of the schema.
    4. Otherwise: ``[demo model] You said: <last user message, up to 200 characters>``.

    Example:
        >>> demo_reply({"messages": [{"role": "user", "content": "Hi"}]}).text
        '[demo model] You said: Hi'
    """
    messages = [m for m in body.get("messages", []) if isinstance(m, Mapping)]
    last = messages[-1] if messages else {}
    user_text = next((message_text(m) for m in reversed(messages) if m.get("role") == "user"), "")
    if last.get("role") == "tool":
        return TextReply(f"{DEMO_PREFIX} The tool returned: {_short(message_text(last))}")
    tool = _demo_tool(body, user_text) if last.get("role") == "user" else None
    if tool is not None:
        parameters = tool.get("parameters") or {}
        arguments = {
            name: demo_value((parameters.get("properties") or {}).get(name, {}), user_text)
            for name in parameters.get("required", [])
        }
        return ToolCallsReply([ScriptedToolCall(str(tool["name"]), arguments)])
    echo = f"{DEMO_PREFIX} You said: {_short(user_text)}"
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_object":
        return TextReply(json.dumps({"answer": echo}, ensure_ascii=False))
    if response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema") or {}
        answer = {
            name: demo_value(prop, echo) for name, prop in (schema.get("properties") or {}).items()
        }
        return TextReply(json.dumps(answer, ensure_ascii=False))
    return TextReply(echo)


def demo_value(schema: Mapping[str, Any], text: str) -> Any:
    """A value for a JSON-schema property: first ``enum`` value, else by ``type``.

    string → ``text``; integer/number → the first number in ``text`` (else 0);
    boolean → true; array → []; object → {}.

    Example:
        >>> demo_value({"type": "integer"}, "add 2 and 3"), demo_value({"enum": ["c", "f"]}, "")
        (2, 'c')
    """
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind in {"integer", "number"}:
        match = re.search(r"-?\d+(?:\.\d+)?", text)
        number = float(match.group()) if match else 0
        return int(number) if kind == "integer" else number
    return {"boolean": True, "array": [], "object": {}, "null": None}.get(kind, text)


def _demo_tool(body: Mapping[str, Any], user_text: str) -> Mapping[str, Any] | None:
    functions = [
        tool["function"]
        for tool in body.get("tools") or []
        if isinstance(tool, Mapping) and isinstance(tool.get("function"), Mapping)
    ]
    choice = body.get("tool_choice")
    if not functions or choice == "none":
        return None
    if isinstance(choice, Mapping):
        wanted = (choice.get("function") or {}).get("name")
        return next((f for f in functions if f.get("name") == wanted), None)
    lowered = user_text.lower()
    mentioned = [f for f in functions if str(f.get("name", "")).lower() in lowered]
    if mentioned:
        return mentioned[0]
    return functions[0] if choice == "required" else None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ECHO_CHARS else text[: ECHO_CHARS - 1] + "…"


# --- state shared between the test thread and the server thread --------------------------


class _State:
    def __init__(
        self, model: str, api_key: str | None, chunk_delay: float, report_usage: bool
    ) -> None:
        self.model = model
        self.api_key = api_key
        self.chunk_delay = chunk_delay
        self.report_usage = report_usage
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.queue: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.disconnects = 0
        self.completed = 0
        self.counter = 0
        #: embeddings requests answered (they are not in ``requests``: those are chats)
        self.embeddings = 0

    def next_reply(self, body: dict[str, Any]) -> tuple[int, Reply]:
        with self.lock:
            self.counter += 1
            self.requests.append(body)
            reply = self.queue.popleft() if self.queue else None
            number = self.counter
        return number, reply if reply is not None else demo_reply(body)

    def count(self, what: str) -> None:
        with self.changed:
            setattr(self, what, getattr(self, what) + 1)
            self.changed.notify_all()


# --- HTTP ------------------------------------------------------------------------------------


class _Base(tornado.web.RequestHandler):
    state: _State

    def initialize(self, state: _State) -> None:
        self.state = state

    def prepare(self) -> None:
        expected = self.state.api_key
        if expected is not None and self.request.headers.get("Authorization") != (
            f"Bearer {expected}"
        ):
            self.send_openai_error(
                401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
            )

    def send_openai_error(
        self, status: int, message: str, type: str, code: str | None = None
    ) -> None:
        self.set_status(status)
        self.finish({"error": {"message": message, "type": type, "param": None, "code": code}})

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.finish(
            {
                "error": {
                    "message": self._reason,
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            }
        )


class _NotFound(_Base):
    def prepare(self) -> None:
        self.send_openai_error(404, f"no route for {self.request.path}", "invalid_request_error")


class _Models(_Base):
    def get(self) -> None:
        self.finish(
            {
                "object": "list",
                "data": [
                    {
                        "id": self.state.model,
                        "object": "model",
                        "created": 0,
                        "owned_by": "coze_lab",
                    }
                ],
            }
        )


EMBEDDING_DIMS = 256
_WORD = re.compile(r"\w+")


def demo_embedding(text: str, dims: int = EMBEDDING_DIMS) -> list[float]:
    """A deterministic embedding: a hashed bag of lower-cased words (and their 4-character
    prefixes, so "cats" is near "cat"), unit length. Texts that share words are near.

    Example:
        >>> a, b, c = (demo_embedding(t) for t in ("the red cat", "a red cat", "stock prices"))
        >>> dot = lambda x, y: sum(p * q for p, q in zip(x, y))
        >>> dot(a, b) > 0.5 > dot(a, c)
        True
    """
    import hashlib
    import math

    vector = [0.0] * dims
    for word in _WORD.findall(text.lower()):
        for feature, weight in ((word, 1.0), (word[:4], 0.5)):
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            slot = int.from_bytes(digest[:4], "little") % dims
            vector[slot] += weight if digest[4] & 1 else -weight
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


class _Embeddings(_Base):
    def post(self) -> None:
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError:
            self.send_openai_error(400, "the body is not JSON", "invalid_request_error")
            return
        texts = body.get("input") if isinstance(body, dict) else None
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            self.send_openai_error(
                400, "input must be a string or strings", "invalid_request_error"
            )
            return
        self.state.count("embeddings")
        tokens = sum(count_tokens(t) for t in texts)
        self.finish(
            {
                "object": "list",
                "model": body.get("model", self.state.model),
                "data": [
                    {"object": "embedding", "index": i, "embedding": demo_embedding(t)}
                    for i, t in enumerate(texts)
                ],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )


class _ChatCompletions(_Base):
    _closed: asyncio.Event
    _done: bool

    def on_connection_close(self) -> None:
        if not getattr(self, "_done", True):
            self._done = True
            self.state.count("disconnects")
        if hasattr(self, "_closed"):
            self._closed.set()

    async def post(self) -> None:
        self._closed = asyncio.Event()
        self._done = False
        try:
            body = json.loads(self.request.body or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._done = True
            self.send_openai_error(
                400,
                "the body must be a JSON object with a 'messages' list",
                "invalid_request_error",
            )
            return
        number, reply = self.state.next_reply(body)
        stream = bool(body.get("stream"))
        try:
            if reply.delay and await self._wait_closed(reply.delay):
                return
            if isinstance(reply, TextReply) and reply.fail_after is not None and not stream:
                reply = ErrorReply(500, reply.fail_message)
            if isinstance(reply, ErrorReply):
                self._done = True
                self.set_header("x-should-retry", "true" if reply.retry else "false")
                if reply.retry_after is not None:
                    self.set_header("retry-after", str(reply.retry_after))
                self.send_openai_error(reply.status, reply.message, reply.type, reply.code)
            elif stream:
                await self._stream(body, number, reply)
            else:
                usage = self.state.report_usage
                self._complete(_completion(body, number, reply, self.state.model, usage))
        except tornado.iostream.StreamClosedError:
            self.on_connection_close()

    def _complete(self, chunk: dict[str, Any] | None = None) -> None:
        """Count the response as complete *before* its last bytes can reach the client."""
        self._done = True
        self.state.count("completed")
        self.finish(chunk)

    async def _stream(self, body: dict[str, Any], number: int, reply: Reply) -> None:
        stream = getattr(self.request.connection, "stream", None)
        if stream is not None:
            stream.set_nodelay(True)  # small chunks go out at once, as real providers send them
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        include_usage = self.state.report_usage and bool(
            (body.get("stream_options") or {}).get("include_usage")
        )
        *events, last = _stream_events(body, number, reply, self.state.model, include_usage)
        cut = reply.disconnect_after if isinstance(reply, TextReply) else None
        for sent, event in enumerate(events):
            if self._done:
                return
            if cut is not None and sent > cut:  # the role chunk, then ``cut`` words
                self._done = True
                self.request.connection.close()
                return
            self.write(f"data: {event}\n\n")
            await self.flush()
            if self.state.chunk_delay and await self._wait_closed(self.state.chunk_delay):
                return
        self.write(f"data: {last}\n\n")
        self._complete()

    async def _wait_closed(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self._closed.wait(), seconds)
        except asyncio.TimeoutError:
            return False
        return True


def _output(body: Mapping[str, Any], number: int, reply: Reply) -> tuple[list[str], list, str]:
    """Text pieces, ``(id, name, arguments_json)`` calls and the finish reason of a reply."""
    assert not isinstance(reply, ErrorReply)
    pieces = re.findall(r"\s*\S+", reply.text)
    if isinstance(reply, ToolCallsReply):
        calls = [
            (call.id or f"call_{number}_{i}", call.name, call.arguments_json())
            for i, call in enumerate(reply.calls)
        ]
        return pieces, calls, "tool_calls"
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    if isinstance(limit, int) and 0 < limit < len(pieces):
        return pieces[:limit], [], "length"
    return pieces, [], "stop"


def _usage(body: Mapping[str, Any], pieces: list[str], calls: list) -> dict[str, int]:
    prompt = input_tokens(m for m in body["messages"] if isinstance(m, Mapping))
    output = count_tokens("".join(pieces)) + sum(
        count_tokens(f"{name} {arguments}") for _, name, arguments in calls
    )
    return {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}


def _completion(
    body: Mapping[str, Any], number: int, reply: Reply, model: str, report_usage: bool
) -> dict[str, Any]:
    pieces, calls, finish = _output(body, number, reply)
    message: dict[str, Any] = {"role": "assistant", "content": "".join(pieces) or None}
    if calls:
        message["tool_calls"] = [
            {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}
            for id_, name, arguments in calls
        ]
    elif message["content"] is None:
        message["content"] = ""
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": _usage(body, pieces, calls) if report_usage else None,
    }


def _stream_events(
    body: Mapping[str, Any], number: int, reply: Reply, model: str, include_usage: bool
) -> list[str]:
    pieces, calls, finish = _output(body, number, reply)
    base = {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model") or model,
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return json.dumps({**base, "choices": [choice]}, ensure_ascii=False)

    events = [chunk({"role": "assistant", "content": ""})]
    if isinstance(reply, TextReply) and reply.fail_after is not None:
        events += [chunk({"content": piece}) for piece in pieces[: reply.fail_after]]
        error = {"message": reply.fail_message, "type": "server_error", "code": None}
        return [*events, json.dumps({"error": error})]
    events += [chunk({"content": piece}) for piece in pieces]
    for index, (id_, name, arguments) in enumerate(calls):
        head = {"index": index, "id": id_, "type": "function"}
        events.append(
            chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        )
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            for part in _split(arguments, ARGUMENT_PIECE)
        ]
    events.append(chunk({}, finish))
    if include_usage:
        usage = _usage(body, pieces, calls)
        events.append(json.dumps({**base, "choices": [], "usage": usage}))
    events.append("[DONE]")
    return events


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def make_app(state: _State) -> tornado.web.Application:
    """The tornado application serving ``state``."""
    routes: list[Any] = [
        (r"/v1/chat/completions", _ChatCompletions, {"state": state}),
        (r"/v1/models", _Models, {"state": state}),
        (r"/v1/embeddings", _Embeddings, {"state": state}),
    ]
    return tornado.web.Application(
        routes,
        default_handler_class=_NotFound,
        default_handler_args={"state": state},
        log_function=_log_request,
    )


def _log_request(handler: tornado.web.RequestHandler) -> None:
    request = handler.request
    log.debug("%s %s %s", handler.get_status(), request.method, request.uri)


# --- the server object ----------------------------------------------------------------------


class ModelServer:
    """An OpenAI-compatible server on ``127.0.0.1`` in a background thread.

    ``api_key``: when set, requests without ``Authorization: Bearer <api_key>`` get a 401.
    ``chunk_delay``: seconds between streamed chunks (slow streams for cancel tests).
    ``report_usage``: ``False`` imitates providers that never report token usage.

    Example:
        >>> with ModelServer() as srv:
        ...     srv.url.startswith("http://127.0.0.1:") and srv.url.endswith("/v1")
        True
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        chunk_delay: float = 0.0,
        model: str = DEMO_MODEL,
        report_usage: bool = True,
    ) -> None:
        self.host = host
        self.port = port
        self._state = _State(model, api_key, chunk_delay, report_usage)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    # lifecycle

    def start(self) -> ModelServer:
        """Bind (a free port when ``port`` is 0) and serve in a daemon thread."""
        if self._thread is not None:
            return self
        sockets = tornado.netutil.bind_sockets(self.port, self.host)
        self.port = sockets[0].getsockname()[1]
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(sockets, ready), name=f"model-server-{self.port}", daemon=True
        )
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        """Stop serving and close every connection."""
        if self._thread is None or self._loop is None or self._stop is None:
            return
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        self._thread = None

    def serve_forever(self) -> None:
        """Start and block until interrupted (Ctrl-C)."""
        self.start()
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(1)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self, sockets: list[Any], ready: threading.Event) -> None:
        asyncio.run(self._serve(sockets, ready))

    async def _serve(self, sockets: list[Any], ready: threading.Event) -> None:
        server = tornado.httpserver.HTTPServer(make_app(self._state))
        server.add_sockets(sockets)
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        ready.set()
        await self._stop.wait()
        server.stop()
        await server.close_all_connections()

    # addresses

    @property
    def url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    def spec(
        self,
        id: str = "demo",
        *,
        function_call: bool = True,
        json_mode: bool = True,
        image_understanding: bool = False,
        api_key_env: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        name: str | None = None,
    ) -> ModelSpec:
        """A :class:`ModelSpec` for this server (``function_call`` on unless said otherwise).

        Example:
            >>> ModelServer(port=8799).spec().base_url
            'http://127.0.0.1:8799/v1'
        """
        return ModelSpec(
            id=id,
            name=name or f"{DEMO_PREFIX} {self._state.model}",
            base_url=self.url,
            model=self._state.model,
            api_key_env=api_key_env,
            parameters=dict(parameters or {}),
            capabilities=ModelCapabilities(
                function_call=function_call,
                json_mode=json_mode,
                image_understanding=image_understanding,
            ),
        )

    # scripting and inspection

    def script(self, replies: Iterable[Reply | str | Mapping[str, Any]]) -> None:
        """Queue the next replies, one per chat-completion request, in order."""
        parsed = [as_reply(item) for item in replies]
        with self._state.lock:
            self._state.queue.extend(parsed)

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        with self._state.lock:
            return len(self._state.queue)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Parsed JSON bodies of every chat-completion request so far (a copy)."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def embeddings(self) -> int:
        """Embeddings requests answered."""
        with self._state.lock:
            return self._state.embeddings

    @property
    def disconnects(self) -> int:
        """Clients that hung up before their response was complete."""
        with self._state.lock:
            return self._state.disconnects

    @property
    def completed(self) -> int:
        """Chat-completion responses sent in full."""
        with self._state.lock:
            return self._state.completed

    @property
    def chunk_delay(self) -> float:
        """Seconds between streamed chunks."""
        return self._state.chunk_delay

    @chunk_delay.setter
    def chunk_delay(self, seconds: float) -> None:
        self._state.chunk_delay = seconds

    @property
    def api_key(self) -> str | None:
        """The expected bearer key (``None``: no check)."""
        return self._state.api_key

    @api_key.setter
    def api_key(self, key: str | None) -> None:
        self._state.api_key = key

    def wait_for(self, what: str, count: int, timeout: float = 5.0) -> bool:
        """Block until ``disconnects`` / ``completed`` reaches ``count``; False on timeout."""
        if what not in {"disconnects", "completed"}:
            raise ValueError("wait_for: 'disconnects' or 'completed'")
        with self._state.changed:
            return self._state.changed.wait_for(
                lambda: getattr(self._state, what) >= count, timeout
            )

    def reset(self) -> None:
        """Forget scripted replies, recorded requests and counters."""
        with self._state.lock:
            self._state.queue.clear()
            self._state.requests.clear()
            self._state.disconnects = self._state.completed = 0


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m coze_lab.testing.model_server``: the offline demo model."""
    parser = argparse.ArgumentParser(
        prog="python -m coze_lab.testing.model_server",
        description="Offline OpenAI-compatible demo model for coze_lab (no real LLM behind it).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8799)
    parser.add_argument("--api-key", default=None, help="require this bearer key")
    parser.add_argument("--chunk-delay", type=float, default=0.02, help="seconds between chunks")
    parser.add_argument("--model", default=DEMO_MODEL, help="model name to report")
    args = parser.parse_args(argv)
    server = ModelServer(
        host=args.host,
        port=args.port,
        api_key=args.api_key,
        chunk_delay=args.chunk_delay,
        model=args.model,
    ).start()
    print(f"coze_lab demo model (offline, not a real LLM) at {server.url}", flush=True)
    print(f"  OPENAI_BASE_URL={server.url} COZE_LAB_DEFAULT_MODEL={args.model}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
