"""Resumable streams as a raw client sees them (issue 30): the four SSE client dialects'
requests, one event of any dialect reduced to a :class:`Step`, and reading a stream until
a condition or its end. The official SDK clients cannot send `Last-Event-ID`, so these
calls are raw HTTP; the agents on the other side are the official SDK ones.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.helpers import free_port, gateway_cmd, running, wait_for_port, write_config
from tests.support.sse_client import SseEvent, SseStream

BOUND = 30.0  # seconds any one stream here may take to give what a test waits for
GAP_KEY = "a2a-gateway/gap"  # the Task metadata key that marks a snapshot sent for a gap
V10 = {"A2A-Version": "1.0"}


@dataclass(frozen=True)
class Step:
    """One stream event in any dialect: ``kind`` task/status/artifact/message/error,
    the task state (kebab case), the first text part of an artifact, the task it is about;
    ``raw`` is the event's payload (the JSON-RPC `result`, or the bare REST body)."""

    kind: str
    state: str | None
    text: str | None
    task_id: str
    raw: Any

    @property
    def shape(self) -> tuple[str, str | None, str | None]:
        return self.kind, self.state, self.text

    def gap(self) -> Any:
        """The gap marker of a Task snapshot (None when it is not one)."""
        if self.kind != "task":
            return None
        return (self.raw.get("metadata") or {}).get(GAP_KEY)


def _state(value: str) -> str:
    """`TASK_STATE_INPUT_REQUIRED` and `input-required` alike → `input-required`."""
    state = value.removeprefix("TASK_STATE_").lower().replace("_", "-")
    return "canceled" if state == "cancelled" else state


def _text(artifact: Mapping[str, Any]) -> str | None:
    parts = artifact.get("parts") or []
    return parts[0].get("text") if parts else None


def step_of(payload: Any) -> Step:
    """A v0.3 JSON-RPC `result` (told apart by `kind`) or a StreamResponse (P03 / P10:
    told apart by its one key) as a Step."""
    kind = payload.get("kind")
    if kind is not None:  # J03
        if kind == "task":
            return Step("task", _state(payload["status"]["state"]), None, payload["id"],
                        payload)
        if kind == "status-update":
            return Step("status", _state(payload["status"]["state"]), None,
                        payload["taskId"], payload)
        if kind == "artifact-update":
            return Step("artifact", None, _text(payload["artifact"]), payload["taskId"],
                        payload)
        return Step(kind, None, None, payload.get("taskId", ""), payload)
    (key, inner), = payload.items()
    if key == "task":
        return Step("task", _state(inner["status"]["state"]), None, inner["id"], inner)
    if key == "statusUpdate":
        return Step("status", _state(inner["status"]["state"]), None, inner["taskId"], inner)
    if key == "artifactUpdate":
        return Step("artifact", None, _text(inner["artifact"]), inner["taskId"], inner)
    return Step(key, None, None, inner.get("taskId", ""), inner)


@dataclass(frozen=True)
class Dialect:
    """One SSE client dialect: JSON-RPC or REST, v0.3 or v1.0."""

    name: str  # j03, j10, r03, r10
    version: str
    rest: bool

    def headers(self, last_id: str | None = None) -> dict[str, str]:
        headers = dict(V10) if self.version == "1.0" else {}
        if last_id is not None:
            headers["Last-Event-ID"] = last_id
        return headers

    def _message(self, text: str, context_id: str, message_id: str) -> dict[str, Any]:
        if self.version == "0.3" and not self.rest:  # J03
            return {"kind": "message", "messageId": message_id, "role": "user",
                    "contextId": context_id, "parts": [{"kind": "text", "text": text}]}
        parts = "content" if self.version == "0.3" else "parts"  # P03 Message: `content`
        return {"messageId": message_id, "role": "ROLE_USER", "contextId": context_id,
                parts: [{"text": text}]}

    def _rpc(self, method: str, params: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}

    def send(self, base: str, text: str, context_id: str,
             message_id: str) -> tuple[str, str, Any]:
        """(verb, URL, body) of a streaming send."""
        params = {"message": self._message(text, context_id, message_id)}
        if self.rest:
            prefix = "/v1" if self.version == "0.3" else ""
            return "POST", f"{base}{prefix}/message:stream", params
        method = "message/stream" if self.version == "0.3" else "SendStreamingMessage"
        return "POST", base, self._rpc(method, params)

    def subscribe(self, base: str, task_id: str) -> tuple[str, str, Any]:
        if self.rest:
            prefix = "/v1" if self.version == "0.3" else ""
            return "POST", f"{base}{prefix}/tasks/{task_id}:subscribe", {}
        method = "tasks/resubscribe" if self.version == "0.3" else "SubscribeToTask"
        return "POST", base, self._rpc(method, {"id": task_id})

    def payload(self, event: SseEvent) -> Any:
        """The event's StreamResponse / v0.3 result; a JSON-RPC error frame as is."""
        data = event.json()
        if self.rest:
            return data
        return data.get("result", data)

    def step(self, event: SseEvent) -> Step:
        payload = self.payload(event)
        if event.event == "error" or "error" in payload:
            return Step("error", None, None, "", payload)
        return step_of(payload)


DIALECTS = [Dialect("j03", "0.3", False), Dialect("j10", "1.0", False),
            Dialect("r03", "0.3", True), Dialect("r10", "1.0", True)]
BY_NAME = {d.name: d for d in DIALECTS}

Seen = list[tuple[SseEvent, Step]]


