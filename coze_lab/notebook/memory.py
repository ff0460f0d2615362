"""``cl.memory``: your long-term personal memory on the server ``cl.connect()`` found.

Bots made with ``memory=True`` get it in their prompt, and what you tell them to remember
lands in it after each chat (a background job on the server; :func:`wait` waits for it).
The same Markdown is under ``coze_memory/<space>/<user>/`` in the Jupyter file browser.

Example:
    >>> import coze_lab as cl
    >>> cl.memory.set_user("# About me\\n\\n- Prefers metric units\\n")     # doctest: +SKIP
    >>> print(cl.memory.user())                                             # doctest: +SKIP
    # About me
    <BLANKLINE>
    - Prefers metric units
    >>> cl.memory.set_skill("csv-export", "Use ; as the separator.")        # doctest: +SKIP
    >>> cl.memory.forget("csv-export")                                      # doctest: +SKIP
"""

from __future__ import annotations

import time
from typing import Any

from coze_lab.notebook.connect import in_space


def show(space: str | int | None = None) -> dict[str, Any]:
    """Everything: ``{user, skills, changes, jobs}`` (each change names its message)."""
    return in_space(None, space).memory()


def user(space: str | int | None = None) -> str:
    """Your ``user.md``: facts and preferences, one ``- fact`` per line."""
    return str(show(space)["user"]["content"])


def skills(space: str | int | None = None) -> dict[str, str]:
    """Your skills: name → Markdown."""
    return {s["name"]: s["content"] for s in show(space)["skills"]}


def set_user(content: str, space: str | int | None = None) -> dict[str, Any]:
    """Replace your ``user.md``."""
    return in_space(None, space).put_memory("user.md", content)


def set_skill(name: str, content: str, space: str | int | None = None) -> dict[str, Any]:
    """Create or replace ``skills/<name>.md``."""
    return in_space(None, space).put_memory(f"skills/{name}.md", content)


def forget(name: str | None = None, space: str | int | None = None) -> None:
    """Forget a skill, or (no name) your whole ``user.md``."""
    in_space(None, space).delete_memory("user.md" if name is None else f"skills/{name}.md")


def wait(timeout: float = 60.0, space: str | int | None = None) -> dict[str, Any]:
    """Wait until no message is queued or being consolidated; the memory then."""
    deadline = time.monotonic() + timeout
    while True:
        current = show(space)
        jobs = current["jobs"]
        if not jobs.get("queued") and not jobs.get("running"):
            return current
        if time.monotonic() > deadline:
            raise TimeoutError(f"memory jobs still pending after {timeout} s: {jobs}")
        time.sleep(0.2)
