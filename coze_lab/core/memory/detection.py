"""Memory signals in a user's message: what to remember, change or forget.

The model is asked (one JSON-mode call through the model registry) for proposed changes;
when it keeps failing, :func:`rule_changes` finds the plainest signals ("remember that…",
"my name is…", "I prefer…", "call me…") so nothing the user asked to keep is lost.

Example:
    >>> parse_changes('{"changes": [{"op": "add", "kind": "fact", "text": "Name is Ada"}]}')
    [Change(op='add', kind='fact', text='Name is Ada', name='', old='')]
    >>> [c.text for c in rule_changes("My name is Ada; remember that I prefer metric units.")]
    ['Name is Ada', 'Prefers metric units']
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from coze_lab.core.memory.documents import _SKILL, facts

#: the most changes one message may make
MAX_CHANGES = 20
#: the longest fact or skill text a change may carry
MAX_CHANGE_CHARS = 2000
OPS = ("add", "update", "delete")
KINDS = ("fact", "skill")

Completer = Callable[..., Awaitable[tuple[str, Mapping[str, Any]]]]


@dataclass(frozen=True)
class Change:
    """One proposed change: ``op`` on a ``fact`` (``old``: the fact an update replaces) or a
    ``skill`` (``name``)."""

    op: str
    kind: str
    text: str
    name: str = ""
    old: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"op": self.op, "kind": self.kind, "text": self.text, "name": self.name}


INSTRUCTIONS = """You maintain a user's long-term memory for an assistant.
Read the user's message and decide what is worth remembering across conversations:
explicit requests ("remember that...", "from now on...", "always/never..."), stated facts
about the user (name, role, location), stated preferences, and corrections of what is
remembered. Also how-tos the assistant should reuse (skills). Ignore one-off requests.

Answer with one JSON object: {"changes": [...]} where each change is
{"op": "add"|"update"|"delete", "kind": "fact", "text": "<short fact, third person>",
 "old": "<the remembered fact an update replaces>"}
or {"op": "add"|"update"|"delete", "kind": "skill", "name": "<lower-case-slug>",
 "text": "<the how-to in Markdown>"}.
Write facts short, e.g. "Name is Ada", "Prefers metric units". Answer {"changes": []}
when there is nothing to remember."""


def detection_messages(text: str, user_md: str, skills: list[str]) -> list[dict[str, str]]:
    """The messages of the detection call: what is remembered so far, then the message."""
    remembered = "\n".join(f"- {f}" for f in facts(user_md)) or "(nothing yet)"
    known = ", ".join(skills) or "(none)"
    return [
        {"role": "system", "content": INSTRUCTIONS},
        {
            "role": "user",
            "content": f"Remembered facts:\n{remembered}\n\nSkills: {known}\n\n"
            f"The user's message:\n{text}",
        },
    ]


class DetectionError(Exception):
    """The model's answer is not a usable list of changes."""


def parse_changes(answer: str) -> list[Change]:
    """The changes in a model's answer; DetectionError when it is not JSON of that shape.
    Changes with an unknown op or kind, or no text, are dropped."""
    start, end = answer.find("{"), answer.rfind("}")
    try:
        data = json.loads(answer[start : end + 1]) if start >= 0 else None
    except ValueError as exc:
        raise DetectionError(f"the answer is not JSON: {exc}") from None
    items = data.get("changes") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise DetectionError("the answer has no list of changes")
    changes: list[Change] = []
    for item in items[:MAX_CHANGES]:
        if not isinstance(item, dict):
            continue
        op, kind = item.get("op"), item.get("kind", "fact")
        text, name, old = item.get("text", ""), item.get("name", ""), item.get("old", "")
        if op not in OPS or kind not in KINDS:
            continue
        if not all(isinstance(v, str) for v in (text, name, old)):
            continue
        text, old = text.strip()[:MAX_CHANGE_CHARS], old.strip()[:MAX_CHANGE_CHARS]
        if kind == "skill":
            name = name.strip().lower()
            if not _SKILL.fullmatch(name) or (op != "delete" and not text):
                continue
        elif not text:
            continue
        changes.append(Change(op, kind, text, name if kind == "skill" else "", old))
    return changes


async def detect(
    completer: Completer, model_id: str, text: str, user_md: str, skills: list[str]
) -> list[Change]:
    """One model call: the changes ``text`` proposes."""
    answer, _ = await completer(
        model_id,
        detection_messages(text, user_md, skills),
        response_format={"type": "json_object"},
        temperature=0,
    )
    return parse_changes(answer)


_CLAUSE = r"([^.;!?\n]{2,200})"
_RULES: tuple[tuple[re.Pattern[str], Callable[[str], str]], ...] = (
    (re.compile(r"\bmy name is\s+" + _CLAUSE, re.I), lambda s: f"Name is {s}"),
    (re.compile(r"\bcall me\s+" + _CLAUSE, re.I), lambda s: f"Wants to be called {s}"),
    (
        re.compile(r"\bremember(?: that)?\s+(?:i\s+(?:always\s+)?prefer\s+)" + _CLAUSE, re.I),
        lambda s: f"Prefers {s}",
    ),
    (re.compile(r"\bremember(?: that)?\s+" + _CLAUSE, re.I), lambda s: s[0].upper() + s[1:]),
    (re.compile(r"\bi (?:always |really )?prefer\s+" + _CLAUSE, re.I), lambda s: f"Prefers {s}"),
)


def rule_changes(text: str) -> list[Change]:
    """The plainest memory signals, without a model (the fallback)."""
    found: list[Change] = []
    taken: list[tuple[int, int]] = []
    for pattern, fact in _RULES:
        for match in pattern.finditer(text):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            taken.append(span)
            found.append(Change("add", "fact", fact(match.group(1).strip())))
    order = sorted(range(len(found)), key=lambda i: taken[i][0])
    return [found[i] for i in order][:MAX_CHANGES]
