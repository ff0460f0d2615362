"""The server-sent-events decoder of the lean model path: framing rules and split reads."""

from __future__ import annotations

import pytest

from coze_lab.core.models.sse import ServerSentEvent, SSEDecoder

STREAM = (
    b": keep-alive\n"
    b'data: {"a": 1}\n\n'
    b"event: error\n"
    b"data: first line\n"
    b"data:second line\n\n"
    b"\n\n"  # blank lines between events dispatch nothing
    b"id: 7\nretry: 100\ndata: [DONE]\n\n"
)
EVENTS = [
    ServerSentEvent("", b'{"a": 1}'),
    ServerSentEvent("error", b"first line\nsecond line"),
    ServerSentEvent("", b"[DONE]"),
]


def decode(pieces: list[bytes]) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = [event for piece in pieces for event in decoder.feed(piece)]
    return events + decoder.close()


def test_whole_stream() -> None:
    assert decode([STREAM]) == EVENTS


@pytest.mark.parametrize("ending", [b"\r\n", b"\r"])
def test_other_line_endings(ending: bytes) -> None:
    assert decode([STREAM.replace(b"\n", ending)]) == EVENTS


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
def test_every_split_point_gives_the_same_events(ending: bytes) -> None:
    stream = STREAM.replace(b"\n", ending)
    for cut in range(1, len(stream)):
        assert decode([stream[:cut], stream[cut:]]) == EVENTS, cut
    assert decode([stream[i : i + 1] for i in range(len(stream))]) == EVENTS


def test_events_arrive_as_soon_as_their_blank_line_does() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a": 1}\n') == []
    assert decoder.feed(b"\n") == [ServerSentEvent("", b'{"a": 1}')]
    assert decoder.feed(b"data: partial") == []


def test_close_flushes_a_last_event_without_its_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: one\n\ndata: two") == [ServerSentEvent("", b"one")]
    assert decoder.close() == [ServerSentEvent("", b"two")]


def test_utf8_split_inside_a_character_stays_intact() -> None:
    payload = '{"content": "中文 ünïcode"}'.encode()
    stream = b"data: " + payload + b"\n\n"
    cut = stream.index(payload) + payload.index("文".encode()) + 1
    assert decode([stream[:cut], stream[cut:]]) == [ServerSentEvent("", payload)]
