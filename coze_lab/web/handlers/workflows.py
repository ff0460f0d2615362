"""The Coze workflow API: run, stream_run, stream_resume, run histories."""

from __future__ import annotations

from typing import Any

from coze_lab.core.errors import CozeLabError, NotFound
from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.requests import parse_workflow_parameters
from coze_lab.web.sse import send_event, start_stream


class WorkflowHandler(CozeHandler):
    def workflow_id(self, body: dict[str, Any]) -> int:
        return parse_id(body.get("workflow_id"), "workflow_id")

    async def start_run(self, body: dict[str, Any]) -> int:
        user = self.coze_user()
        # Coze ignores parameters the start node does not declare (its own examples send
        # some); the run's trace notes them
        return await self.runtime.runs.start(
            user.id,
            self.workflow_id(body),
            parse_workflow_parameters(body),
            ignore_undeclared=True,
        )

    async def stream(self, run_id: int, after: int) -> None:
        start_stream(self)
        async for seq, event, data in self.runtime.runs.follow(run_id, after):
            # ids stay unique and increasing when one run event makes several Coze events
            for k, (name, payload) in enumerate(serialize.coze_workflow_events(event, data, seq)):
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
        info = await self.runtime.runs.wait(run_id)
        if info.status in ("failed", "canceled"):
            raise RunFailed((info.error or {}).get("msg", f"the workflow {info.status}"))
        pending = (
            self.runtime.runs.pending(info.owner_id, info.id)
            if info.status == "interrupted"
            else []
        )
        data, extra = serialize.sync_run(info, pending)
        self.reply(data, extra=extra)


class WorkflowStreamRunHandler(WorkflowHandler):
    async def post(self) -> None:
        run_id = await self.start_run(self.json_body())
        await self.stream(run_id, 0)


class WorkflowStreamResumeHandler(WorkflowHandler):
    """Answer an interrupt and stream the run from there."""

    async def post(self) -> None:
        user = self.coze_user()
        body = self.json_body()
        resumed = await self.runtime.runs.resume(
            user.id,
            parse_id(body.get("event_id"), "event_id"),
            body.get("resume_data"),
            workflow_id=self.workflow_id(body),
        )
        await self.stream(resumed.run.id, resumed.after)


class RunHistoryHandler(CozeHandler):
    def get(self, workflow_id: str, execute_id: str) -> None:
        user = self.coze_user()
        info = self.runtime.runs.get(
            user.id,
            parse_id(execute_id, "execute_id"),
            workflow_id=parse_id(workflow_id, "workflow_id"),
        )
        self.reply([serialize.run_history(info)])


class ExecuteNodeHandler(CozeHandler):
    def get(self, workflow_id: str, execute_id: str, node_key: str) -> None:
        user = self.coze_user()
        info = self.runtime.runs.get(
            user.id,
            parse_id(execute_id, "execute_id"),
            workflow_id=parse_id(workflow_id, "workflow_id"),
        )
        record = info.nodes.get(node_key)
        if record is None:
            raise NotFound(f"node execution {node_key} does not exist")
        self.reply(serialize.node_output(record))
