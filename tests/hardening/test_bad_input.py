"""Defects 4, 9, 11, 13, 17 (and issue 27's bad input): what a client sends that no
backend should see, answered in the client's dialect (never a 500, never aiohttp's plain
text, never a traceback in the log) before anything runs."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import grpc
import pytest
from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.types import a2a_pb2 as pb
from structlog.testing import capture_logs

from tests.hardening.hardening_support import (
    V10,
    ScriptedBackend,
    j03_message,
    p10_message,
    post,
    rpc_body,
)
from tests.support.helpers import MakeGateway, free_port, v03
from tests.support.waiting import wait_until


@pytest.fixture
async def setup(make_gateway: MakeGateway) -> Any:
    async with ScriptedBackend().running() as backend:
        grpc_port = free_port()
        gw = await make_gateway({"alpha": v03(backend.url), "beta": v03(backend.url),
                                 "gamma": v03(backend.url, "1.0")},
                                grpc_port=grpc_port, max_body_bytes=200_000)
        async with aiohttp.ClientSession() as http:
            yield gw, grpc_port, backend, http


async def test_a_body_field_cannot_switch_tenants(setup: Any) -> None:
    gw, grpc_port, backend, http = setup
    _, _, reply = await post(http, gw + "/alpha", rpc_body(
        "GetTask", {"id": "t1", "tenant": "beta"}), headers=V10)
    assert reply["error"]["code"] == -32602 and "tenant" in reply["error"]["message"]
    status, _, body = await post(http, gw + "/alpha/tasks/t1:cancel", {"tenant": "beta"},
                                 headers=V10)
    assert status == 400 and body["error"]["details"][0]["reason"] == "INVALID_PARAMS"
    async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        call = channel.unary_unary("/lf.a2a.v1.A2AService/GetTask")
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call(pb.GetTaskRequest(id="t1", tenant="beta").SerializeToString(),
                       metadata=(("x-a2a-tenant", "alpha"),))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert backend.seen == []  # nothing reached any backend


@pytest.mark.parametrize(("raw", "headers", "code"), [
    (b"[" * 100_000, {}, -32700),
    (b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":'
     b'{"kind":"message","messageId":"m","role":[],"parts":[]}}}', {}, -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":'
     b'{"kind":"message","messageId":"m","role":{},"parts":[]}}}', {}, -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"metadata":{"x":Infinity},'
     b'"message":{"kind":"message","messageId":"m","role":"user","parts":[]}}}', {}, -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"metadata":{"x":1e400},'
     b'"message":{"kind":"message","messageId":"m","role":"user","parts":[]}}}', {}, -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}', V10, -32602),
    (b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}',
     {"A2A-Version": "1." + "9" * 5000}, -32009),
], ids=["deep-nesting", "role-list", "role-object", "infinity", "1e400", "no-message",
        "long-version"])
async def test_bad_json_rpc_input_gets_the_right_code(setup: Any, raw: bytes,
                                                      headers: dict[str, str], code: int) -> None:
    gw, _, backend, http = setup
    status, _, reply = await post(http, gw + "/alpha", raw=raw, headers=headers)
    assert status == 200 and reply["error"]["code"] == code, reply
    assert backend.seen == []


async def test_a_json_rpc_id_must_be_a_string_number_or_null(setup: Any) -> None:
    gw, _, backend, http = setup
    for rid in ({"a": 1}, [1], True, 1.5):
        _, _, reply = await post(http, gw + "/alpha", rpc_body(
            "message/send", {"message": j03_message()}, rid=rid))
        assert reply["error"]["code"] == -32600 and reply["id"] is None
    assert backend.seen == []  # it did not run


@pytest.mark.parametrize(("params", "field"), [
    ({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}, "messageId"),
    ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}, "parts"),
    ({"message": {"messageId": "m", "parts": [{"text": "x"}]}}, "role"),
    ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{}]}}, "parts[0]"),
], ids=["no-id", "no-parts", "no-role", "empty-part"])
async def test_send_message_needs_id_role_and_parts(setup: Any, params: dict[str, Any],
                                                    field: str) -> None:
    gw, _, backend, http = setup
    _, _, reply = await post(http, gw + "/alpha", rpc_body("SendMessage", params), headers=V10)
    assert reply["error"]["code"] == -32602 and field in reply["error"]["message"], reply
    status, _, body = await post(http, gw + "/alpha/message:send", params, headers=V10)
    assert status == 400 and field in body["error"]["message"]
    # A v1.0 message without a role never reaches a v0.3 agent as "agent".
    assert backend.seen == []


async def test_v03_json_rpc_message_without_id_is_refused(setup: Any) -> None:
    gw, _, backend, http = setup
    message = j03_message()
    del message["messageId"]
    _, _, reply = await post(http, gw + "/alpha", rpc_body("message/send", {"message": message}))
    assert reply["error"]["code"] == -32602 and "messageId" in reply["error"]["message"]
    assert backend.seen == []


async def test_empty_grpc_send_is_invalid_argument(setup: Any) -> None:
    _, grpc_port, backend, _ = setup
    async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        for path in ("/lf.a2a.v1.A2AService/SendMessage", "/a2a.v1.A2AService/SendMessage"):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await channel.unary_unary(path)(b"", metadata=(("x-a2a-tenant", "alpha"),))
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert backend.seen == []


async def test_bodies_over_the_limit_get_413_in_the_dialect(setup: Any) -> None:
    gw, _, _, http = setup
    big = {"message": p10_message("x" * 250_000)}
    status, _, body = await post(http, gw + "/alpha/message:send", big, headers=V10)
    assert status == 413 and body["error"]["details"][0]["reason"] == "PAYLOAD_TOO_LARGE"
    status, _, body = await post(http, gw + "/alpha", rpc_body("SendMessage", big), headers=V10)
    assert status == 413 and body["error"]["code"] == -32600
    assert body["error"]["data"][0]["reason"] == "PAYLOAD_TOO_LARGE"


@pytest.mark.parametrize(("method", "path", "headers", "status"), [
    ("PUT", "/alpha/message:send", V10, 405), ("PATCH", "/v1/tasks/t", {}, 405),
    ("GET", "/alpha/%0a", V10, 404), ("GET", "/a/../b/./c", V10, 404),
    ("DELETE", "/", {}, 404),
])
async def test_unrouted_requests_are_answered_in_the_dialect(setup: Any, method: str, path: str,
                                                             headers: dict[str, str],
                                                             status: int) -> None:
    gw, _, _, http = setup
    async with http.request(method, gw + path, headers=headers) as resp:
        assert resp.status == status
        body = await resp.json()
    assert "error" in body or "message" in body


async def test_negative_history_length_is_one_rule_on_every_binding(setup: Any) -> None:
    gw, grpc_port, backend, http = setup
    _, _, reply = await post(http, gw + "/alpha", rpc_body(
        "tasks/get", {"id": "t", "historyLength": -1}))
    assert reply["error"]["code"] == -32602
    async with http.get(gw + "/alpha/v1/tasks/t?historyLength=-1") as resp:
        assert resp.status == 422  # InvalidParams in the v0.3 REST table
    async with http.get(gw + "/alpha/tasks/t?historyLength=-2", headers=V10) as resp:
        assert resp.status == 400
    async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await channel.unary_unary("/a2a.v1.A2AService/GetTask")(
                v03pb.GetTaskRequest(name="tasks/t", history_length=-1).SerializeToString(),
                metadata=(("x-a2a-tenant", "alpha"),))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert backend.seen == []


def no_traceback(logs: list[dict[str, Any]]) -> None:
    assert [line for line in logs if "exc_info" in line or line["log_level"] == "error"] == []


@pytest.mark.parametrize("status", [-1, 99, "TASK_STATE_NOPE"])
async def test_list_tasks_by_a_state_no_version_names_is_invalid_params(setup: Any,
                                                                        status: Any) -> None:
    """Issue 27: `status: -1` was INTERNAL_ERROR with a traceback (TaskState.Name), and an
    unknown name silently listed every task."""
    gw, grpc_port, backend, http = setup
    with capture_logs() as logs:
        _, _, reply = await post(http, gw + "/alpha", rpc_body("ListTasks", {"status": status}),
                                 headers=V10)
        assert reply["error"]["code"] == -32602, reply
        assert reply["error"]["data"][0]["reason"] == "INVALID_PARAMS"
        assert "status" in reply["error"]["message"] and str(status) in reply["error"]["message"]
        async with http.get(gw + f"/alpha/tasks?status={status}", headers=V10) as resp:
            body = await resp.json()
        assert resp.status == 400 and body["error"]["code"] == 400, body
        assert body["error"]["status"] == "INVALID_ARGUMENT"
        assert body["error"]["details"][0]["reason"] == "INVALID_PARAMS"
        assert "status" in body["error"]["message"]
        if isinstance(status, int):
            async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await channel.unary_unary("/lf.a2a.v1.A2AService/ListTasks")(
                        pb.ListTasksRequest(status=status).SerializeToString(),
                        metadata=(("x-a2a-tenant", "alpha"),))
                assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert f"status: {status} is not a value of TaskState" in err.value.details()
        # A call's line is written once its answer is out: the status may reach the
        # client first.
        calls = 3 if isinstance(status, int) else 2
        await wait_until(lambda: len([line for line in logs if line["event"] == "call"])
                         >= calls, "every call's line")
    no_traceback(logs)
    assert [line["outcome"] for line in logs if line["event"] == "call"] == \
        ["INVALID_PARAMS"] * (3 if isinstance(status, int) else 2)
    assert backend.seen == []


@pytest.mark.parametrize("role", [7, -3, "ROLE_ROOT"])
async def test_a_role_no_version_names_is_invalid_params_on_every_binding(setup: Any,
                                                                           role: Any) -> None:
    """A v1.0 backend (gamma) would have been sent the role as it came."""
    gw, grpc_port, backend, http = setup
    message = p10_message(role=role)
    _, _, reply = await post(http, gw + "/gamma", rpc_body("SendMessage", {"message": message}),
                             headers=V10)
    assert reply["error"]["code"] == -32602 and "message.role" in reply["error"]["message"]
    status, _, body = await post(http, gw + "/gamma/v1/message:send", {"message": {
        "messageId": "m", "role": role, "content": [{"text": "x"}]}})
    assert status == 422 and "role" in body["message"], body  # v0.3 REST's InvalidParams
    if isinstance(role, int):
        async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await channel.unary_unary("/a2a.v1.A2AService/SendMessage")(
                    v03pb.SendMessageRequest(request=v03pb.Message(
                        message_id="m", role=role, content=[v03pb.Part(text="x")]),
                    ).SerializeToString(), metadata=(("x-a2a-tenant", "gamma"),))
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "message.role" in err.value.details()
    assert backend.seen == []


def is_v10_rest_error(body: Any, status: int, grpc_status: str, reason: str) -> bool:
    """The google.rpc.Status body v1.0 REST errors have (reference §7.4)."""
    error = body.get("error") if isinstance(body, dict) else None
    return isinstance(error, dict) and error.get("code") == status \
        and error.get("status") == grpc_status and isinstance(error.get("message"), str) \
        and error["details"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" \
        and error["details"][0]["reason"] == reason


@pytest.mark.parametrize("path", ["/v1/card", "/alpha/v1/card", "/v1/v1/tasks/x",
                                  "/alpha/v1/tasks/x", "/v1/v1/message:send"])
async def test_a_v10_client_on_a_path_v10_does_not_have_gets_a_v10_404(setup: Any,
                                                                       path: str) -> None:
    """Issue 27: with A2A-Version 1.0, `/v1/card` served the v0.3 card and `/v1/v1/tasks/x`
    answered the v0.3 `{"message", "reason"}` body."""
    gw, _, backend, http = setup
    method = "POST" if path.endswith(":send") else "GET"
    with capture_logs() as logs:
        status, _, body = await post(http, gw + path, {"message": p10_message()} if
                                     method == "POST" else None, headers=V10, method=method)
    assert status == 404 and is_v10_rest_error(body, 404, "NOT_FOUND", "METHOD_NOT_FOUND"), body
    assert f"no A2A route for {method} {path}" == body["error"]["message"]
    assert backend.seen == []
    no_traceback(logs)


async def test_without_a_version_v1_paths_stay_v03(setup: Any) -> None:
    gw, _, _, http = setup
    status, _, body = await post(http, gw + "/alpha/v1/cards", method="GET")
    assert status == 404 and body == {"message": "no A2A route for GET /alpha/v1/cards"}
    status, _, body = await post(http, gw + "/alpha/v1/card", method="GET")
    assert status == 200 and body["protocolVersion"].startswith("0.3")  # the v0.3 card


async def test_an_id_with_a_control_character_is_refused_on_every_binding(setup: Any) -> None:
    """Issue 27: `GET /tasks/%0a` forwarded a task id holding a newline. One rule
    (translators/validation.py) for every id field, wherever it came from."""
    gw, grpc_port, backend, http = setup
    with capture_logs() as logs:
        async with http.get(gw + "/alpha/tasks/%0a", headers=V10) as resp:
            body = await resp.json()
        assert resp.status == 400 and is_v10_rest_error(body, 400, "INVALID_ARGUMENT",
                                                        "INVALID_PARAMS"), body
        assert body["error"]["message"].startswith("id must not hold control characters")
        async with http.get(gw + "/alpha/v1/tasks/a%00b/pushNotificationConfigs/c") as resp:
            body = await resp.json()
        assert resp.status == 422 and body["message"].startswith("taskId must not hold"), body
        for method, params, headers, field in [
                ("tasks/get", {"id": "a\nb"}, {}, "id"),
                ("CancelTask", {"id": "\x7f"}, V10, "id"),
                ("ListTasks", {"contextId": "c\u0085"}, V10, "contextId"),
                ("SendMessage", {"message": p10_message(taskId="t\r")}, V10, "message.taskId"),
                ("message/send", {"message": j03_message(referenceTaskIds=["ok", "x\x1b"])},
                 {}, "message.referenceTaskIds[1]")]:
            _, _, reply = await post(http, gw + "/alpha", rpc_body(method, params),
                                     headers=headers)
            assert reply["error"]["code"] == -32602, reply
            assert reply["error"]["message"].startswith(f"{field} must not hold control")
        async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            for path, payload in [
                    ("/lf.a2a.v1.A2AService/GetTask", pb.GetTaskRequest(id="\n")),
                    ("/a2a.v1.A2AService/GetTask", v03pb.GetTaskRequest(name="tasks/\t"))]:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await channel.unary_unary(path)(payload.SerializeToString(),
                                                    metadata=(("x-a2a-tenant", "alpha"),))
                assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "id must not hold control characters" in err.value.details()
    no_traceback(logs)
    assert backend.seen == []  # none of them reached the agent


@pytest.mark.parametrize(("path", "raw", "headers", "binding", "version", "outcome"), [
    ("/alpha", b"{not json", V10, "JSONRPC", "1.0", "PARSE_ERROR"),
    ("/", b"\xff\xfe", {}, "JSONRPC", "0.3", "PARSE_ERROR"),
    ("/alpha", b'{"jsonrpc":"2.0","id":3,"method":"tasks/nope"}', {}, "JSONRPC", "0.3",
     "METHOD_NOT_FOUND"),
    ("/alpha", b'[{"jsonrpc":"2.0","id":3,"method":"GetTask"}]', V10, "JSONRPC", "1.0",
     "INVALID_REQUEST"),
    ("/alpha", b"x" * 300_000, V10, "JSONRPC", "1.0", "PAYLOAD_TOO_LARGE"),
    ("/alpha/nowhere:send", b"{}", V10, "HTTP+JSON", "1.0", "METHOD_NOT_FOUND"),
    ("/alpha/v1/message:send", b"x" * 300_000, {}, "HTTP+JSON", "0.3", "PAYLOAD_TOO_LARGE"),
], ids=["not-json", "not-utf8", "no-method", "batch", "too-large", "no-route",
        "rest-too-large"])
async def test_a_refused_request_leaves_a_call_line(setup: Any, path: str, raw: bytes,
                                                    headers: dict[str, str], binding: str,
                                                    version: str, outcome: str) -> None:
    """Issue 27: a bad JSON body on JSON-RPC left no log line at all."""
    gw, _, _, http = setup
    with capture_logs() as logs:
        _, answer_headers, _ = await post(http, gw + path, raw=raw, headers=headers)
    calls = [line for line in logs if line["event"] == "call"]
    assert len(calls) == 1, logs
    line = calls[0]
    assert (line["operation"], line["outcome"], line["client_binding"],
            line["client_version"], line["log_level"]) == (
        "unknown", outcome, binding, version, "info")
    assert line["request_id"] == answer_headers["X-Request-ID"]
    assert isinstance(line["duration_ms"], float) and line["error_message"]
    no_traceback(logs)


@pytest.mark.parametrize("metadata", [rb'{"a\udc00b": 1}', rb'{"k": ["ok", "\ud800"]}'],
                         ids=["key", "value"])
async def test_a_lone_surrogate_in_a_struct_is_invalid_params(setup: Any,
                                                              metadata: bytes) -> None:
    """Issue 27 (zero tracebacks): JSON can escape a lone surrogate, protobuf's UTF-8
    strings cannot hold one; in a metadata key it was an InternalError and a traceback."""
    gw, _, backend, http = setup
    with capture_logs() as logs:
        _, _, reply = await post(http, gw + "/gamma", raw=b'{"jsonrpc":"2.0","id":1,"method":'
                                 b'"CancelTask","params":{"id":"t","metadata":' + metadata +
                                 b"}}", headers=V10)
        assert reply["error"]["code"] == -32602, reply
        assert "metadata" in reply["error"]["message"] and "not valid Unicode" in \
            reply["error"]["message"]
        status, _, body = await post(http, gw + "/gamma/tasks/t:cancel",
                                     raw=b'{"metadata":' + metadata + b"}", headers=V10)
        assert status == 400 and is_v10_rest_error(body, 400, "INVALID_ARGUMENT",
                                                   "INVALID_PARAMS"), body
        status, _, body = await post(http, gw + "/alpha/v1/message:send", raw=(
            b'{"message":{"messageId":"m","role":"ROLE_USER","content":[{"text":"x"}]},'
            b'"metadata":' + metadata + b"}"))
        assert status == 422 and "not valid Unicode" in body["message"], body
    no_traceback(logs)
    assert backend.seen == []


@pytest.mark.parametrize(("path", "headers", "v10"), [
    ("/alpha/message:send", "A2A-Version: 1.0\r\n", True), ("/alpha/v1/message:send", "", False)])
async def test_a_body_that_does_not_decode_is_invalid_request(setup: Any, path: str,
                                                              headers: str, v10: bool) -> None:
    """Issue 27 (zero tracebacks): a Content-Encoding that does not decode escaped as an
    InternalError (aiohttp's RequestPayloadError) with a traceback."""
    gw, _, backend, _ = setup
    host, port = gw.removeprefix("http://").rsplit(":", 1)
    with capture_logs() as logs:
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     f"Content-Encoding: deflate\r\nContent-Length: 5\r\n{headers}\r\n"
                     f"abcde".encode())
        answer = await asyncio.wait_for(reader.read(), 10)  # the gateway closes after it
        writer.close()
    head, _, raw = answer.partition(b"\r\n\r\n")
    body = json.loads(raw)
    assert head.startswith(b"HTTP/1.1 400 ")
    message = "the request body cannot be read: its transfer or content encoding does not decode"
    if v10:
        assert is_v10_rest_error(body, 400, "INVALID_ARGUMENT", "INVALID_REQUEST"), body
        assert body["error"]["message"] == message
    else:
        assert body == {"message": message}
    no_traceback(logs)
    assert [line["outcome"] for line in logs if line["event"] == "call"] == ["INVALID_REQUEST"]
    assert backend.seen == []
