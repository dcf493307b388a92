"""The properties of HTTP answers: JSON-RPC responses (bodies and SSE streams) and REST
answers of both versions (fuzz_checks.py has the shared parts and gRPC)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.fuzz.fuzz_checks import (
    FAULT_CODES,
    FAULT_REASONS,
    Findings,
    check_rest_error,
    error_info,
    is_json_type,
    parses_as,
    rest_error_dialect,
    strict_json,
)
from tests.fuzz.fuzz_documents import V03, V10, RpcMethod, grpc_method
from translators import operations as ops

# ---------------------------------------------------------------- JSON-RPC

ANY = object()
J03_RESULT_KINDS = {"message/send": {"task", "message"}, "tasks/get": {"task"},
                    "tasks/cancel": {"task"}}
J03_STREAM_KINDS = {"task", "message", "status-update", "artifact-update"}


@dataclass(frozen=True)
class RpcExpect:
    """What a JSON-RPC answer may be: its dialects, id, and error codes."""

    versions: frozenset[str]
    rid: Any = ANY  # the id the answer must echo (ANY: not checked)
    codes: frozenset[int] | None = None  # errors the contract names (None: any, or a result)
    method: RpcMethod | None = None  # a known method: results are checked against it
    # Errors that may come with a null id: the request could not be read (far enough).
    null_id_ok: frozenset[int] = frozenset({-32700, -32600})


def _rpc_result(result: Any, method: RpcMethod, stream: bool) -> str | None:
    op = ops.BY_NAME[method.op]
    if method.version == V10:
        if stream:
            return parses_as(result, op.response.DESCRIPTOR)  # type: ignore[union-attr]
        if op.response is None:
            return None if result in (None, {}) else f"delete answered {result!r:.100}"
        return parses_as(result, op.response.DESCRIPTOR)
    if stream:
        ok = isinstance(result, dict) and result.get("kind") in J03_STREAM_KINDS
    elif method.name in J03_RESULT_KINDS:
        ok = isinstance(result, dict) and result.get("kind") in J03_RESULT_KINDS[method.name]
    elif method.op in (ops.PUSH_CREATE, ops.PUSH_GET):
        ok = isinstance(result, dict) and isinstance(result.get("pushNotificationConfig"), dict)
    elif method.op == ops.PUSH_LIST:
        ok = isinstance(result, list)
    elif method.op == ops.PUSH_DELETE:
        ok = result is None
    else:
        ok = isinstance(result, dict) and "name" in result
    return None if ok else f"not a v0.3 {method.name} result: {result!r:.200}"


def check_rpc_object(obj: Any, expect: RpcExpect, f: Findings, stream: bool = False) -> None:
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0" or "id" not in obj \
            or ("result" in obj) == ("error" in obj):
        f.add("bad-envelope", f"{obj!r:.300}")
        return
    if expect.rid is not ANY and (obj["id"] != expect.rid or type(obj["id"]) is bool) and not (
            obj["id"] is None and isinstance(obj.get("error"), dict)
            and obj["error"].get("code") in expect.null_id_ok):
        f.add("wrong-id", f"answer id {obj['id']!r:.80}, request id {expect.rid!r:.80}")
    if "result" in obj:
        if expect.codes is not None:
            f.add("wrong-code", f"a result, expected an error {sorted(expect.codes)}")
        elif expect.method is not None and (problem := _rpc_result(obj["result"], expect.method,
                                                                    stream)):
            f.add("bad-result", problem)
        return
    err = obj["error"]
    if not isinstance(err, dict) or type(err.get("code")) is not int \
            or not isinstance(err.get("message"), str):
        f.add("bad-error", f"{err!r:.300}")
        return
    info = error_info(err.get("data"))
    version = V10 if info is not None else V03
    if version not in expect.versions:
        f.add("wrong-dialect", f"a v{version} JSON-RPC error, expected v"
                               f"{'/'.join(sorted(expect.versions))}: {err!r:.300}")
    if V10 in expect.versions and V03 not in expect.versions and info is None:
        f.add("bad-error", f"a v1.0 error without an ErrorInfo in data: {err!r:.300}")
    if err["code"] in FAULT_CODES or (info and info["reason"] in FAULT_REASONS):
        f.add("internal-error", f"{err!r:.300}")
    if expect.codes is not None and err["code"] not in expect.codes:
        f.add("wrong-code", f"error {err['code']} {err['message']!r:.150}, expected "
                            f"{sorted(expect.codes)}")


# ---------------------------------------------------------------- HTTP answers


@dataclass(frozen=True)
class SseEvent:
    event: str
    data: str


@dataclass
class HttpReply:
    status: int
    headers: Mapping[str, str]
    body: bytes
    events: list[SseEvent] | None  # an event stream, parsed


def parse_sse(body: bytes) -> list[SseEvent]:
    events = []
    for block in body.decode("utf-8", "replace").replace("\r\n", "\n").split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            events.append(SseEvent(name, "\n".join(data)))
    return events


def _json_body(reply: HttpReply, f: Findings) -> Any:
    if not is_json_type(reply.headers.get("Content-Type", "")):
        f.add("plain-text", f"HTTP {reply.status} {reply.headers.get('Content-Type')!r}: "
                            f"{reply.body[:200]!r}")
        return ANY
    try:
        return strict_json(reply.body)
    except (ValueError, RecursionError) as exc:
        f.add("not-json", f"HTTP {reply.status}: {exc}: {reply.body[:200]!r}")
        return ANY


def check_rpc_reply(reply: HttpReply, expect: RpcExpect, f: Findings) -> None:
    """An answer to `POST /` or `POST /{tenant}`."""
    if reply.status >= 500:
        f.add("server-error", f"HTTP {reply.status}: {reply.body[:200]!r}")
    elif reply.status not in (200, 413):
        f.add("wrong-code", f"JSON-RPC answered with HTTP {reply.status} (errors travel with 200)")
    if reply.events is not None:
        if expect.method is None or not expect.method.streaming or not reply.events:
            f.add("bad-stream", f"{len(reply.events)} events for {expect.method}")
        for index, event in enumerate(reply.events):
            try:
                obj = strict_json(event.data)
            except (ValueError, RecursionError) as exc:
                f.add("not-json", f"event {event.data[:200]!r}: {exc}")
                continue
            # README: an error before the first event is a plain JSON-RPC error. (The
            # gateway answers v0.3 clients with one data line, as a2a-sdk 0.3 servers did:
            # its clients read a streaming method's answer as SSE only.)
            if index == 0 and isinstance(obj, dict) and "error" in obj \
                    and expect.method is not None and expect.method.version == V10:
                f.add("bad-stream", "an error before the first event must be a plain "
                                    f"JSON-RPC error, not an event stream: {event.data[:200]}")
            check_rpc_object(obj, expect, f, stream=True)
        return
    body = _json_body(reply, f)
    if body is not ANY:
        check_rpc_object(body, expect, f)


@dataclass(frozen=True)
class RestExpect:
    """What a REST answer may be. `routes`: the (version, op) the request may name (more
    than one where readings of the path differ); `rpc` is set when the path is also
    `POST /{tenant}` (JSON-RPC)."""

    dialects: frozenset[str]
    routes: frozenset[tuple[str, str]] = frozenset()
    statuses: frozenset[int] | None = None
    rpc: RpcExpect | None = None


def _rest_success(reply: HttpReply, route: tuple[str, str], f: Findings) -> None:
    version, op_name = route
    op = ops.BY_NAME[op_name]
    body = _json_body(reply, f)
    if body is ANY or (version == V03 and op_name == ops.EXTENDED_CARD):
        return  # v0.3 `/v1/card` answers the J03 card (translators/p03/rest.py)
    if op.response is None:
        if body != {}:
            f.add("bad-result", f"DELETE answered {body!r:.100}")
        return
    desc = op.response.DESCRIPTOR if version == V10 else grpc_method(V03, op_name).response
    if problem := parses_as(body, desc):
        f.add("bad-result", problem)


def _rest_stream(reply: HttpReply, expect: RestExpect, f: Findings) -> None:
    assert reply.events is not None
    streams = {version for version, op in expect.routes if ops.BY_NAME[op].streaming}
    if not streams or not reply.events:
        f.add("bad-stream", f"{len(reply.events)} events for routes {sorted(expect.routes)}")
        return
    if reply.events[0].event == "error":
        f.add("bad-stream", "an error before the first event must be a plain error answer "
                            f"(with its HTTP status), not an event stream: {reply.events[0].data[:200]}")
    for event in reply.events:
        try:
            data = strict_json(event.data)
        except (ValueError, RecursionError) as exc:
            f.add("not-json", f"event {event.data[:200]!r}: {exc}")
            continue
        if event.event == "error":
            status = data["error"].get("code") if rest_error_dialect(data) == V10 else 400
            check_rest_error(status, data, frozenset(streams), f)
            continue
        problems = [parses_as(data, grpc_method(v, ops.STREAM).response) for v in streams]
        if all(problems):
            f.add("bad-stream", str(problems[0]))


def _is_rpc(reply: HttpReply) -> bool:
    sample = reply.events[0].data if reply.events else reply.body
    try:
        body = json.loads(sample)
    except (ValueError, RecursionError):
        return False
    return isinstance(body, dict) and "jsonrpc" in body


def check_rest_reply(reply: HttpReply, expect: RestExpect, head: bool, f: Findings) -> None:
    """An answer to any other HTTP request."""
    if not head and _is_rpc(reply):
        if expect.rpc is None:
            f.add("wrong-dialect", f"a JSON-RPC answer on a REST path: {reply.body[:200]!r}")
        else:
            check_rpc_reply(reply, expect.rpc, f)
        return
    v03_501 = reply.status == 501 and V03 in expect.dialects and b'"error"' not in reply.body
    if reply.status >= 500 and not v03_501:
        f.add("server-error", f"HTTP {reply.status}: {reply.body[:200]!r}")
    if expect.statuses is not None and reply.status not in expect.statuses:
        f.add("wrong-code", f"HTTP {reply.status}, expected {sorted(expect.statuses)}")
    if reply.status == 405 and not reply.headers.get("Allow"):
        f.add("missing-allow", "405 without Allow")
    if head:
        if reply.status >= 400 and not is_json_type(reply.headers.get("Content-Type", "")):
            f.add("plain-text", f"HEAD: HTTP {reply.status} {reply.headers.get('Content-Type')!r}")
        return
    if reply.events is not None:
        _rest_stream(reply, expect, f)
    elif reply.status >= 400:
        body = _json_body(reply, f)
        if body is not ANY:
            check_rest_error(reply.status, body, expect.dialects, f)
    elif len(expect.routes) == 1:
        _rest_success(reply, next(iter(expect.routes)), f)
    elif reply.status != 204:
        _json_body(reply, f)
