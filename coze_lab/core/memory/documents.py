"""The Markdown of a user's long-term memory: ``user.md`` (facts and preferences, one
``- fact`` per line) and ``skills/<name>.md`` (how-tos), and how changes merge into them.

Pure text functions: no database, no files.

Example:
    >>> doc = merge_fact("", "add", "Name is Ada")
    >>> doc = merge_fact(doc, "add", "name is Ada.")      # a duplicate: no change
    >>> merge_fact(doc, "update", "Prefers metric units", old="Prefers imperial units")
    '# About me\\n\\n- Name is Ada\\n- Prefers metric units\\n'
"""

from __future__ import annotations

import hashlib
import re
from difflib import SequenceMatcher

from coze_lab.core.errors import InvalidParameter

USER_PATH = "user.md"
SKILLS_DIR = "skills"
USER_HEADING = "# About me"
#: the longest document (characters); longer files are served cut to this
MAX_DOCUMENT_CHARS = 20_000
#: the most skills a user keeps in one space
MAX_SKILLS = 100
#: two facts at least this similar are the same fact (add skips it)
DUPLICATE_RATIO = 0.88
#: a fact at least this similar to the one named is the one an update or delete changes
MATCH_RATIO = 0.6
_SKILL = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_FACT = re.compile(r"^\s*[-*]\s+(.*\S)\s*$")


def check_skill(name: object) -> str:
    """A skill name: lower-case letters, digits, ``-`` and ``_``, at most 64.

    Example:
        >>> check_skill("csv-export")
        'csv-export'
    """
    if not isinstance(name, str) or not _SKILL.fullmatch(name):
        raise InvalidParameter(
            "skill name must be 1-64 lower-case letters, digits, '-' or '_' "
            f"(starting with a letter or digit), not {str(name)[:80]!r}"
        )
    return name


def skill_path(name: str) -> str:
    """The path of a skill's document.

    Example:
        >>> skill_path("csv-export")
        'skills/csv-export.md'
    """
    return f"{SKILLS_DIR}/{check_skill(name)}.md"


def skill_name(path: str) -> str | None:
    """The skill a path names (None: not a skill's document).

    Example:
        >>> skill_name("skills/a.md"), skill_name("user.md")
        ('a', None)
    """
    if path.startswith(f"{SKILLS_DIR}/") and path.endswith(".md"):
        name = path[len(SKILLS_DIR) + 1 : -3]
        return name if _SKILL.fullmatch(name) else None
    return None


def as_text(data: bytes | str, max_chars: int = MAX_DOCUMENT_CHARS) -> str:
    """Whatever a file holds, as text: UTF-8 with replacement characters, NUL replaced
    (databases refuse it), cut to ``max_chars``.

    Example:
        >>> as_text(b"caf\\xc3\\xa9 \\xff\\x00 end", 8)
        'café \\ufffd\\ufffd '
    """
    if isinstance(data, bytes):
        data = data[: max_chars * 4].decode("utf-8", errors="replace")
    return data.replace("\x00", "\ufffd")[:max_chars]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def facts(markdown: str) -> list[str]:
    """The ``- fact`` lines of a document.

    Example:
        >>> facts("# About me\\n\\n- Name is Ada\\n* Likes tea\\ntext")
        ['Name is Ada', 'Likes tea']
    """
    return [m.group(1) for line in markdown.splitlines() if (m := _FACT.match(line))]


def _norm(text: str) -> str:
    return " ".join(text.casefold().split()).strip(" .!;")


def similarity(a: str, b: str) -> float:
    """How alike two facts are (0..1), case, spacing and end punctuation aside.

    Example:
        >>> similarity("Prefers metric units.", "prefers  metric units")
        1.0
    """
    return SequenceMatcher(None, _norm(a), _norm(b)).ratio()


def _best(lines: list[str], text: str) -> tuple[int | None, float]:
    best, score = None, 0.0
    for index, line in enumerate(lines):
        match = _FACT.match(line)
        if match:
            ratio = similarity(match.group(1), text)
            if ratio > score:
                best, score = index, ratio
    return best, score


def _one_line(text: str) -> str:
    return " ".join(text.split())


def merge_fact(markdown: str, op: str, text: str, old: str | None = None) -> str:
    """``user.md`` after one change: ``add`` (skipped when a fact that similar is there),
    ``update`` (the fact most like ``old``, or like ``text``, replaced; added when none
    is alike) or ``delete`` (the fact most like ``text`` removed). Text outside the
    ``- fact`` lines stays as the user wrote it."""
    text = _one_line(text)
    lines = markdown.splitlines()
    if op == "delete":
        index, score = _best(lines, text)
        if index is not None and score >= MATCH_RATIO:
            del lines[index]
        return _joined(lines)
    if op == "update":
        index, score = _best(lines, old or text)
        if index is not None and score >= MATCH_RATIO:
            lines[index] = f"- {text}"
            return _joined(_without_duplicates(lines, index))
    index, score = _best(lines, text)
    if index is not None and score >= DUPLICATE_RATIO:
        return _joined(lines)
    fact_lines = [i for i, line in enumerate(lines) if _FACT.match(line)]
    if fact_lines:
        lines.insert(fact_lines[-1] + 1, f"- {text}")
    else:
        if not any(line.strip() for line in lines):
            lines = [USER_HEADING, ""]
        elif lines[-1].strip():
            lines.append("")
        lines.append(f"- {text}")
    return _joined(lines)


def _without_duplicates(lines: list[str], kept: int) -> list[str]:
    fact = _FACT.match(lines[kept])
    assert fact is not None
    return [
        line
        for i, line in enumerate(lines)
        if i == kept
        or not (m := _FACT.match(line))
        or similarity(m.group(1), fact.group(1)) < DUPLICATE_RATIO
    ]


def _joined(lines: list[str]) -> str:
    return "\n".join(lines).rstrip("\n") + "\n" if any(line.strip() for line in lines) else ""


def merge_skill(current: str | None, name: str, op: str, text: str) -> str | None:
    """A skill's document after one change (None: deleted). ``add`` appends what is not
    there yet; ``update`` replaces the body.

    Example:
        >>> merge_skill(None, "csv", "add", "Use ; as the separator.")
        '# csv\\n\\nUse ; as the separator.\\n'
    """
    if op == "delete":
        return None
    body = text.strip()
    if current is None or op == "update" or not current.strip():
        return f"# {name}\n\n{body}\n"
    if _norm(body) in _norm(current):
        return current
    return current.rstrip("\n") + f"\n\n{body}\n"


def render(documents: dict[str, str], max_chars: int) -> str:
    """The prompt section a bot with memory gets (empty: nothing remembered).

    Example:
        >>> print(render({"user.md": "# About me\\n\\n- Name is Ada\\n"}, 1000))
        # Personal memory
        What you remember about this user from earlier conversations. Use it; when the user's
        current message says otherwise, the current message wins.
        <BLANKLINE>
        ## user.md
        # About me
        <BLANKLINE>
        - Name is Ada
    """
    parts = []
    for path in sorted(documents, key=lambda p: (p != USER_PATH, p)):
        body = documents[path].strip()
        if body:
            parts.append(f"## {path}\n{body}")
    if not parts:
        return ""
    text = (
        "# Personal memory\nWhat you remember about this user from earlier conversations. "
        "Use it; when the user's\ncurrent message says otherwise, the current message wins.\n\n"
        + "\n\n".join(parts)
    )
    if len(text) > max_chars:
        text = text[:max_chars] + "\n[memory cut: it is longer than the prompt allows]"
    return text
