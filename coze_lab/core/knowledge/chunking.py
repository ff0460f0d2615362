"""Chunking rules (Coze's ``chunk_strategy``): automatic, or a separator, a maximum length
in tokens and an overlap.

Tokens are counted the way most tokenizers roughly do for mixed text: a word (with its
trailing space) or one CJK character is one token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coze_lab.core.errors import InvalidParameter

_TOKEN = re.compile(
    r"[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]|[^\s\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]+\s*|\s+"
)
_URL_EMAIL = re.compile(r"https?://\S+|www\.\S+|[\w.+-]+@[\w-]+\.[\w.-]+")


@dataclass(frozen=True)
class ChunkStrategy:
    """How a document is cut: ``chunk_type`` 0 automatic (paragraphs packed to 800 tokens,
    80 of overlap), 1 custom (each piece between separators is a chunk, cut at
    ``max_tokens`` 100-2000, with ``overlap`` tokens of the previous piece).

    Example:
        >>> ChunkStrategy.from_dict({"chunk_type": 1, "separator": "###", "max_tokens": 200})
        ChunkStrategy(chunk_type=1, separator='###', max_tokens=200, overlap=0, remove_extra_spaces=False, remove_urls_emails=False)
    """  # noqa: E501

    chunk_type: int = 0
    separator: str = "\n\n"
    max_tokens: int = 800
    overlap: int = 80
    remove_extra_spaces: bool = False
    remove_urls_emails: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ChunkStrategy:
        """Validate a ``chunk_strategy`` object (None or ``chunk_type`` 0: automatic)."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise InvalidParameter("chunk_strategy must be an object")
        kind = data.get("chunk_type")
        if isinstance(kind, bool) or kind not in (0, 1, None):
            raise InvalidParameter("chunk_strategy.chunk_type must be 0 (automatic) or 1 (custom)")
        if kind != 1:
            return cls()
        separator = data.get("separator")
        if not isinstance(separator, str) or not 1 <= len(separator) <= 100:
            raise InvalidParameter(
                "chunk_strategy.separator (1 to 100 characters) is required when chunk_type is 1"
            )
        max_tokens = data.get("max_tokens")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise InvalidParameter("chunk_strategy.max_tokens is required when chunk_type is 1")
        if not 100 <= max_tokens <= 2000:
            raise InvalidParameter("chunk_strategy.max_tokens must be between 100 and 2000")
        overlap = data.get("overlap") or 0
        if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap <= 99:
            raise InvalidParameter("chunk_strategy.overlap must be between 0 and 99 tokens")
        flags = {}
        for flag in ("remove_extra_spaces", "remove_urls_emails"):
            value = data.get(flag)
            if value is not None and not isinstance(value, bool):
                raise InvalidParameter(f"chunk_strategy.{flag} must be true or false")
            flags[flag] = bool(value)
        # "\\n" typed in a form or a JSON string written by hand means a line break
        separator = separator.replace("\\n", "\n").replace("\\t", "\t")
        return cls(1, separator, max_tokens, overlap, **flags)

    def to_dict(self) -> dict[str, Any]:
        if self.chunk_type == 0:
            return {"chunk_type": 0}
        return {
            "chunk_type": 1,
            "separator": self.separator,
            "max_tokens": self.max_tokens,
            "overlap": self.overlap,
            "remove_extra_spaces": self.remove_extra_spaces,
            "remove_urls_emails": self.remove_urls_emails,
        }


def count_tokens(text: str) -> int:
    """Approximate tokens of ``text``.

    Example:
        >>> count_tokens("Hello big world"), count_tokens("知识库")
        (3, 3)
    """
    return sum(1 for t in _TOKEN.findall(text) if not t.isspace())


def chunk_text(text: str, strategy: ChunkStrategy) -> list[str]:
    """Cut ``text`` into chunks of at most ``max_tokens`` tokens (plus the overlap taken
    from the end of the previous chunk). Automatic: paragraphs packed together up to the
    limit; custom: each piece between separators is a chunk (a longer one is cut).

    Example:
        >>> rule = ChunkStrategy(1, "\\n", 100, 0)
        >>> chunk_text("first line\\nsecond line", rule)
        ['first line\\nsecond line']
    """
    if strategy.remove_urls_emails:
        text = _URL_EMAIL.sub("", text)
    if strategy.remove_extra_spaces or strategy.chunk_type == 0:
        text = re.sub(r"[ \t]+", " ", text)
        text = re.sub(r"\n\s*\n\s*", "\n\n", text)
    pieces: list[list[str]] = []
    for piece in text.split(strategy.separator):
        tokens = _TOKEN.findall(piece.strip())
        words = [t for t in tokens if not t.isspace()]
        if not words:
            continue
        # a piece longer than the limit is cut at token boundaries
        while tokens:
            taken, count = [], 0
            while tokens and (count < strategy.max_tokens or tokens[0].isspace()):
                token = tokens.pop(0)
                taken.append(token)
                count += 0 if token.isspace() else 1
            pieces.append(taken)
    if strategy.chunk_type == 1:  # custom: every separated piece is a chunk
        out, previous = [], None
        for piece in pieces:
            overlap = "".join(_tail(previous, strategy.overlap)) if previous else ""
            out.append(f"{overlap.rstrip()} {''.join(piece)}" if overlap else "".join(piece))
            previous = piece
        return [c for c in (chunk.strip() for chunk in out) if c]
    chunks: list[list[str]] = []
    current: list[str] = []
    joiner = _TOKEN.findall(strategy.separator) or [strategy.separator]
    for piece in pieces:
        size = sum(1 for t in current if not t.isspace())
        add = sum(1 for t in piece if not t.isspace())
        if current and size + add > strategy.max_tokens:
            chunks.append(current)
            current = _tail(current, strategy.overlap)
        current = [*current, *joiner, *piece] if current else list(piece)
    if current and (not chunks or current != _tail(chunks[-1], strategy.overlap)):
        chunks.append(current)
    return [c for c in ("".join(chunk).strip() for chunk in chunks) if c]


def _tail(tokens: list[str], count: int) -> list[str]:
    if count <= 0:
        return []
    taken: list[str] = []
    words = 0
    for token in reversed(tokens):
        taken.append(token)
        words += 0 if token.isspace() else 1
        if words >= count:
            break
    return list(reversed(taken))
