"""Problems found in a plugin (document or manifest), each with its JSON pointer."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from coze_lab.core.errors import InvalidParameter


@dataclass(frozen=True)
class Problem:
    """One thing wrong, at ``pointer`` (``/paths/~1pets/get/responses``; ``""`` = the root)."""

    pointer: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.message}"


class PluginSpecError(InvalidParameter):
    """Every problem of an import in one error; ``detail`` lists them for clients.

    Example:
        >>> err = PluginSpecError([Problem("/info", "'version' is a required property")])
        >>> err.msg
        "the plugin has 1 problem: /info: 'version' is a required property"
    """

    def __init__(self, problems: list[Problem]) -> None:
        count = f"{len(problems)} problem" + ("s" if len(problems) != 1 else "")
        super().__init__(f"the plugin has {count}: " + "; ".join(str(p) for p in problems))
        self.problems = problems
        self.detail = {"problems": [asdict(p) for p in problems]}


def pointer(*parts: object) -> str:
    """A JSON pointer from path parts (``~`` and ``/`` escaped).

    Example:
        >>> pointer("paths", "/pets/{id}", "get")
        '/paths/~1pets~1{id}/get'
    """
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
