"""The SSE fields a journaled event carries before its data (translators/sse.py): read
back by the gateway's own parser as the same event, and an id that would break the
framing is refused."""

from __future__ import annotations

import pytest

from translators.sse import SseParser, event_fields, sse_frame


def test_id_and_retry_go_before_the_data_of_the_same_event() -> None:
    framed = event_fields("MTp0", 1000) + sse_frame({"k": 1})
    assert framed.startswith(b"retry: 1000\nid: MTp0\ndata: ")
    events = SseParser(1 << 16).feed(framed)
    assert [e.data for e in events] == ['{"k":1}']  # one event, its data whole


def test_without_a_retry_only_the_id() -> None:
    assert event_fields("x") == b"id: x\n"


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\0b"])
def test_an_id_that_would_break_the_framing_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        event_fields(bad)
