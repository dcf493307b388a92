"""A raw SSE reader for tests that look at the framing itself: the `id:` and `retry:`
fields a resumable stream carries, which the official SDK clients neither show nor send
back (a reconnect's `Last-Event-ID` has to be sent by hand).

Framing as WHATWG's EventSource parses it, limited to what the tests read: an event is
the field block up to a blank line; `data:` lines join with a newline; a comment (`:`)
is skipped; one space after the colon is dropped. Unlike EventSource, an event's `id`
here is only the one in its own block (None when it had none): the tests check that
every event carries one, which a carried-over id would hide.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp


@dataclass(frozen=True)
class SseEvent:
    data: str
    id: str | None = None
    retry: int | None = None
    event: str = "message"

    def json(self) -> Any:
        return json.loads(self.data)


def _field(line: str) -> tuple[str, str]:
    name, colon, value = line.partition(":")
    return name, value.removeprefix(" ") if colon else ""


async def sse_events(resp: aiohttp.ClientResponse) -> AsyncIterator[SseEvent]:
    """The events of an SSE response body, as they arrive (an unfinished last block,
    cut by the connection's end, is not an event)."""
    data: list[str] = []
    fields: dict[str, str] = {}
    async for raw in resp.content:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                retry = fields.get("retry", "")
                yield SseEvent("\n".join(data), fields.get("id"),
                               int(retry) if retry.isdigit() else None,
                               fields.get("event", "message"))
            data, fields = [], {}
            continue
        if line.startswith(":"):
            continue
        name, value = _field(line)
        if name == "data":
            data.append(value)
        elif name in ("id", "retry", "event"):
            fields[name] = value


@dataclass
class Answer:
    """A streaming call's answer: its HTTP status, and either SSE events (read with
    :meth:`SseStream.events`) or a JSON body (an error before any event)."""

    status: int
    content_type: str
    body: Any = None


class SseStream:
    """One streaming HTTP call, open for the block: ``answer`` says how it came back;
    ``events()`` reads its SSE events; leaving the block (or :meth:`drop`) closes the
    connection, as a client that goes away does."""

    def __init__(self, http: aiohttp.ClientSession, method: str, url: str, *,
                 body: Any = None, headers: Mapping[str, str] | None = None) -> None:
        self._call = http.request(method, url, json=body, headers=dict(headers or {}))
        self._resp: aiohttp.ClientResponse | None = None
        self.answer = Answer(0, "")

    async def __aenter__(self) -> SseStream:
        self._resp = resp = await self._call
        content_type = resp.headers.get("Content-Type", "")
        self.answer = Answer(resp.status, content_type)
        if not content_type.startswith("text/event-stream"):
            text = await resp.text()
            try:
                self.answer.body = json.loads(text)
            except ValueError:
                self.answer.body = text
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.drop()

    @property
    def is_sse(self) -> bool:
        return self.answer.content_type.startswith("text/event-stream")

    def events(self) -> AsyncIterator[SseEvent]:
        assert self._resp is not None and self.is_sse, self.answer
        return sse_events(self._resp)

    def drop(self) -> None:
        """Close the connection at once, the body unread (not back to the pool)."""
        if self._resp is not None:
            self._resp.close()