async def read(stream: SseStream, dialect: Dialect,
               until: Callable[[Seen], bool] | None = None, seen: Seen | None = None,
               cut: bool = False) -> Seen:
    """The stream's events until ``until(seen)`` holds (then the caller drops it) or the
    stream ends; BOUND seconds at most (a stalled stream fails with what it gave).
    ``cut``: the server may end the connection mid-event (it is being stopped)."""
    got: Seen = [] if seen is None else seen
    assert stream.is_sse, f"not a stream: {stream.answer}"
    try:
        async with asyncio.timeout(BOUND):
            async for event in stream.events():
                got.append((event, dialect.step(event)))
                if until is not None and until(got):
                    break
    except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError):
        if not cut:
            raise
    except TimeoutError:
        raise AssertionError(f"the stream stalled after {[s.shape for _, s in got]}") from None
    return got


def artifacts(n: int) -> Callable[[Seen], bool]:
    """``until``: the ``n``-th artifact update is here."""
    return lambda seen: sum(step.kind == "artifact" for _, step in seen) >= n


async def stream_through(http: aiohttp.ClientSession, base: str, dialect: Dialect,
                         text: str) -> Seen:
    """One whole streaming send, read to its end."""
    verb, url, body = dialect.send(base, text, new_id(), new_id())
    async with SseStream(http, verb, url, body=body, headers=dialect.headers()) as stream:
        return await read(stream, dialect)


def new_id() -> str:
    return os.urandom(8).hex()


def chunks(seen: Seen) -> list[str]:
    return [step.text or "" for _, step in seen if step.kind == "artifact"]


def chunk_number(text: str) -> int:
    match = re.fullmatch(r"chunk (\d+)", text)
    assert match, text
    return int(match.group(1))


async def assert_invalid_params(dialect: Dialect, stream: SseStream) -> None:
    """The call was refused with InvalidParams, as the client's dialect says it (docs/
    streams.md): JSON-RPC -32602 with HTTP 200, for v1.0 a plain JSON answer, for v0.3 a
    stream of that one error line (the a2a-sdk 0.3 clients read a streaming method's answer
    as SSE only); v1.0 REST 400 INVALID_ARGUMENT with reason INVALID_PARAMS; v0.3 REST
    422, the status a2a-sdk 0.3.x gives InvalidParams (translators/errors.py, §7.2)."""
    answer = stream.answer
    if dialect.rest:
        expected = 400 if dialect.version == "1.0" else 422
        assert answer.status == expected and not stream.is_sse, answer
        if dialect.version == "1.0":
            error = answer.body["error"]
            assert error["status"] == "INVALID_ARGUMENT", answer
            assert [d.get("reason") for d in error["details"]] == ["INVALID_PARAMS"], answer
        else:
            assert answer.body["message"], answer
        return
    assert answer.status == 200, answer
    if dialect.version == "0.3":
        seen = await read(stream, dialect)
        assert [(event.id, step.kind) for event, step in seen] == [(None, "error")], [
            event for event, _ in seen]
        body = seen[0][1].raw
    else:
        assert not stream.is_sse, answer
        body = answer.body
    assert body["error"]["code"] == -32602, body

def gateway_config(path: Path, port: int, agent_jsonrpc: int, state: dict[str, Any],
                   grpc_port: int | None = None, **top: Any) -> Path:
    """A gateway of the test's own on ``port`` (and gRPC on ``grpc_port``) with one tenant
    `t`, the v1.0 SDK agent over JSON-RPC, and ``state`` (a file beside the config unless
    it names a backend); ``top``: more top-level keys."""
    grpc = {"grpc": f"127.0.0.1:{grpc_port}"} if grpc_port is not None else {}
    return write_config(path, {
        **top,
        "listen": {"http": f"127.0.0.1:{port}", **grpc},
        "tenants": {"t": {"backend": {"url": f"http://127.0.0.1:{agent_jsonrpc}/",
                                      "version": "1.0", "binding": "JSONRPC"}}},
        "state": {"path": str(path.with_suffix(".state.db")), **state,
                  "journal": {"enabled": True, **state.get("journal", {})}}})


@contextmanager
def own_gateway(path: Path, agent_jsonrpc: int, state: dict[str, Any],
                grpc_port: int | None = None) -> Iterator[str]:
    """A gateway process for the block (gateway_config); yields tenant `t`'s URL."""
    port = free_port()
    config = gateway_config(path, port, agent_jsonrpc, state, grpc_port)
    with running(gateway_cmd(config), port, log=path.with_suffix(".log")):
        if grpc_port is not None:  # opened after the HTTP port
            wait_for_port(grpc_port)
        yield f"http://127.0.0.1:{port}/t"


async def rpc10(http: aiohttp.ClientSession, base: str, method: str, params: Any) -> Any:
    """A v1.0 JSON-RPC call's result (its error fails the test)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with http.post(base, json=body, headers=V10) as resp:
        answer = await resp.json(content_type=None)
    assert "result" in answer, answer
    return answer["result"]


async def assert_sent_once(http: aiohttp.ClientSession, base: str, context_id: str,
                           task_id: str, text: str) -> None:
    """The agent got the message once, however often its stream was resumed: one task in
    the context, one user turn (``text``) in it."""
    listed = await rpc10(http, base, "ListTasks", {"contextId": context_id})
    assert [t["id"] for t in listed["tasks"]] == [task_id], listed
    task = await rpc10(http, base, "GetTask", {"id": task_id, "historyLength": 100})
    asked = [m["parts"][0]["text"] for m in task.get("history", [])
             if m["role"] == "ROLE_USER"]
    assert asked == [text], task
