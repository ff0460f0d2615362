"""How long names and descriptions may be and how large a workflow may grow: the bounds
every write path checks, in one place (``CozeLab.max_name_chars`` and friends).

Without them a 100 000-character name or a 3000-node workflow is stored, listed and
rendered by every client. Coze Studio's own editor stops workflow names at 30 and
descriptions at 600 characters; coze_lab's defaults are looser because definitions come
from code (a Python name, a docstring).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coze_lab.core.errors import InvalidParameter


@dataclass(frozen=True)
class Limits:
    """Bounds of stored definitions.

    Example:
        >>> Limits().name("Helper", "name")
        'Helper'
        >>> Limits(name_chars=3).name("Helper", "x")
        Traceback (most recent call last):
        ...
        coze_lab.core.errors.InvalidParameter: x must be a non-empty string of at most 3 characters
    """

    #: names of workflows, bots, conversations, node titles
    name_chars: int = 100
    #: descriptions of workflows, bots, variables, functions, workflow inputs
    description_chars: int = 2000
    #: nodes of one workflow (edges: at most four per node)
    workflow_nodes: int = 500

    def name(self, value: Any, field: str, *, required: bool = True) -> str:
        """``value`` stripped; InvalidParameter unless it is a string within ``name_chars``
        (and non-empty when ``required``)."""
        return text(value, field, self.name_chars, required=required, kind="name")

    def description(self, value: Any, field: str) -> str:
        return text(value, field, self.description_chars)


def text(value: Any, field: str, limit: int, *, required: bool = False, kind: str = "") -> str:
    """A bounded string field; ``None`` counts as empty.

    Example:
        >>> text("hi", "prologue", 10)
        'hi'
    """
    value = "" if value is None else value
    if not isinstance(value, str) or len(value) > limit or (required and not value.strip()):
        article = "a non-empty string" if required else "a string"
        raise InvalidParameter(f"{field} must be {article} of at most {limit} characters")
    return value.strip() if kind == "name" else value
