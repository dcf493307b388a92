"""Two small, fast, well-behaved JSON-RPC backends: one v0.3, one v1.0.

Every well-formed call gets a valid canned result of the backend's version, built from
the ids in the request (a task answer names the task asked for); streams send two
events (the task, then its completed status) and end. So any 5xx, INTERNAL or
InvalidAgentResponse a client sees is the gateway's own doing.

The stubs also check what the gateway forwards: a JSON-RPC 2.0 envelope, a method of
the backend's version, the right A2A-Version, and (v1.0) params that a strict ProtoJSON
parser accepts. A complaint is recorded, and the fuzz tests fail on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from google.protobuf import json_format

from tests.fuzz.fuzz_checks import strict_json
from tests.fuzz.fuzz_documents import V03, V10
from tests.fuzz.fuzz_values import JSON
from translators import operations as ops

STAMP = "2026-01-01T00:00:00.000Z"
HOOK = "https://93.184.215.14/stub-hook"


@dataclass
class Stub:
    """A running stub: where it listens and what it found wrong in the gateway's calls."""

    version: str
    url: str = ""
    complaints: list[str] = field(default_factory=list)

    def drain(self) -> list[str]:
        out, self.complaints[:] = list(self.complaints), []
        return out


# ---------------------------------------------------------------- v0.3 answers (J03)


def _s(params: JSON, key: str, default: str) -> str:
    value = params.get(key)
    return value if isinstance(value, str) and value else default


def _message(params: JSON) -> JSON:
    message = params.get("message")
    return message if isinstance(message, dict) else {}


def _message_ids(params: JSON) -> tuple[str, str]:
    message = _message(params)
    return _s(message, "taskId", "task-1"), _s(message, "contextId", "ctx-1")


def _task03(task_id: str, state: str = "completed", history: list[Any] | None = None) -> JSON:
    return {"kind": "task", "id": task_id, "contextId": "ctx-1",
            "status": {"state": state, "timestamp": STAMP},
            "artifacts": [{"artifactId": "a1", "parts": [{"kind": "text", "text": "done"}]}],
            "history": history or []}


def _send03(p: JSON) -> Any:
    task_id, context_id = _message_ids(p)
    if len(_s(_message(p), "messageId", "")) % 2:
        return {"kind": "message", "messageId": "reply-1", "role": "agent",
                "contextId": context_id, "parts": [{"kind": "text", "text": "ok"}]}
    return _task03(task_id, history=[p["message"]] if isinstance(p.get("message"), dict) else [])


def _events03(task_id: str) -> list[Any]:
    return [_task03(task_id, "working"),
            {"kind": "status-update", "taskId": task_id, "contextId": "ctx-1",
             "status": {"state": "completed", "timestamp": STAMP}, "final": True}]


def _push03(task_id: str, config_id: str) -> JSON:
    return {"taskId": task_id, "pushNotificationConfig": {"id": config_id, "url": HOOK}}


def _set03(p: JSON) -> JSON:
    given = p.get("pushNotificationConfig")
    config = dict(given) if isinstance(given, dict) else {"url": HOOK}
    config.setdefault("id", _s(p, "taskId", "task-1"))
    return {"taskId": _s(p, "taskId", "task-1"), "pushNotificationConfig": config}


def card03(url: str) -> JSON:
    return {"name": "fuzz stub v0.3", "description": "stub", "url": url, "version": "1",
            "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
            "capabilities": {"streaming": True, "pushNotifications": True},
            "supportsAuthenticatedExtendedCard": True, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": []}


# ---------------------------------------------------------------- v1.0 answers (P10)


def _task10(task_id: str, state: str = "TASK_STATE_COMPLETED") -> JSON:
    return {"id": task_id, "contextId": "ctx-1", "status": {"state": state, "timestamp": STAMP},
            "artifacts": [{"artifactId": "a1", "parts": [{"text": "done"}]}]}


def _send10(p: JSON) -> Any:
    task_id, context_id = _message_ids(p)
    if len(_s(_message(p), "messageId", "")) % 2:
        return {"message": {"messageId": "reply-1", "role": "ROLE_AGENT",
                            "contextId": context_id, "parts": [{"text": "ok"}]}}
    task = _task10(task_id)
    if isinstance(p.get("message"), dict):
        task["history"] = [p["message"]]
    return {"task": task}


def _events10(task_id: str) -> list[Any]:
    return [{"task": _task10(task_id, "TASK_STATE_WORKING")},
            {"statusUpdate": {"taskId": task_id, "contextId": "ctx-1",
                              "status": {"state": "TASK_STATE_COMPLETED", "timestamp": STAMP}}}]


def card10(url: str) -> JSON:
    return {"name": "fuzz stub v1.0", "description": "stub", "version": "1",
            "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC",
                                     "protocolVersion": "1.0"}],
            "capabilities": {"streaming": True, "pushNotifications": True,
                             "extendedAgentCard": True},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": []}


