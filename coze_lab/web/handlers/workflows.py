"""The Coze workflow API: run, stream_run, stream_resume, run histories."""

from __future__ import annotations

import json
from typing import Any

from coze_lab.core.errors import CozeLabError, InvalidParameter, NotFound
from coze_lab.core.ids import parse_id
from coze_lab.core.json_input import parse_json
from coze_lab.core.workflows.runs import RunInfo
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.sse import send_event, start_stream

#: Coze's numeric interrupt types (what cozepy echoes back as interrupt_type)
INTERRUPT_TYPES = {"question": 2, "input": 5, "authorization": 7}


def coze_events(event: str, data: dict[str, Any], seq: int) -> list[tuple[str, dict[str, Any]]]:
    """Our run event as Coze workflow SSE events (none: not part of the Coze stream).

    A question reaches Coze clients as a ``Message`` with its text (and numbered choices),
    followed by the ``Interrupt`` that names the ``event_id`` to answer.
    """
    if event == "message":
        return [
            ("Message", _message(data["content"], data["node_title"], seq, data["node_is_finish"]))
        ]
    if event == "interrupt":
        return [
            ("Message", _message(_question_text(data["data"]), data["node_title"], seq, True)),
            (
                "Interrupt",
                {
                    "interrupt_data": {
                        "event_id": data["event_id"],
                        "type": INTERRUPT_TYPES.get(data["type"], 0),
                        "data": json.dumps(data["data"], ensure_ascii=False),
                    },
                    "node_title": data["node_title"],
                },
            ),
        ]
    if event == "failed":
        return [
            (
                "Error",
                {
                    "error_code": data["error"].get("code", 5100),
                    "error_message": data["error"].get("msg", ""),
                },
            )
        ]
    if event == "canceled":
        return [("Error", {"error_code": 4300, "error_message": "the run was canceled"})]
    if event == "done":
        usage = data.get("usage") or {}
        return [("Done", {"debug_url": "", "usage": serialize.chat_usage(usage)})]
    return []


def _message(content: str, title: str, seq: int, finished: bool) -> dict[str, Any]:
    return {
        "content": content,
        "node_title": title,
        "node_seq_id": str(seq),
        "node_is_finish": finished,
        "ext": None,
        "usage": None,
    }


def _question_text(data: dict[str, Any]) -> str:
    if "question" in data:
        choices = data.get("choices") or []
        lines = [data["question"], *(f"{i}. {c}" for i, c in enumerate(choices, 1))]
        return "\n".join(lines)
    return json.dumps(data, ensure_ascii=False)  # an input form: its schema


class WorkflowHandler(CozeHandler):
    SCOPE = "workflow"

    def workflow_id(self, body: dict[str, Any]) -> int:
        return parse_id(body.get("workflow_id"), "workflow_id")

    def parameters(self, body: dict[str, Any]) -> dict[str, Any]:
        parameters = body.get("parameters") or {}
        if isinstance(parameters, str):  # some clients send the object as a JSON string
            parameters = parse_json(parameters, "parameters")
        if not isinstance(parameters, dict):
            raise InvalidParameter("parameters must be an object")
        return parameters

    async def start_run(self, body: dict[str, Any]) -> int:
        user = self.coze_user()
        workflow_id = self.workflow_id(body)
        spec, version = self.runtime.workflows.runnable(user.id, workflow_id)
        return await self.runtime.engine.start(
            user.id, spec, self.parameters(body), workflow_id=workflow_id, version=version
        )

    async def stream(self, run_id: int, after: int) -> None:
        start_stream(self)
        async for seq, event, data in self.runtime.engine.events(run_id, after):
            # ids stay unique and increasing when one run event makes several Coze events
            for k, (name, payload) in enumerate(coze_events(event, data, seq)):
                if not await send_event(self, seq * 10 + k, name, payload):
                    return  # the client left; the run is durable and goes on
        self.finish()


class RunFailed(CozeLabError):
    """The run ended in failure: Coze answers 200 with a non-zero code and the message."""

    code, status = 5100, 200


class WorkflowRunHandler(WorkflowHandler):
    """Synchronous run (waits for the result) or ``is_async`` (returns the execute_id)."""

    async def post(self) -> None:
        body = self.json_body()
        run_id = await self.start_run(body)
        if body.get("is_async"):
            self.reply(None, extra={"execute_id": str(run_id), "debug_url": ""})
            return
        info = await self.runtime.engine.wait(run_id)
        data, extra = self.sync_result(info)
        self.reply(data, extra=extra)

    def sync_result(self, info: RunInfo) -> tuple[Any, dict[str, Any]]:
        """Coze's body for a finished synchronous run: outputs as a JSON string in ``data``."""
        if info.status in ("failed", "canceled"):
            raise RunFailed((info.error or {}).get("msg", f"the workflow {info.status}"))
        extra: dict[str, Any] = {
            "execute_id": str(info.id),
            "debug_url": "",
            "usage": serialize.chat_usage(info.usage or {}),
        }
        if info.status == "interrupted":
            extra["interrupt_data"] = [
                serialize.interrupt(p)
                for p in self.runtime.engine.store.pending(info.owner_id, info.id)
            ]
        return json.dumps(info.outputs or {}, ensure_ascii=False), extra


class WorkflowStreamRunHandler(WorkflowHandler):
    async def post(self) -> None:
        run_id = await self.start_run(self.json_body())
        await self.stream(run_id, 0)


class WorkflowStreamResumeHandler(WorkflowHandler):
    """Answer an interrupt and stream the run from there."""

    async def post(self) -> None:
        user = self.coze_user()
        body = self.json_body()
        workflow_id = self.workflow_id(body)
        event_id = parse_id(body.get("event_id"), "event_id")
        pending = self.runtime.engine.store.interrupt(event_id, user.id)
        run = self.runtime.engine.store.get(pending.root_run_id, user.id, nodes=False)
        if run.workflow_id != workflow_id:
            raise InvalidParameter("event_id does not belong to this workflow")
        resume_data = body.get("resume_data")
        if pending.type == "input" and isinstance(resume_data, str):
            resume_data = parse_json(resume_data, "resume_data for an input form")
        after = self.runtime.engine.store.last_seq(run.id)
        await self.runtime.engine.resume(user.id, event_id, resume_data)
        await self.stream(run.id, after)


class RunHistoryHandler(CozeHandler):
    SCOPE = "workflow"

    def get(self, workflow_id: str, execute_id: str) -> None:
        user = self.coze_user()
        info = self.runtime.engine.store.get(parse_id(execute_id, "execute_id"), user.id)
        if info.workflow_id != parse_id(workflow_id, "workflow_id"):
            raise InvalidParameter("execute_id does not belong to this workflow")
        self.reply([serialize.run_history(info)])


class ExecuteNodeHandler(CozeHandler):
    SCOPE = "workflow"

    def get(self, workflow_id: str, execute_id: str, node_key: str) -> None:
        user = self.coze_user()
        info = self.runtime.engine.store.get(parse_id(execute_id, "execute_id"), user.id)
        if info.workflow_id != parse_id(workflow_id, "workflow_id"):
            raise InvalidParameter("execute_id does not belong to this workflow")
        record = info.nodes.get(node_key)
        if record is None:
            raise NotFound(f"node execution {node_key} does not exist")
        self.reply(
            [
                {
                    "is_finish": record.status in ("succeeded", "skipped"),
                    "node_output": json.dumps(record.outputs or {}, ensure_ascii=False),
                }
            ]
        )
