"""Studio API for workflows: drafts, publishing, runs, traces, pending questions."""

from __future__ import annotations

from typing import Any

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.params import int_value
from coze_lab.web.requests import parse_retry, parse_run_workspace
from coze_lab.web.sse import last_event_id, send_event, start_stream


class WorkflowsArea(CozeHandler):
    """The studio's workflows, runs and questions: one Jupyter authorizer resource for the area."""

    AUTH_RESOURCE = "coze_lab.workflows"


class WorkflowsHandler(WorkflowsArea):
    """GET: a space's workflows (``?space_id=``, default personal). POST: save a definition
    (``wf.to_json()``) as a draft in ``?space_id=``."""

    def get(self) -> None:
        user = self.studio_user()
        items = self.runtime.workflows.list(user.id, space_id=self.space_query())
        self.reply({"workflows": [serialize.workflow(w) for w in items]})

    def post(self) -> None:
        user = self.studio_user()
        body = self.json_body()
        info = self.runtime.workflows.save(
            user.id, body.get("definition", body), space_id=self.space_query()
        )
        if body.get("publish"):
            self.runtime.workflows.publish(user.id, info.id)
            info = self.runtime.workflows.get(user.id, info.id)
        self.reply(serialize.workflow(info), status=201)


class WorkflowItemHandler(WorkflowsArea):
    def get(self, workflow_id: str) -> None:
        user = self.studio_user()
        info = self.runtime.workflows.get(user.id, parse_id(workflow_id, "workflow_id"))
        self.reply(serialize.workflow(info))

    def delete(self, workflow_id: str) -> None:
        user = self.studio_user()
        self.runtime.workflows.delete(user.id, parse_id(workflow_id, "workflow_id"))
        self.reply(None)


class WorkflowPublishHandler(WorkflowsArea):
    def post(self, workflow_id: str) -> None:
        user = self.studio_user()
        number = self.runtime.workflows.publish(user.id, parse_id(workflow_id, "workflow_id"))
        self.reply({"version": number})


class WorkflowDraftRunHandler(WorkflowsArea):
    """Run the draft (debugging from the lab); returns the execute_id at once."""

    async def post(self, workflow_id: str) -> None:
        user = self.studio_user()
        body = self.json_body()
        workspace, files = parse_run_workspace(body)
        run_id = await self.runtime.runs.start(
            user.id,
            parse_id(workflow_id, "workflow_id"),
            body.get("parameters") or {},
            draft=True,
            workspace=workspace,
            workspace_files=files,
        )
        self.reply({"execute_id": str(run_id)}, status=201)


class RunsHandler(WorkflowsArea):
    def get(self) -> None:
        user = self.studio_user()
        raw = self.get_query_argument("workflow_id", None)
        runs = self.runtime.runs.list(
            user.id,
            workflow_id=None if raw in (None, "") else parse_id(raw, "workflow_id"),
            limit=int_value(
                self.get_query_argument("limit", None), "limit", default=20, low=1, high=100
            ),
        )
        self.reply({"runs": [serialize.run(r) for r in runs]})


class RunHandler(WorkflowsArea):
    def get(self, run_id: str) -> None:
        user = self.studio_user()
        self.reply(serialize.run(self.runtime.runs.get(user.id, parse_id(run_id, "run_id"))))


class RunCancelHandler(WorkflowsArea):
    async def post(self, run_id: str) -> None:
        user = self.studio_user()
        canceled = await self.runtime.runs.cancel(user.id, parse_id(run_id, "run_id"))
        self.reply({"canceled": canceled})


class RunRetryHandler(WorkflowsArea):
    """Retry a failed or canceled run from a node as a new run (``retry_of`` names the old)."""

    async def post(self, run_id: str) -> None:
        user = self.studio_user()
        from_node, changes = parse_retry(self.json_body())
        new_id = await self.runtime.runs.retry(
            user.id, parse_id(run_id, "run_id"), from_node=from_node, node_changes=changes
        )
        self.reply({"execute_id": str(new_id), "retry_of": run_id}, status=201)


class RunEventsHandler(WorkflowsArea):
    """Every event of a run as SSE, from ``Last-Event-ID`` (or ``?after=``) on."""

    async def get(self, run_id: str) -> None:
        user = self.studio_user()
        after = last_event_id(self) or int_value(
            self.get_query_argument("after", None), "after", default=0, low=0, high=2**31
        )
        events = self.runtime.runs.events(user.id, parse_id(run_id, "run_id"), after)
        start_stream(self)
        async for seq, event, data in events:
            if not await send_event(self, seq, event, data):
                return
        self.finish()


class InterruptsHandler(WorkflowsArea):
    """Pending questions across all your runs (no need to catch them on a stream)."""

    def get(self) -> None:
        user = self.studio_user()
        raw = self.get_query_argument("run_id", None)
        pending = self.runtime.runs.pending(
            user.id, None if raw in (None, "") else parse_id(raw, "run_id")
        )
        self.reply({"interrupts": [serialize.interrupt(p) for p in pending]})


class InterruptResumeHandler(WorkflowsArea):
    async def post(self, event_id: str) -> None:
        user = self.studio_user()
        body: dict[str, Any] = self.json_body()
        if "data" not in body:
            raise InvalidParameter("give the answer as {'data': ...}")
        resumed = await self.runtime.runs.resume(
            user.id, parse_id(event_id, "event_id"), body["data"]
        )
        info = resumed.interrupt
        self.reply({"execute_id": str(info.root_run_id), "event_id": str(info.event_id)})
