"""Workflow run event names (what ``/coze_lab/api/runs/{id}/events`` streams and the
``run_events`` table stores), as chat's are in ``coze_lab.core.chat.events``.

Example:
    >>> from coze_lab.core.workflows import events
    >>> events.DONE in events.TERMINAL
    True
"""

from __future__ import annotations

NODE_STARTED = "node_started"
NODE_FINISHED = "node_finished"
NODE_SKIPPED = "node_skipped"
#: a node's streamed output (a message node, an end node's answer template)
MESSAGE = "message"
#: a question or input node waits for a person (``event_id`` names the answer's target)
INTERRUPT = "interrupt"
RESUMED = "resumed"
INTERRUPT_EXPIRED = "interrupt_expired"
#: the run pauses: every running branch waits for a person
INTERRUPTED = "interrupted"
DONE = "done"
FAILED = "failed"
CANCELED = "canceled"

#: events after which a run's stream ends (an ``interrupted`` one resumes later)
TERMINAL = (DONE, INTERRUPTED, FAILED, CANCELED)
