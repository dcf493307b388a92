"""The contract: how a canonical error must reach each client dialect, read from the
ERROR_KINDS table (translators/errors.py), and the verdict on one observed call.

Where the error travels (`carrier`):
- unary calls: a plain answer (`json`) on HTTP, the status on gRPC;
- streams, before the first event: JSON-RPC v1.0 and REST answer plainly (`json`);
  JSON-RPC v0.3 answers 200 text/event-stream with one `data:` line (`sse`), which is
  how the v0.3 SDK clients read it;
- streams, after events: one more SSE frame (`sse`): a JSON-RPC error with the request's
  id, or REST's `event: error` with the version's error body; nothing may follow it.
"""

from __future__ import annotations

from typing import Any

from tests.faults.fault_cases import Cell, Fault, Mode
from tests.faults.fault_clients import CELL_SECONDS, Observation
from tests.faults.fault_wire import Dialect
from translators.errors import BY_NAME, GATEWAY_DOMAIN, ErrorKind


def carrier(client: Dialect, mode: Mode, after_events: bool) -> str:
    if client.binding == "GRPC":
        return "grpc"
    if mode == "unary":
        return "json"
    return "sse" if after_events or client.family == "J03" else "json"


def _facts(client: Dialect, kind: ErrorKind) -> dict[str, Any]:
    """The error's rendering in the client's dialect, as fault_clients.py reads it."""
    # v0.3 bodies name only the gateway's own errors (A2A errors have their own codes
    # and statuses); an A2A error must then carry no gateway reason.
    v03_reason = kind.reason if kind.domain == GATEWAY_DOMAIN else None
    match (client.binding, client.version):
        case ("JSONRPC", "1.0"):
            return {"http": 200, "code": kind.code, "reason": kind.reason, "id_ok": True}
        case ("JSONRPC", _):
            return {"http": 200, "code": kind.code, "reason": v03_reason, "id_ok": True}
        case ("HTTP+JSON", "1.0"):
            return {"http": kind.http, "body_code": kind.http, "status": kind.grpc,
                    "reason": kind.reason}
        case ("HTTP+JSON", _):
            return {"http": kind.v03_http, "reason": v03_reason, "has_message": True}
        case ("GRPC", "1.0"):
            return {"status": kind.grpc, "reason": kind.reason, "details_code": kind.grpc}
        case _:
            return {"status": kind.v03_grpc, "prefix": kind.v03_name or kind.name}


def expected_error(client: Dialect, kind_name: str, mode: Mode,
                   after_events: bool) -> dict[str, Any]:
    facts = _facts(client, BY_NAME[kind_name])
    facts["carrier"] = carrier(client, mode, after_events)
    if facts["carrier"] == "sse":
        facts["after"] = 0
        if client.binding == "HTTP+JSON":  # the 200 is long sent; the frame says error
            del facts["http"]
            facts["event"] = "error"
    return facts


def events_ok(fault: Fault, mode: Mode, events: int) -> bool:
    if mode == "unary":
        return events == 0
    return {"none": events == 0, "one": events == 1, "two": events == 2,
            "some": events >= 1}[fault.events]


def verdict(fault: Fault, cell: Cell, obs: Observation) -> str | None:
    """None if the call went as the contract says, else what is wrong with it."""
    wrong = []
    if not events_ok(fault, cell.mode, obs.events):
        wrong.append(f"events: want {fault.events if cell.mode == 'stream' else 'none'}")
    if obs.seconds >= CELL_SECONDS:
        wrong.append(f"took {obs.seconds:.2f}s")
    if fault.kind is None:
        if obs.outcome == "ok" and not wrong:
            return None
        return f"{cell} {wrong}: want success; got {obs.summary()}"
    after_events = cell.mode == "stream" and fault.events != "none"
    want = expected_error(cell.client, fault.kind, cell.mode, after_events)
    if obs.outcome == "error" and {k: obs.error.get(k) for k in want} == want and not wrong:
        return None
    return f"{cell} {wrong}: want {fault.kind} {want}; got {obs.summary()}"
