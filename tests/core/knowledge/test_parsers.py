"""Parsers and chunking rules: every accepted file type, and the reasons bad files give."""

from __future__ import annotations

import pytest

from coze_lab.core.errors import InvalidParameter
from coze_lab.core.knowledge import ChunkStrategy, ParseError, chunk_text, count_tokens, parse
from coze_lab.testing.documents import docx_bytes, pdf_bytes


def test_each_file_type_gives_its_text() -> None:
    assert parse("txt", "Grüße\n".encode()).blocks == ["Grüße\n"]
    assert parse("md", b"# Title\n\nBody").blocks == ["# Title\n\nBody"]
    assert parse("csv", b"city;country\nOslo;Norway\n\nLima;Peru\n").blocks == [
        "city: Oslo\ncountry: Norway",
        "city: Lima\ncountry: Peru",
    ]
    assert "launch code is 4471" in parse("pdf", pdf_bytes(["The launch code is 4471."])).blocks[0]
    assert parse("docx", docx_bytes(["One", "Two & three"])).blocks == ["One\n\nTwo & three"]
    html = b"<html><head><title>t</title><style>p{}</style></head><body><h1>Head</h1><p>A &amp; B</p></body></html>"
    assert parse("html", html).blocks == ["Head\n\nA & B"]


@pytest.mark.parametrize(
    ("kind", "data", "reason"),
    [
        ("pdf", b"%PDF-1.4 not really", "the pdf file cannot be read"),
        ("docx", b"PK not a zip", "the docx file cannot be read"),
        ("csv", b"only,a,header\n", "header row and at least one row"),
        ("txt", b"   \n", "holds no text"),
        ("txt", b"\x00\x01\x02\xff\xfe", "binary"),
    ],
)
def test_bad_files_say_why(kind: str, data: bytes, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parse(kind, data)


def test_custom_rule_separator_max_tokens_and_overlap() -> None:
    lines = [" ".join(f"w{i}x{j}" for j in range(30)) for i in range(10)]
    rule = ChunkStrategy.from_dict(
        {"chunk_type": 1, "separator": "\\n", "max_tokens": 100, "overlap": 10}
    )
    chunks = chunk_text("\n".join(lines), rule)
    assert [count_tokens(c) for c in chunks] == [30] + [40] * 9
    assert chunks[1].split()[:10] == lines[0].split()[-10:]  # the overlap
    packed = chunk_text("\n\n".join(lines), ChunkStrategy())
    assert [count_tokens(c) for c in packed] == [300]
    long = chunk_text(" ".join(f"t{i}" for i in range(250)), ChunkStrategy(1, "\n", 100, 0))
    assert [count_tokens(c) for c in long] == [100, 100, 50]
    cleaned = chunk_text(
        "mail a@b.org or see https://x.io/p now",
        ChunkStrategy(1, "\n", 100, 0, remove_extra_spaces=True, remove_urls_emails=True),
    )
    assert cleaned == ["mail or see now"]
    assert count_tokens("知识库 ok") == 4


@pytest.mark.parametrize(
    "bad",
    [
        {"chunk_type": 3},
        {"chunk_type": 1, "max_tokens": 500},
        {"chunk_type": 1, "separator": "\n", "max_tokens": 50},
        {"chunk_type": 1, "separator": "\n", "max_tokens": 200, "overlap": 150},
    ],
)
def test_bad_rules_are_refused(bad: dict) -> None:
    with pytest.raises(InvalidParameter, match="chunk_strategy"):
        ChunkStrategy.from_dict(bad)
