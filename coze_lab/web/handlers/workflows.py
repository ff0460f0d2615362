"""The Coze workflow API: run, stream_run, stream_resume, run histories, and the
workflows themselves (list, retrieve, versions)."""

from __future__ import annotations

from typing import Any

from coze_lab.core.errors import CozeLabError, InvalidParameter, NotFound
from coze_lab.core.ids import parse_id
from coze_lab.web import serialize
from coze_lab.web.base import CozeHandler
from coze_lab.web.params import int_value, version_number
from coze_lab.web.requests import (
    parse_run_workspace,
    parse_workflow_bot,
    parse_workflow_parameters,
)
from coze_lab.web.sse import send_event, start_stream


class WorkflowHandler(CozeHandler):
    def workflow_id(self, body: dict[str, Any]) -> int:
        return parse_id(body.get("workflow_id"), "workflow_id")

    async def start_run(self, body: dict[str, Any]) -> int:
        await self.check_token()
        user = self.coze_user()
        # Coze ignores parameters the start node does not declare (its own examples send
        # some); the run's trace notes them
        # ``version`` (Coze's ``workflow_version`` too) runs that published version
        raw = body.get("version", body.get("workflow_version"))
        workflow_id, parameters = self.workflow_id(body), parse_workflow_parameters(body)
        at_version, target = version_number(raw, "version"), parse_workflow_bot(body)
        workspace, files = parse_run_workspace(body)
        context = None
        if target is not None:  # ``bot_id``: whose variables the run reads and writes
            bot_id, uid = target
            context = await self.runtime.offload(
                self.runtime.variables.bot_context,
                user.id,
                bot_id,
                self.connector(),
                uid or str(user.id),
            )
        return await self.runtime.runs.start(
            user.id,
            workflow_id,
            parameters,
            ignore_undeclared=True,
            at_version=at_version,
            bot_context=context,
            workspace=workspace,
            workspace_files=files,
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
            await self.runtime.offload(self.runtime.runs.pending, info.owner_id, info.id)
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
        await self.check_token()
        user = self.coze_user()
        body = self.json_body()
        resumed = await self.runtime.runs.resume(
            user.id,
            parse_id(body.get("event_id"), "event_id"),
            body.get("resume_data"),
            workflow_id=self.workflow_id(body),
        )
        await self.stream(resumed.run.id, resumed.after)


class RunHistoryQueryHandler(CozeHandler):
    """GET /v1/workflow/get_run_history?workflow_id=&execute_id=: Coze's older form of the
    run history (the same one-item list)."""

    def get(self) -> None:
        user = self.coze_user()
        info = self.runtime.runs.get(
            user.id,
            parse_id(self.get_query_argument("execute_id", None), "execute_id"),
            workflow_id=parse_id(self.get_query_argument("workflow_id", None), "workflow_id"),
        )
        self.reply([serialize.run_history(info)])


class WorkflowsListHandler(CozeHandler):
    """GET /v1/workflows: a page of a space's workflows (``workspace_id``; default the
    personal space). Every workflow here is a plain workflow in no app: ``workflow_mode``
    chatflow and an ``app_id`` list none."""

    def get(self) -> None:
        user = self.coze_user()
        mode = self.get_query_argument("workflow_mode", None) or "workflow"
        if mode not in ("workflow", "chatflow"):
            raise InvalidParameter("workflow_mode must be workflow or chatflow")
        items, has_more = self.runtime.workflows.page(
            user.id,
            space_id=self.space_query("workspace_id"),
            publish_status=self.get_query_argument("publish_status", None) or "all",
            page_num=int_value(
                self.get_query_argument("page_num", None),
                "page_num",
                default=1,
                low=1,
                high=10**6,
            ),
            page_size=int_value(
                self.get_query_argument("page_size", None),
                "page_size",
                default=100,
                low=1,
                high=100,
            ),
        )
        if mode == "chatflow" or self.get_query_argument("app_id", None):
            items, has_more = [], False
        self.reply({"items": [serialize.workflow_basic(w) for w in items], "has_more": has_more})


class WorkflowRetrieveHandler(CozeHandler):
    """GET /v1/workflows/{workflow_id}: Coze's WorkflowInfo."""

    def get(self, workflow_id: str) -> None:
        user = self.coze_user()
        info = self.runtime.workflows.get(user.id, parse_id(workflow_id, "workflow_id"))
        self.reply({"workflow_detail": serialize.workflow_basic(info)})


class WorkflowVersionsHandler(CozeHandler):
    """GET /v1/workflows/{workflow_id}/versions: the published versions, newest first;
    ``page_token`` is the version the previous page ended at."""

    def get(self, workflow_id: str) -> None:
        user = self.coze_user()
        items, has_more = self.runtime.workflows.versions(
            user.id,
            parse_id(workflow_id, "workflow_id"),
            publish_status=self.get_query_argument("publish_status", None) or "published_online",
            page_size=int_value(
                self.get_query_argument("page_size", None),
                "page_size",
                default=10,
                low=1,
                high=30,
            ),
            before=version_number(self.get_query_argument("page_token", None), "page_token"),
        )
        self.reply(
            {
                "items": [serialize.workflow_version(v) for v in items],
                "has_more": has_more,
                "next_page_token": str(items[-1].version) if has_more else "",
            }
        )


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
