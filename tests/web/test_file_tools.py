"""Bots with ``file_tools``: the scripted local model server calls list_files, read_file and
write_file through a real ``coze-lab serve``; cozepy runs the chat; the files land in (and
stay inside) the conversation's workspace folder."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cozepy import ChatStatus, Coze, Message, MessageObjectString, TokenAuth

import coze_lab as cl
from coze_lab.config import CozeLab
from coze_lab.services import Runtime
from coze_lab.testing import ModelServer, ScriptedToolCall, TextReply, ToolCallsReply
from tests.conftest import SANDBOX_CACHE
from tests.support import ServerProcess

# a workflow whose code node reads the session's input and writes its output (module level:
# the DSL reads the function's source)
summarise = cl.Workflow("summarise", description="Summarise input/sales.csv")


@summarise.start
def begin(title: str):
    """The summary's title."""


@summarise.code
def totals(title: str) -> dict:
    import csv

    with open("input/sales.csv") as f:
        rows = list(csv.DictReader(f))
    total = sum(int(r["amount"]) for r in rows)
    with open("output/summary.md", "w") as f:
        f.write(f"# {title}\ntotal: {total}\n")
    try:
        with open("input/sales.csv", "w") as f:
            f.write("changed")
        input_writable = True
    except OSError:
        input_writable = False
    return {"total": total, "input_writable": input_writable}


summarise.end(total="{{totals.total}}", input_writable="{{totals.input_writable}}")


class Lab:
    def __init__(self, server: ServerProcess, token: str, space: str, tmp: Path) -> None:
        self.server, self.token, self.space, self.tmp = server, token, space, tmp

    def workspace(self, conversation_id: str) -> Path:
        return self.tmp / "server-data" / "coze_workspaces" / self.space / conversation_id

    def coze(self) -> Coze:
        return Coze(auth=TokenAuth(self.token), base_url=self.server.url)

    def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.token}"}
        response = httpx.request(
            method, self.server.url + path, headers=headers, timeout=30, **kwargs
        )
        return response.json()

    def bot(self, **fields: Any) -> str:
        body = {"name": "Analyst", "space_id": self.space, **fields}
        reply = self.request("POST", "/v1/bot/create", json=body)
        assert reply["code"] == 0, reply
        bot_id = reply["data"]["bot_id"]
        self.coze().bots.publish(bot_id=bot_id, connector_ids=["1024"])
        return bot_id


@pytest.fixture
def lab(tmp_path: Path, db_url: str, model_server: ModelServer) -> Iterator[Lab]:
    yield from start_lab(tmp_path, db_url, model_server, {})


@pytest.fixture
def sandbox_lab(tmp_path: Path, db_url: str, model_server: ModelServer) -> Iterator[Lab]:
    env = {"COZE_LAB_SANDBOX_CACHE_DIR": str(SANDBOX_CACHE), "COZE_LAB_SANDBOX_POOL_SIZE": "1"}
    yield from start_lab(tmp_path, db_url, model_server, env)


def start_lab(
    tmp_path: Path, db_url: str, model_server: ModelServer, extra: dict[str, str]
) -> Iterator[Lab]:
    data_dir = tmp_path / "server-data"
    runtime = Runtime(CozeLab(data_dir=str(data_dir), database_url=db_url))
    runtime.start()
    user = runtime.identity.ensure_user("alice")
    token = runtime.tokens.create(user.id, "alice")[1]
    runtime.db.dispose()
    models = tmp_path / "models.json"
    models.write_text(
        json.dumps(
            {"default": "m", "models": [{"id": "m", "base_url": model_server.url, "model": "m"}]}
        )
    )
    env = {"COZE_LAB_MODELS_FILE": str(models), **extra}
    process = ServerProcess(data_dir, db_url, env=env).start()
    yield Lab(process, token, str(user.workspace_id), tmp_path)
    process.stop()


def call(name: str, call_id: str, **arguments: Any) -> ToolCallsReply:
    return ToolCallsReply([ScriptedToolCall(name, arguments, id=call_id)])


def tool_result(request: dict[str, Any], call_id: str) -> str:
    (message,) = [m for m in request["messages"] if m.get("tool_call_id") == call_id]
    return message["content"]


