"""The official Coze JavaScript SDK (``@coze/api``), unchanged, against a real ``coze-lab serve``.

Each test drives the SDK with node (tests/web/coze_js/drive.cjs) and, where an error is
the point, checks that cozepy sees the same code and message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cozepy import BotModelInfo, BotPromptInfo, Coze, CozeAPIError, Message, TokenAuth

import coze_lab as cl
from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer, TextReply
from tests.support import CozeJs, ServerProcess

# a workflow without code nodes (no sandbox): the model's answer, streamed by the end node
answer = cl.Workflow("answer")


@answer.start
def ask(question: str):
    """A question for the model."""


answer.llm("reply", prompt="{{ask.question}}")
answer.end(answer="{{reply.output}}")


@dataclass
class Lab:
    server: ServerProcess
    token: str
    js: CozeJs
    workflow_id: str
    bot_id: str  # published to the API
    draft_bot_id: str  # never published

    def coze(self, token: str | None = None) -> Coze:
        return Coze(auth=TokenAuth(token or self.token), base_url=self.server.url)


@pytest.fixture
def lab(
    tmp_path: Path, db_url: str, model_server: ModelServer, coze_js: Callable[..., CozeJs]
) -> Iterator[Lab]:
    data_dir = tmp_path / "server-data"
    runtime = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    runtime.start()
    alice = runtime.identity.ensure_user("alice")
    token = runtime.tokens.create(alice.id, "js")[1]
    workflow = runtime.workflows.save(alice.id, answer.validate().to_dict())
    runtime.workflows.publish(alice.id, workflow.id)
    runtime.db.dispose()
    env = {
        "OPENAI_BASE_URL": model_server.url,
        "OPENAI_API_KEY": "test-key",
        "COZE_LAB_DEFAULT_MODEL": "coze-lab-demo",
    }
    server = ServerProcess(data_dir, db_url, env=env).start()
    try:
        coze = Coze(auth=TokenAuth(token), base_url=server.url)
        bots = [
            coze.bots.create(
                space_id=str(alice.workspace_id),
                name=name,
                prompt_info=BotPromptInfo(prompt="You are terse."),
                model_info_config=BotModelInfo(model_id="default"),
            ).bot_id
            for name in ("published", "draft")
        ]
        coze.bots.publish(bot_id=bots[0], connector_ids=["1024"])
        yield Lab(server, token, coze_js(server.url, token), str(workflow.id), *bots)
    finally:
        server.stop()


def user_says(text: str) -> list[dict]:
    return [{"role": "user", "content": text, "content_type": "text"}]


def test_chat_streamed_and_polled(lab: Lab, model_server: ModelServer) -> None:
    model_server.script([TextReply("Paris."), TextReply("Still Paris.")])
    streamed, polled = lab.js.run(
        ("chat.stream", {"bot_id": lab.bot_id, "additional_messages": user_says("Capital?")}),
        ("chat.createAndPoll", {"bot_id": lab.bot_id, "additional_messages": user_says("Sure?")}),
    )
    events = streamed["result"]
    names = [e["event"] for e in events]
    assert names[:2] == ["conversation.chat.created", "conversation.chat.in_progress"]
    assert names[-3:] == ["conversation.message.completed", "conversation.chat.completed", "done"]
    deltas = [e["data"]["content"] for e in events if e["event"] == "conversation.message.delta"]
    assert "".join(deltas) == "Paris."
    assert events[-2]["data"]["status"] == "completed"
    assert polled["result"]["chat"]["status"] == "completed"
    answers = [m["content"] for m in polled["result"]["messages"] if m["type"] == "answer"]
    assert answers == ["Still Paris."]


def test_workflow_stream_and_run(lab: Lab, model_server: ModelServer) -> None:
    model_server.script([TextReply("Forty-two."), TextReply("Again.")])
    outcome, created = lab.js.run(
        (
            "workflows.runs.stream",
            {"workflow_id": lab.workflow_id, "parameters": {"question": "?"}},
        ),
        # as the SDK's own example: a bot_id and a parameter the workflow does not declare
        (
            "workflows.runs.create",
            {
                "workflow_id": lab.workflow_id,
                "parameters": {"question": "?", "norco": "JavaScript"},
                "bot_id": lab.bot_id,
            },
        ),
    )
    assert created["result"]["code"] == 0, created
    assert json.loads(created["result"]["data"]) == {"answer": "Again."}
    events = outcome["result"]
    assert [e["event"] for e in events][-1] == "Done"
    messages = [e["data"] for e in events if e["event"] == "Message"]
    assert messages[-1]["node_is_finish"] and '"answer": "Forty-two."' in messages[-1]["content"]


def streamed_failures(lab: Lab) -> list[tuple[str, dict]]:
    """Streamed calls that fail before any event: unpublished bot, unknown workflow, a
    chat with a workflow that is no chat-flow, a missing parameter."""
    return [
        ("chat.stream", {"bot_id": lab.draft_bot_id, "additional_messages": user_says("Hi")}),
        ("workflows.runs.stream", {"workflow_id": "7999999999999999999"}),
        (
            "workflows.chat.stream",
            {"workflow_id": lab.workflow_id, "additional_messages": user_says("Hi")},
        ),
        ("workflows.runs.resume", {"workflow_id": lab.workflow_id, "resume_data": "x"}),
    ]


def cozepy_error(lab: Lab, call: str, params: dict, token: str | None = None) -> CozeAPIError:
    """The same call through cozepy: the CozeAPIError it raises."""
    coze = lab.coze(token)
    hi = [Message.build_user_question_text("Hi")]
    calls: dict[str, Callable[[], Iterable[object]]] = {
        "chat.stream": lambda: coze.chat.stream(
            bot_id=params["bot_id"], user_id="u", additional_messages=hi
        ),
        "workflows.runs.stream": lambda: coze.workflows.runs.stream(
            workflow_id=params["workflow_id"]
        ),
        "workflows.chat.stream": lambda: coze.workflows.chat.stream(
            workflow_id=params["workflow_id"], additional_messages=hi
        ),
        "workflows.runs.resume": lambda: coze.workflows.runs.resume(
            workflow_id=params["workflow_id"], event_id="", resume_data="x", interrupt_type=2
        ),
    }
    with pytest.raises(CozeAPIError) as err:
        list(calls[call]())
    return err.value


def test_a_failing_streamed_call_surfaces_code_and_message(lab: Lab) -> None:
    calls = streamed_failures(lab)
    outcomes = lab.js.run(*calls)
    for (call, params), outcome in zip(calls, outcomes, strict=True):
        # the JS SDK yields the error body as its `error` event, as it does for Coze
        (event,) = outcome["result"]
        assert event["event"] == "error", (call, outcome)
        code, msg = event["data"]["code"], event["data"]["msg"]
        assert code >= 4000 and msg, (call, event)
        # cozepy raises it with the same code and message
        error = cozepy_error(lab, call, params)
        assert (error.code, error.msg) == (code, msg), call
    codes = [o["result"][0]["data"]["code"] for o in outcomes]
    assert codes == [4015, 4200, 4000, 4000]  # Coze's "bot not published to the API" first
    assert "not published" in outcomes[0]["result"][0]["data"]["msg"]
    assert "not a chat-flow" in outcomes[2]["result"][0]["data"]["msg"]


def test_a_chat_flow_streams_chat_events(lab: Lab) -> None:
    echo = cl.Workflow("echo")
    echo.inputs(USER_INPUT=str)
    echo.text("say", template="You said {{start.USER_INPUT}}")
    echo.end(output="{{say.output}}")
    saved = httpx.post(
        f"{lab.server.url}/coze_lab/api/workflows",
        json={"definition": echo.to_json(), "publish": True},
        headers={"Authorization": f"Bearer {lab.token}"},
    )
    assert saved.status_code == 201, saved.text
    (outcome,) = lab.js.run(
        (
            "workflows.chat.stream",
            {"workflow_id": saved.json()["data"]["id"], "additional_messages": user_says("Hi")},
        )
    )
    events = outcome["result"]
    assert [e["event"] for e in events] == [
        "conversation.chat.created",
        "conversation.chat.in_progress",
        "conversation.message.delta",
        "conversation.message.completed",
        "conversation.chat.completed",
        "done",
    ]
    assert events[3]["data"]["content"] == "You said Hi"
    assert events[4]["data"]["status"] == "completed"


def test_a_bad_token_on_a_stream_and_off_it(lab: Lab) -> None:
    js = CozeJs(lab.server.url, "pat_not-a-token")
    streamed, plain = js.run(
        ("workflows.runs.stream", {"workflow_id": lab.workflow_id}),
        ("workflows.runs.create", {"workflow_id": lab.workflow_id}),
    )
    assert streamed["result"][0]["data"]["code"] == 4100
    assert plain["error"]["name"] == "AuthenticationError" and plain["error"]["code"] == 4100
    error = cozepy_error(lab, "workflows.runs.stream", {"workflow_id": lab.workflow_id}, "x")
    assert error.code == 4100


def test_users_me_and_a_typed_non_streamed_failure(lab: Lab) -> None:
    me, outcome = lab.js.run(("users.me",), ("bots.retrieveNew", "7999999999999999999"))
    assert me["result"]["user_name"] == "alice" and me["result"]["user_id"].isdigit()
    error = outcome["error"]
    assert (error["name"], error["status"], error["code"]) == ("NotFoundError", 404, 4200)
    assert "does not exist" in error["msg"]


def test_a_large_body_is_a_bad_request_not_a_rate_limit(lab: Lab) -> None:
    big = "x" * (3 * 1024 * 1024)  # over max_json_bytes (2 MiB)
    create, streamed = lab.js.run(
        ("bots.create", {"space_id": "1", "name": big}),
        ("chat.stream", {"bot_id": lab.bot_id, "additional_messages": user_says(big)}),
    )
    assert create["error"]["name"] == "BadRequestError" and create["error"]["code"] == 4000
    assert "exceeds" in create["error"]["msg"]
    (event,) = streamed["result"]
    assert event["event"] == "error" and event["data"]["code"] == 4000
    with pytest.raises(CozeAPIError) as err:
        lab.coze().bots.create(space_id="1", name=big)
    assert err.value.code == 4000 and "exceeds" in err.value.msg


def test_datasets_and_documents_round_trip(lab: Lab) -> None:
    """@coze/api's ``datasets`` and ``datasets.documents``: create, add, process, list,
    rename, delete (documents are processed by the server's background job)."""
    space = next(iter(lab.coze().workspaces.list())).id
    (created,) = lab.js.run(
        ("datasets.create", {"name": "Notes", "space_id": space, "format_type": 0})
    )
    dataset_id = created["result"]["dataset_id"]
    base = {"name": "a.txt", "source_info": {"file_base64": "SGVsbG8gd29ybGQ=", "file_type": "txt"}}
    (added,) = lab.js.run(
        ("datasets.documents.create", {"dataset_id": dataset_id, "document_bases": [base]})
    )
    document_id = added["result"][0]["document_id"]
    for _ in range(200):
        (progress,) = lab.js.run(("datasets.process", dataset_id, {"document_ids": [document_id]}))
        if progress["result"]["data"][0]["status"] != 0:
            break
    assert progress["result"]["data"][0]["status"] == 1
    listed, renamed, documents, datasets, deleted, gone = lab.js.run(
        ("datasets.documents.list", {"dataset_id": dataset_id, "page": 1, "size": 10}),
        ("datasets.documents.update", {"document_id": document_id, "document_name": "b.txt"}),
        ("datasets.documents.list", {"dataset_id": dataset_id}),
        ("datasets.list", {"space_id": space}),
        ("datasets.delete", dataset_id),
        ("datasets.process", dataset_id, {"document_ids": [document_id]}),
    )
    assert (
        listed["result"]["total"] == 1 and listed["result"]["document_infos"][0]["slice_count"] == 1
    )
    assert "error" not in renamed and documents["result"]["document_infos"][0]["name"] == "b.txt"
    assert [d["name"] for d in datasets["result"]["dataset_list"]] == ["Notes"]
    assert "error" not in deleted
    assert (gone["error"]["name"], gone["error"]["code"]) == ("NotFoundError", 4200)
