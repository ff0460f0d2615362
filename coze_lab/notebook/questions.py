"""``Question``: what a paused run asks, the one type every notebook call returns.

``cl.runs.pending()``, ``run.pending`` of a live run widget and of ``wf.run_local(...)``
all give questions with the studio API's fields, readable as keys and as attributes.
"""

from __future__ import annotations

from typing import Any


class Question(dict[str, Any]):
    """A question a run waits on: ``q.event_id`` or ``q["event_id"]``, ``q.data``, ...

    Example:
        >>> q = Question({"event_id": "7", "node_id": "ok", "data": {"question": "Ship?"}})
        >>> q.event_id, q["data"]["question"]
        ('7', 'Ship?')
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"a question has no field {name!r}") from None

    def __repr__(self) -> str:
        asked = (self.get("data") or {}).get("question") or self.get("type", "question")
        where = f"event_id={self.get('event_id')!r}, node_id={self.get('node_id')!r}"
        return f"Question({where}, {asked!r})"


def questions(items: list[dict[str, Any]]) -> list[Question]:
    """The studio API's pending questions as :class:`Question` objects."""
    return [Question(item) for item in items]
