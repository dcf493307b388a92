"""JSON-RPC 2.0 framing, whatever the A2A version inside: a request's envelope, what a
valid id is, and a response read against the id that was sent (reference §2, §7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from translators.errors import a2a_error, error_from_jsonrpc


@dataclass(slots=True)  # not frozen: one per call (see WireRequest, dialects/contract.py)
class Envelope:
    """A JSON-RPC 2.0 request as far as the envelope goes: id, method, params."""

    request_id: str | int | None
    method: str
    params: Any


def valid_id(value: Any) -> bool:
    # JSON-RPC 2.0: a string, a number (without fraction), or null. bool is not a number;
    # a string must be text (a lone surrogate is not).
    if isinstance(value, str):
        return value.isascii() or _is_text(value)
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_answer(body: Any, sent_id: str | int | None, *, empty_ok: bool = False) -> Any:
    """A backend's JSON-RPC response to the request sent with ``sent_id``: its ``result``
    (None when a successful answer has none, as a2a-sdk 0.3.26's push-config delete does),
    or the A2AError its ``error`` names. Anything else — not a 2.0 response, another id —
    is InvalidAgentResponseError."""
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        raise a2a_error("InvalidAgentResponseError", "not a JSON-RPC 2.0 response")
    if "error" in body:
        # An error may carry a null id (the backend could not read ours); still its error.
        if body.get("id") not in (sent_id, None):
            raise a2a_error("InvalidAgentResponseError",
                            "a JSON-RPC error answering another request id")
        raise error_from_jsonrpc(body["error"])
    if body.get("id") != sent_id or isinstance(body.get("id"), bool):
        raise a2a_error("InvalidAgentResponseError", "a JSON-RPC response to another request "
                        "id than the one sent")
    if "result" not in body and not empty_ok:
        raise a2a_error("InvalidAgentResponseError", "a JSON-RPC response without result or "
                        "error")
    return body.get("result")


def success(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}
