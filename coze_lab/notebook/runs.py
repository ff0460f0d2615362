"""``cl.runs``: workflow runs and their open questions on the server ``cl.connect()`` found.

Example:
    >>> import coze_lab as cl
    >>> for question in cl.runs.pending():             # doctest: +SKIP
    ...     print(question.event_id, question.data["question"])
    >>> cl.runs.resume(question.event_id, "yes")        # doctest: +SKIP
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from coze_lab.notebook.connect import current
from coze_lab.notebook.questions import Question, questions


def pending(run_id: str | int | None = None) -> list[Question]:
    """Open questions across all your runs (or one run and the runs it started)."""
    return questions(current().pending(run_id))


def resume(event_id: str | int, data: Any) -> dict[str, Any]:
    """Answer one question; the run continues on the server."""
    return current().resume(event_id, data)


def get(run_id: str | int) -> Any:
    """A live run widget for a run (re-displaying it reconnects after a kernel restart)."""
    return current().run(run_id)


def list(workflow_id: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """Your newest runs (of one workflow, when given)."""
    return current().runs(workflow_id, limit)


def cancel(run_id: str | int) -> bool:
    """Stop a run for real."""
    return current().cancel(run_id)


def table(
    workflow: Any = None,
    since: datetime | timedelta | None = None,
    *,
    limit: int = 100,
    by: str = "run",
) -> Any:
    """Your runs as a pandas DataFrame, newest first: one row per run (``by="run"``: status,
    nodes, attempts, summed latency, tokens and cost) or per node (``by="node"``).

    ``workflow``: a stored workflow's id, or a name (or ``cl.Workflow``): the runs of
    definitions of that name, ``wf.run_local()`` runs included, among your ``limit`` newest
    runs; ``since``: a datetime or how long ago (``timedelta(hours=1)``); ``limit``: how
    many runs to read (at most 100).

    >>> cl.runs.table(workflow="summarizer", since=timedelta(days=1))   # doctest: +SKIP
    """
    from coze_lab.notebook.trace import (
        NODE_COLUMNS,
        RUN_COLUMNS,
        RunTrace,
        require_pandas,
        run_row,
    )

    if by not in ("run", "node"):
        raise ValueError("by: 'run' or 'node'")
    pandas = require_pandas()
    studio = current()
    name = None if workflow is None else str(getattr(workflow, "name", workflow))
    by_id = name if name is not None and name.isdigit() else None
    found = studio.runs(by_id, min(max(limit, 1), 100))
    if name is not None and by_id is None:  # by name: stored and run_local runs alike
        found = [r for r in found if r.get("name") == name]
    if since is not None:
        start = datetime.now(timezone.utc) - since if isinstance(since, timedelta) else since
        if start.tzinfo is None:
            start = start.astimezone(timezone.utc)
        found = [r for r in found if (r.get("created_at") or 0) >= start.timestamp()]
    found = [studio.run_info(r["id"]) for r in found]  # the list leaves out node records
    if by == "node":
        rows = [row for r in found for row in RunTrace(r["id"], r.get("nodes") or []).rows]
        return pandas.DataFrame(rows, columns=[*NODE_COLUMNS])
    return pandas.DataFrame([run_row(r) for r in found], columns=[*RUN_COLUMNS])