Answer = Callable[[JSON], Any]
# Per version: method → (unary answer | None, stream events | None).
UNARY: dict[str, dict[str, Answer]] = {
    V03: {
        "message/send": _send03,
        "tasks/get": lambda p: _task03(_s(p, "id", "task-1")),
        "tasks/cancel": lambda p: _task03(_s(p, "id", "task-1"), "canceled"),
        "tasks/pushNotificationConfig/set": _set03,
        "tasks/pushNotificationConfig/get": lambda p: _push03(
            _s(p, "id", "task-1"), _s(p, "pushNotificationConfigId", _s(p, "id", "task-1"))),
        "tasks/pushNotificationConfig/list": lambda p: [_push03(_s(p, "id", "task-1"), "cfg-1")],
        "tasks/pushNotificationConfig/delete": lambda p: None,
        "agent/getAuthenticatedExtendedCard": lambda p: card03("http://127.0.0.1/"),
    },
    V10: {
        ops.SEND: _send10,
        ops.GET_TASK: lambda p: _task10(_s(p, "id", "task-1")),
        ops.LIST_TASKS: lambda p: {"tasks": [_task10("task-1")], "nextPageToken": "",
                                   "pageSize": 1, "totalSize": 1},
        ops.CANCEL: lambda p: _task10(_s(p, "id", "task-1"), "TASK_STATE_CANCELED"),
        ops.PUSH_CREATE: lambda p: {**p, "id": _s(p, "id", "cfg-1")},
        ops.PUSH_GET: lambda p: {"taskId": _s(p, "taskId", "task-1"), "id": _s(p, "id", "cfg-1"),
                                 "url": HOOK},
        ops.PUSH_LIST: lambda p: {"configs": [{"taskId": _s(p, "taskId", "task-1"),
                                               "id": "cfg-1", "url": HOOK}]},
        ops.PUSH_DELETE: lambda p: {},
        ops.EXTENDED_CARD: lambda p: card10("http://127.0.0.1/"),
    },
}
STREAMS: dict[str, dict[str, Answer]] = {
    V03: {"message/stream": lambda p: _events03(_message_ids(p)[0]),
          "tasks/resubscribe": lambda p: _events03(_s(p, "id", "task-1"))},
    V10: {ops.STREAM: lambda p: _events10(_message_ids(p)[0]),
          ops.SUBSCRIBE: lambda p: _events10(_s(p, "id", "task-1"))},
}


# ---------------------------------------------------------------- checking the gateway


def _complaint(stub: Stub, request: web.Request, body: Any) -> str | None:
    """What is wrong with a call the gateway forwarded, or None."""
    header = request.headers.get("A2A-Version", "")
    if stub.version == V10 and header != V10:
        return f"v1.0 backend got A2A-Version {header!r}"
    if stub.version == V03 and header not in ("", "0.3"):
        return f"v0.3 backend got A2A-Version {header!r}"
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0" or "id" not in body:
        return "not a JSON-RPC 2.0 request"
    method, params = body.get("method"), body.get("params", {})
    if method not in UNARY[stub.version] and method not in STREAMS[stub.version]:
        return f"method {method!r} is not a v{stub.version} method"
    if not isinstance(params, dict):
        return f"{method}: params is not an object"
    if stub.version == V10:
        try:
            json_format.ParseDict(params, ops.BY_NAME[method].request())
        except (json_format.ParseError, ValueError, TypeError) as exc:
            return f"{method}: params a strict v1.0 parser refuses: {exc}"
    elif method in ("message/send", "message/stream"):
        message = params.get("message")
        if not isinstance(message, dict) or message.get("kind") != "message" \
                or message.get("role") not in ("user", "agent") \
                or not isinstance(message.get("parts"), list):
            return f"{method}: params.message is not a v0.3 Message"
    return None


def _rpc(body: Any, payload: JSON) -> JSON:
    rid = body.get("id") if isinstance(body, dict) else None
    return {"jsonrpc": "2.0", "id": rid, **payload}


def _sse_frame(data: Any) -> bytes:
    return f"data: {json.dumps(data)}\n\n".encode()


def build_stub_app(stub: Stub) -> web.Application:
    async def rpc(request: web.Request) -> web.StreamResponse:
        try:
            body = strict_json(await request.read())
        except (ValueError, RecursionError):
            body = None  # not RFC 8259 JSON (NaN, Infinity): a complaint
        complaint = _complaint(stub, request, body)
        if complaint is not None:
            stub.complaints.append(complaint)
            return web.json_response(_rpc(body, {"error": {"code": -32602,
                                                           "message": complaint}}))
        assert isinstance(body, dict)
        method, params = body["method"], body.get("params") or {}
        if method in UNARY[stub.version]:
            return web.json_response(_rpc(body, {"result": UNARY[stub.version][method](params)}))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for event in STREAMS[stub.version][method](params):
            await response.write(_sse_frame(_rpc(body, {"result": event})))
        await response.write_eof()
        return response

    async def card(request: web.Request) -> web.Response:
        return web.json_response((card10 if stub.version == V10 else card03)(stub.url))

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/", rpc)
    app.router.add_get("/.well-known/agent-card.json", card)
    return app