def test_the_agent_reads_its_input_and_writes_output_summary(
    lab: Lab, model_server: ModelServer
) -> None:
    csv = lab.tmp / "sales.csv"
    csv.write_bytes(b"region,amount\nnorth,120\nsouth,80\n")
    file_id = lab.coze().files.upload(file=csv).id
    bot_id = lab.bot(file_tools=True)
    assert lab.request("GET", f"/v1/bots/{bot_id}")["data"]["file_tools"] is True
    model_server.script(
        [
            call("list_files", "c1"),
            call("read_file", "c2", path="input/sales.csv", offset=14, limit=9),
            call("write_file", "c3", path="output/summary.md", content="# Sales\n\nnorth: 120\n"),
            TextReply("Wrote output/summary.md."),
        ]
    )
    chat = lab.coze().chat.create_and_poll(
        bot_id=bot_id,
        user_id="u-1",
        additional_messages=[
            Message.build_user_question_objects(
                [
                    MessageObjectString.build_text("Summarise the sales."),
                    MessageObjectString.build_file(file_id=file_id),
                ]
            )
        ],
    )
    assert chat.chat.status == ChatStatus.COMPLETED
    offered = {t["function"]["name"] for t in model_server.requests[0]["tools"]}
    assert offered == {"list_files", "read_file", "write_file"}
    listing = json.loads(tool_result(model_server.requests[1], "c1"))
    assert listing == {"files": [{"path": "input/sales.csv", "size": 33}]}
    page = tool_result(model_server.requests[2], "c2")
    assert page == (
        "input/sales.csv: characters 14..23 of 33 (more: read again with offset=23)\nnorth,120"
    )
    assert tool_result(model_server.requests[3], "c3") == "wrote 20 bytes to output/summary.md"
    summary = lab.workspace(chat.chat.conversation_id) / "output" / "summary.md"
    assert summary.read_text() == "# Sales\n\nnorth: 120\n"
    # file_history: the upload (from the user's message) and the write (from the
    # function_call message of call c3), through the studio endpoint
    conversation = chat.chat.conversation_id
    history = lab.request("GET", f"/coze_lab/api/conversations/{conversation}/file_history")
    assert history["code"] == 0, history
    items = history["data"]["items"]
    assert [(i["action"], i["path"], i["size"]) for i in items] == [
        ("upload", "input/sales.csv", 33),
        ("write", "output/summary.md", 20),
    ]
    messages = lab.coze().chat.messages.list(conversation_id=conversation, chat_id=chat.chat.id)
    (write_call,) = [
        m for m in messages if m.type == "function_call" and '"write_file"' in m.content
    ]
    asked = lab.coze().conversations.messages.list(conversation_id=conversation)
    (question,) = [m for m in asked if m.role == "user"]
    assert items[0]["message_id"] == question.id
    assert items[1]["message_id"] == write_call.id
    assert {i["chat_id"] for i in items} == {chat.chat.id}
    assert {i["space_id"] for i in items} == {lab.space}
    assert all(i["created_at"] > 0 and i["run_id"] is None for i in items)


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"path": "input/sales.csv", "content": "x"}, "input/ is read-only"),
        ({"path": "../../escape.md", "content": "x"}, "leaves the session workspace"),
        ({"path": "/tmp/escape.md", "content": "x"}, "is absolute"),
        ({"path": "notes.md", "content": "x"}, "must be a file under"),
    ],
)
def test_writes_stay_in_scratchpad_and_output(
    lab: Lab, model_server: ModelServer, arguments: dict[str, Any], error: str
) -> None:
    bot_id = lab.bot(file_tools=True)
    model_server.script([call("write_file", "w", **arguments), TextReply("Could not.")])
    chat = lab.coze().chat.create_and_poll(
        bot_id=bot_id,
        user_id="u-1",
        additional_messages=[Message.build_user_question_text("Write it.")],
    )
    assert chat.chat.status == ChatStatus.COMPLETED
    result = tool_result(model_server.requests[1], "w")
    assert result.startswith("error: ") and error in result
    workspace = lab.workspace(chat.chat.conversation_id)
    assert [p for p in workspace.rglob("*") if p.is_file()] == []
    assert not (lab.tmp / "escape.md").exists() and not Path("/tmp/escape.md").exists()


def test_bots_without_the_flag_get_no_file_tools(lab: Lab, model_server: ModelServer) -> None:
    bot_id = lab.bot()
    assert lab.request("GET", f"/v1/bots/{bot_id}")["data"]["file_tools"] is False
    model_server.script([TextReply("Hi.")])
    lab.coze().chat.create_and_poll(
        bot_id=bot_id,
        user_id="u-1",
        additional_messages=[Message.build_user_question_text("Hello")],
    )
    assert "tools" not in model_server.requests[0]
    reply = lab.request("POST", "/v1/bot/create", json={"name": "B", "file_tools": "yes"})
    assert reply["code"] != 0 and "file_tools must be true or false" in reply["msg"]


def test_file_history_of_someone_elses_conversation_is_not_found(lab: Lab) -> None:
    reply = lab.request("GET", "/coze_lab/api/conversations/123456789/file_history")
    assert reply["code"] == 4200
    reply = lab.request("GET", "/coze_lab/api/conversations/abc/file_history")
    assert reply["code"] == 4000


