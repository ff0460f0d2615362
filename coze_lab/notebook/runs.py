"""``cl.runs``: workflow runs and their open questions on the server ``cl.connect()`` found.

Example:
    >>> import coze_lab as cl
    >>> for question in cl.runs.pending():             # doctest: +SKIP
    ...     print(question.event_id, question.data["question"])
    >>> cl.runs.resume(question.event_id, "yes")        # doctest: +SKIP
"""

from __future__ import annotations

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
