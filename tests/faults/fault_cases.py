"""The faults: what a backend does (a script of steps), where it applies, and the
canonical error the gateway must give its caller.

A script is read by both transports of the fault backend (fault_http.py for JSON-RPC and
REST, fault_grpc.py for gRPC), so each fault is written once. Steps that only make sense
on HTTP (a 502 page, a body without end) appear only in faults limited to HTTP backends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tests.faults.fault_wire import ALL_BINDINGS, DIALECTS, HTTP_BINDINGS, Dialect, EventKind

# Long enough to be "forever" for the gateway (its bounds are 0.5-1.5 s) but bounded, so
# that a fault server never outlives a test by much even if nobody closes on it.
FOREVER = 20.0
HUGE_TEXT = "x" * (1 << 20)  # one text part of 1 MiB: past max_answer_bytes (64 KiB)
# gRPC reset_during (unary): an answer of 8 KiB that the cutting proxy forwards in part.
PARTIAL_TEXT = "x" * 8192


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Answer:
    """A complete, valid unary answer."""
    text: str = "x"
    wrong_id: bool = False  # JSON-RPC: answer with an id the gateway did not send


@dataclass(frozen=True)
class Partial:
    """Status line, headers and part of a valid answer's body, then a TCP reset."""


@dataclass(frozen=True)
class Head:
    """Stream headers: HTTP 200 text/event-stream (chunked); gRPC initial metadata."""


@dataclass(frozen=True)
class Event:
    what: EventKind = "working"
    text: str = "x"
    wrong_id: bool = False


@dataclass(frozen=True)
class Repeat:
    """A valid `working` event every `every` seconds until the caller goes away."""
    every: float


@dataclass(frozen=True)
class Garbage:
    """Bytes that are not the answer's format: a non-JSON body or SSE data line; on gRPC,
    message bytes that do not parse (a truncated varint)."""


@dataclass(frozen=True)
class Together:
    """Valid events, then a Garbage data line, in one write: the gateway reads them in
    one read (gRPC: one message each, written back to back)."""
    events: int = 2


@dataclass(frozen=True)
class End:
    """A clean end: the last chunk of an HTTP body, an OK status on gRPC."""


@dataclass(frozen=True)
class Hold:
    """Silence, until the caller goes away."""


@dataclass(frozen=True)
class Cut:
    """Cut the connection with a TCP reset. On gRPC the cutting proxy in front of the
    servicer makes the cut (fault_grpc.CUT_RULES); the servicer just holds."""


@dataclass(frozen=True)
class BadGateway:
    """HTTP 502 with an nginx-style HTML page."""


@dataclass(frozen=True)
class Flood:
    """HTTP 200 of `content_type`, no Content-Length, bytes as fast as possible."""
    content_type: str = "application/json"


@dataclass(frozen=True)
class Drip:
    """HTTP 200 of `content_type`, one byte every 10 ms."""
    content_type: str = "application/json"


Step = (Sleep | Answer | Partial | Head | Event | Repeat | Garbage | Together | End | Hold
        | Cut | BadGateway | Flood | Drip)
Script = tuple[Step, ...]
Mode = Literal["unary", "stream"]
EventsBefore = Literal["none", "one", "two", "some"]

_OK_STREAM: Script = (Head(), Event("working"), Event("completed"), End())


@dataclass(frozen=True)
class Fault:
    name: str
    kind: str | None  # the canonical error (translators/errors.py); None: a control cell
    doc: str
    unary: Script | None  # None: the fault has no unary form
    stream: Script
    events: EventsBefore = "none"  # stream events the caller gets before the error
    bindings: frozenset[str] = ALL_BINDINGS  # backend bindings it applies to
    listens: bool = True  # False: nothing listens on the backend's port

    @property
    def modes(self) -> tuple[Mode, ...]:
        return ("stream",) if self.unary is None else ("unary", "stream")

    def applies_to(self, backend: Dialect) -> bool:
        return backend.binding in self.bindings

    def script(self, mode: Mode) -> Script:
        script = self.unary if mode == "unary" else self.stream
        assert script is not None, f"{self.name} has no {mode} form"
        return script


FAULTS: tuple[Fault, ...] = (
    Fault("ok", None, "control: a well-behaved backend (proves the harness's valid shapes)",
          (Answer(),), _OK_STREAM, events="some"),
    Fault("down", "BackendUnavailableError", "nothing listens on the backend's port",
          (), (), listens=False),
    Fault("slow", "BackendTimeoutError", "answers only after 5 s",
          (Sleep(5.0), Answer()), (Sleep(5.0), *_OK_STREAM)),
    Fault("reset_before", "BackendUnavailableError",
          "reads the request, then resets the connection without a byte of answer",
          (Cut(),), (Cut(),)),
    Fault("reset_during", "BackendUnavailableError",
          "unary: status, headers and part of the body, then a reset; stream: one valid "
          "event, then a reset", (Partial(),), (Head(), Event("working"), Cut()),
          events="one"),
    Fault("garbage", "InvalidAgentResponseError", "HTTP 200 whose body is not JSON; gRPC "
          "bytes that do not parse", (Garbage(),), (Head(), Garbage(), End())),
    Fault("html_502", "BackendUnavailableError", "HTTP 502 with an nginx HTML page",
          (BadGateway(),), (BadGateway(),), bindings=HTTP_BINDINGS),
    Fault("wrong_id", "InvalidAgentResponseError",
          "a valid JSON-RPC answer whose id is not the request's",
          (Answer(wrong_id=True),),
          (Head(), Event("working", wrong_id=True), Event("completed", wrong_id=True), End()),
          bindings=frozenset({"JSONRPC"})),
    Fault("huge", "InvalidAgentResponseError", "a valid answer (or one event) of 1 MiB",
          (Answer(HUGE_TEXT),), (Head(), Event("message", HUGE_TEXT), End())),
    Fault("endless_body", "InvalidAgentResponseError",
          "HTTP 200 application/json without Content-Length, bytes as fast as possible",
          (Flood(),), (Flood(),), bindings=HTTP_BINDINGS),
    Fault("drip", "BackendTimeoutError", "HTTP 200 application/json, one byte every 10 ms",
          (Drip(),), (Drip(),), bindings=HTTP_BINDINGS),
    Fault("endless_sse", "BackendTimeoutError",
          "a valid event every 50 ms, past stream_max_duration",
          None, (Head(), Repeat(0.05)), events="some"),
    Fault("idle_sse", "BackendTimeoutError", "stream headers, then silence",
          None, (Head(), Hold())),
    Fault("idle_after_first", "BackendTimeoutError", "one valid event, then silence",
          None, (Head(), Event("working"), Hold()), events="one"),
    Fault("garbage_after", "InvalidAgentResponseError",
          "two valid events and an SSE data line that is not JSON, in one write (gRPC: "
          "two messages and bytes that do not parse, back to back)", None, (Head(), Together(2), Hold()), events="two"),
)
BY_NAME: dict[str, Fault] = {f.name: f for f in FAULTS}


@dataclass(frozen=True)
class Cell:
    """One client call of a (backend dialect, fault) case."""

    client: Dialect
    mode: Mode

    @property
    def tenant(self) -> str:
        return f"{self.client.slug}-{self.mode}"

    def __str__(self) -> str:
        return f"{self.client.name} {self.mode}"


def cells(fault: Fault) -> list[Cell]:
    return [Cell(client, mode) for client in DIALECTS for mode in fault.modes]