def test_code_nodes_of_a_chats_workflow_see_the_conversations_workspace(
    sandbox_lab: Lab, model_server: ModelServer
) -> None:
    lab = sandbox_lab
    saved = lab.request(
        "POST",
        "/coze_lab/api/workflows",
        json={"definition": summarise.validate().to_dict(), "publish": True},
    )
    workflow_id = saved["data"]["id"]
    csv = lab.tmp / "sales.csv"
    csv.write_bytes(b"region,amount\nnorth,120\nsouth,80\n")
    file_id = lab.coze().files.upload(file=csv).id
    bot_id = lab.bot(workflow_id_list={"ids": [{"id": workflow_id}]})
    model_server.script(
        [call("summarise", "s1", title="Sales"), TextReply("See output/summary.md.")]
    )
    chat = lab.coze().chat.create_and_poll(
        bot_id=bot_id,
        user_id="u-1",
        additional_messages=[
            Message.build_user_question_objects(
                [
                    MessageObjectString.build_text("Summarise."),
                    MessageObjectString.build_file(file_id=file_id),
                ]
            )
        ],
    )
    assert chat.chat.status == ChatStatus.COMPLETED, chat.chat.last_error
    result = json.loads(tool_result(model_server.requests[1], "s1"))
    # input/ is read-only in the sandbox; output/ is copied back to the host folder
    assert result == {"total": 200, "input_writable": False}
    workspace = lab.workspace(chat.chat.conversation_id)
    assert (workspace / "output" / "summary.md").read_text() == "# Sales\ntotal: 200\n"
    assert (workspace / "input" / "sales.csv").read_bytes().startswith(b"region,amount")
    conversation = chat.chat.conversation_id
    items = lab.request("GET", f"/coze_lab/api/conversations/{conversation}/file_history")
    written = items["data"]["items"][-1]
    assert (written["action"], written["path"], written["node_id"]) == (
        "write",
        "output/summary.md",
        "totals",
    )
    assert written["run_id"] and written["chat_id"] == chat.chat.id
    # the timeline: the question, the tool call with its arguments, the code node with its
    # duration, the file it wrote, the tool's result and the answer, in that order
    activity = lab.request("GET", f"/coze_lab/api/conversations/{conversation}/activity")["data"]
    assert activity["state"] == "done" and activity["chat_id"] == chat.chat.id
    kinds = [(i["kind"], i["path"] or i["node_id"] or "") for i in activity["items"]]
    order = [
        ("message", ""),
        ("tool_call", ""),
        ("node", "totals"),
        ("file", "output/summary.md"),
        ("tool_result", ""),
        ("answer", ""),
    ]
    assert [k for k in kinds if k in order] == order, kinds
    (node,) = [i for i in activity["items"] if i["kind"] == "node"]
    assert node["status"] == "succeeded" and node["duration_ms"] >= 0
    assert '"total": 200' in node["detail"]
    (tool_call,) = [i for i in activity["items"] if i["kind"] == "tool_call"]
    assert tool_call["title"] == "summarise" and '"title": "Sales"' in tool_call["detail"]
    (chat_item,) = [i for i in activity["items"] if i["kind"] == "chat"]
    assert chat_item["status"] == "completed" and chat_item["usage"]["token_count"] > 0
    assert activity["usage"]["token_count"] == chat_item["usage"]["token_count"]
    run_id = written["run_id"]
    run_line = lab.request("GET", f"/coze_lab/api/runs/{run_id}/activity")["data"]
    assert run_line["state"] == "done"
    assert [i["kind"] for i in run_line["items"]] == ["run", "node"]
    assert lab.request("GET", "/coze_lab/api/runs/123456789/activity")["code"] == 4200
    assert lab.request("GET", "/coze_lab/api/conversations/123/activity")["code"] == 4200

    # a workflow run that asks for a workspace of its own: run-<id>/ with the upload in input/
    body = {
        "workflow_id": workflow_id,
        "parameters": {"title": "Run"},
        "is_async": True,
        "workspace": True,
        "workspace_files": [file_id],
    }
    started = lab.request("POST", "/v1/workflow/run", json=body)
    assert started["code"] == 0, started
    run_id = started["execute_id"]
    line = lab.request("GET", f"/coze_lab/api/runs/{run_id}/activity")["data"]
    while line["state"] == "running":
        time.sleep(0.1)
        line = lab.request("GET", f"/coze_lab/api/runs/{run_id}/activity")["data"]
    assert line["state"] == "done"
    run_folder = lab.tmp / "server-data" / "coze_workspaces" / lab.space / f"run-{run_id}"
    assert (run_folder / "output" / "summary.md").read_text() == "# Run\ntotal: 200\n"
    files = [(i["status"], i["path"]) for i in line["items"] if i["kind"] == "file"]
    assert files == [("upload", "input/sales.csv"), ("write", "output/summary.md")]
    # bad requests start nothing
    for bad, code in (
        ({"workspace": "yes"}, 4000),
        ({"workspace_files": [file_id]}, 4000),
        ({"workspace": True, "workspace_files": ["123456789"]}, 4200),
    ):
        reply = lab.request("POST", "/v1/workflow/run", json={"workflow_id": workflow_id, **bad})
        assert reply["code"] == code, (bad, reply)
    assert len(lab.request("GET", "/coze_lab/api/runs")["data"]["runs"]) == 2
