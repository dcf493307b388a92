"""J03 (v0.3 JSON-RPC shape) builders and JSON-RPC errors used by the demo agent.

Objects are kept as plain dicts because they are only ever read back as JSON; a
typed model would just be serialised again.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

JSON = dict[str, Any]

TERMINAL_STATES = frozenset({"completed", "canceled", "failed", "rejected"})
# A v0.3 stream also ends when the agent waits for the client (py@v0.3.26 event_consumer).
INTERRUPTED_STATES = frozenset({"input-required", "auth-required"})

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002


class RpcError(Exception):
    """A JSON-RPC error to send back instead of a result."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> JSON:
        error: JSON = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def invalid_params(detail: str) -> RpcError:
    return RpcError(INVALID_PARAMS, f"Invalid parameters: {detail}")


def task_not_found(task_id: str) -> RpcError:
    return RpcError(TASK_NOT_FOUND, "Task not found", {"taskId": task_id})


def new_id() -> str:
    return str(uuid.uuid4())


def now_iso() -> str:
    # Emit "Z" rather than "+00:00": both are ISO 8601, and "Z" is what v1.0 requires,
    # so the gateway's translation of our timestamps is a no-op.
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def text_part(text: str) -> JSON:
    return {"kind": "text", "text": text}


def agent_message(text: str, *, context_id: str, task_id: str | None = None) -> JSON:
    message: JSON = {
        "kind": "message",
        "messageId": new_id(),
        "role": "agent",
        "parts": [text_part(text)],
        "contextId": context_id,
    }
    if task_id is not None:
        message["taskId"] = task_id
    return message


def is_final_status(state: str) -> bool:
    return state in TERMINAL_STATES or state in INTERRUPTED_STATES


def ends_stream(event: JSON) -> bool:
    """Whether a v0.3 client should expect nothing after this stream event."""
    kind = event.get("kind")
    if kind == "message":
        return True
    if kind == "status-update":
        return bool(event.get("final"))
    return False


def success(request_id: Any, result: Any) -> JSON:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def failure(request_id: Any, error: RpcError) -> JSON:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}
