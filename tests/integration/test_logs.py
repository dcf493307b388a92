"""Logs an operator can ship (issue 27): a real `a2a-gateway serve` process with TLS, API
keys, a dead backend and bad input writes one JSON object per line on stdout and stderr,
one access line per request with the right fields, and never a credential."""

from __future__ import annotations

import asyncio
import hashlib
import json
import ssl
import subprocess
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from a2a.types import a2a_pb2 as pb

from tests.support.auth_pki import issue, make_ca
from tests.support.helpers import (
    VENV_BIN,
    free_port,
    gateway_cmd,
    stop_process,
    wait_for_port,
    write_config,
)
from tests.support.waiting import wait_until

KEY = "k-logs-test-0123456789abcdef"
SECRET = "SECRET-never-in-the-log-4242"  # in the malformed heads' credential lines
CA = make_ca("log test CA")
SERVER = issue(CA, "gateway", server=True)
JSON = dict[str, Any]
TRACE = "0af7651916cd43dd8448eb211c80319c"


def send(text: str, method: str = "message/send") -> JSON:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": {
        "kind": "message", "messageId": "m1", "role": "user",
        "parts": [{"kind": "text", "text": text}]}}}


class Gateway:
    def __init__(self, tmp: Path) -> None:
        cert, key = SERVER.write(tmp, "server")
        (tmp / "ca.pem").write_bytes(CA.cert_pem)
        self.ca = str(tmp / "ca.pem")
        self.port, self.grpc_port, demo = free_port(), free_port(), free_port()
        config = write_config(tmp / "gw.yaml", {
            "listen": {"http": f"127.0.0.1:{self.port}",
                       "grpc": f"127.0.0.1:{self.grpc_port}"},
            "demo_agent": {"listen": f"127.0.0.1:{demo}"},
            "default_tenant": "demo",
            "tenants": {
                "demo": {"backend": {"url": f"http://127.0.0.1:{demo}/", "version": "0.3",
                                     "pass_through": False}},
                "dead": {"backend": {"url": f"http://127.0.0.1:{free_port()}/",
                                     "version": "0.3"}}},
            "auth": {"required": True, "api_keys": {"keys": [
                         {"principal": "svc", "sha256": hashlib.sha256(KEY.encode()).hexdigest()}]},
                     "server_tls": {"cert_file": cert, "key_file": key}},
            "shutdown_grace": 1})
        self.out, self.err = tmp / "stdout", tmp / "stderr"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(gateway_cmd(config), stdout=out, stderr=err)
        wait_for_port(self.port, 30, self.proc)
        wait_for_port(self.grpc_port, 30, self.proc)
        self.base = f"https://127.0.0.1:{self.port}"

    def tls(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca)

    async def wait_for_line(self, part: bytes, timeout: float = 10.0) -> None:
        """Until a line holding ``part`` is on stderr (bounded by ``timeout``)."""
        await wait_until(lambda: part in self.err.read_bytes(), f"{part!r} on stderr",
                         timeout=timeout)

    def stop(self) -> tuple[bytes, bytes]:
        stop_process(self.proc)
        return self.out.read_bytes(), self.err.read_bytes()


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    gw = Gateway(tmp_path)
    try:
        yield gw
    finally:
        stop_process(gw.proc)


async def raw_request(gw: Gateway, data: bytes) -> bytes:
    """``data`` as sent over TLS, and the whole answer (the gateway closes after it)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", gw.port, ssl=gw.tls())
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


async def exercise(gw: Gateway) -> dict[str, bytes]:
    """Every kind of request the test reads the lines of; what each sent (its body)."""
    auth = {"X-Api-Key": KEY}
    bodies: dict[str, bytes] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=gw.tls())) as http:
        bodies["ok"] = json.dumps(send("hi")).encode()
        traced = {**auth, "X-Request-ID": "ok-1",
                  "traceparent": f"00-{TRACE}-b7ad6b7169203331-01"}
        async with http.post(gw.base + "/", data=bodies["ok"], headers=traced) as resp:
            assert (await resp.json())["result"]["parts"][0]["text"] == "echo: hi"
        bodies["bad-json"] = b'{"jsonrpc": "2.0", "id": 1, "method": '
        async with http.post(gw.base + "/", data=bodies["bad-json"],
                             headers={**auth, "X-Request-ID": "bad-json-1"}) as resp:
            assert (await resp.json())["error"]["code"] == -32700
        async with http.post(gw.base + "/", json=send("hi"),
                             headers={"X-Request-ID": "no-key-1"}) as resp:
            assert resp.status == 401
        async with http.post(gw.base + "/made-up", json=send("hi"),
                             headers={**auth, "X-Request-ID": "stray-1"}) as resp:
            assert (await resp.json())["error"]["code"] == -32602
        async with http.post(gw.base + "/dead", json=send("hi"),
                             headers={**auth, "X-Request-ID": "dead-1"}) as resp:
            assert (await resp.json())["error"]["code"] == -32603
        async with http.post(gw.base + "/", json=send("stream: 2", "message/stream"),
                             headers={**auth, "X-Request-ID": "sse-1"}) as resp:
            bodies["sse"] = await resp.read()
            assert resp.status == 200 and bodies["sse"].count(b"data:") >= 2
        async with http.post(gw.base + "/", json=send("stream: 50", "message/stream"),
                             headers={**auth, "X-Request-ID": "gone-1"}) as resp:
            await resp.content.readuntil(b"\n\n")  # the first event, then away
        await gw.wait_for_line(b'"request_id":"gone-1"')
        async with http.get(gw.base + "/tasks/no-such-task", headers={
                **auth, "A2A-Version": "1.0", "X-Request-ID": "rest-1"}) as resp:
            assert resp.status == 404
    for name, line in (("auth", f"Authorization: Bearer {SECRET}\x01"),
                       ("key", f"X-Api-Key : {SECRET}")):
        answer = await raw_request(gw, (f"POST / HTTP/1.1\r\nHost: gw\r\n{line}\r\n"
                                        "Content-Length: 2\r\n\r\n{}").encode())
        assert answer.split(b" ", 2)[1] == b"400", (name, answer[:80])
    creds = grpc.ssl_channel_credentials(CA.cert_pem)
    async with grpc.aio.secure_channel(f"127.0.0.1:{gw.grpc_port}", creds) as channel:
        get = channel.unary_unary("/lf.a2a.v1.A2AService/GetTask")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await get(pb.GetTaskRequest(id="no-such-task").SerializeToString(),
                      metadata=(("x-api-key", KEY), ("x-request-id", "grpc-1")), timeout=10)
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
        stream = channel.unary_stream("/lf.a2a.v1.A2AService/SendStreamingMessage")
        request = pb.SendMessageRequest(message=pb.Message(
            message_id="m2", role=pb.Role.ROLE_USER, parts=[pb.Part(text="stream: 2")]))
        events = [e async for e in stream(request.SerializeToString(), metadata=(
            ("x-api-key", KEY), ("x-request-id", "grpc-stream-1")), timeout=10)]
        assert len(events) >= 2
        bodies["grpc-stream"] = b"".join(events)
    return bodies


def parse_all(name: str, data: bytes) -> list[JSON]:
    lines = []
    for number, raw in enumerate(data.decode().splitlines(), 1):
        try:
            line = json.loads(raw)
        except ValueError:
            raise AssertionError(f"{name} line {number} is not JSON: {raw[:300]!r}") from None
        assert isinstance(line, dict), (name, number, raw[:300])
        lines.append(line)
    return lines


async def test_every_line_is_json_with_access_fields_and_no_credential(
        gateway: Gateway) -> None:
    bodies = await exercise(gateway)
    out, err = gateway.stop()
    assert SECRET.encode() not in out + err and KEY.encode() not in out + err
    lines = parse_all("stdout", out) + parse_all("stderr", err)
    assert lines, "the gateway wrote nothing"
    stamps = [datetime.fromisoformat(line["timestamp"]) for line in parse_all("stderr", err)]
    assert stamps == sorted(stamps), "the lines of one process are out of timestamp order"
    calls = [line for line in lines if line.get("event") == "call"]
    by_id = {line["request_id"]: line for line in calls if line.get("request_id")}

    ok = by_id["ok-1"]
    assert {k: ok.get(k) for k in ("client", "tenant", "operation", "client_version",
                                   "client_binding", "status", "outcome", "bytes_in",
                                   "principal")} == {
        "client": "127.0.0.1", "tenant": "demo", "operation": "SendMessage",
        "client_version": "0.3", "client_binding": "JSONRPC", "status": 200,
        "outcome": "ok", "bytes_in": len(bodies["ok"]), "principal": "svc"}
    assert ok["bytes_out"] > 100 and ok["duration_ms"] > 0 and ok["trace_id"] == TRACE

    bad = by_id["bad-json-1"]
    assert (bad["status"], bad["error_code"], bad["bytes_in"], bad["client_binding"]) == \
        (200, -32700, len(bodies["bad-json"]), "JSONRPC")
    assert by_id["no-key-1"]["status"] == 401
    assert by_id["no-key-1"]["outcome"] == "UNAUTHENTICATED"
    assert by_id["stray-1"]["error_code"] == -32602
    dead = by_id["dead-1"]
    assert (dead["tenant"], dead["operation"], dead["status"], dead["error_code"]) == \
        ("dead", "SendMessage", 200, -32603)
    sse = by_id["sse-1"]
    assert (sse["operation"], sse["status"], sse["outcome"]) == ("SendStreamingMessage",
                                                                 200, "ok")
    assert sse["stream_events"] >= 2 and sse["bytes_out"] > len(bodies["sse"])
    rpc = by_id["grpc-1"]
    assert (rpc["operation"], rpc["client_binding"], rpc["client_version"], rpc["grpc_code"],
            rpc["outcome"], rpc["client"]) == ("GetTask", "GRPC", "1.0", "NOT_FOUND",
                                               "TASK_NOT_FOUND", "127.0.0.1")
    assert rpc["bytes_in"] == len(pb.GetTaskRequest(id="no-such-task").SerializeToString())
    gone = by_id["gone-1"]
    # 499: the handler was cancelled; 200 (sent already): a write found the client gone.
    assert (gone["operation"], gone["outcome"]) == ("SendStreamingMessage", "CLIENT_CANCELLED")
    assert gone["status"] in (200, 499)
    rest = by_id["rest-1"]
    assert (rest["operation"], rest["client_binding"], rest["client_version"], rest["status"],
            rest["outcome"], rest["method"], rest["path"]) == (
        "GetTask", "HTTP+JSON", "1.0", 404, "TASK_NOT_FOUND", "GET", "/tasks/no-such-task")
    streamed = by_id["grpc-stream-1"]
    assert (streamed["operation"], streamed["grpc_code"], streamed["outcome"],
            streamed["bytes_out"]) == ("SendStreamingMessage", "OK", "ok",
                                       len(bodies["grpc-stream"]))
    # One short line per malformed head: its access line, no traceback, nothing quoted.
    heads = [line for line in calls if line.get("status") == 400 and line.get("path") == "/"]
    assert len(heads) == 2 and all(line["client"] == "127.0.0.1" for line in heads)
    assert not [line for line in lines if "exception" in line], "a traceback was logged"
    assert not [line for line in lines if line.get("level") == "error"]


async def test_the_demo_agent_writes_json_lines_with_access_lines(tmp_path: Path) -> None:
    port = free_port()
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        proc = subprocess.Popen([str(VENV_BIN / "python"), "-m", "gateway.demo.agent",
                                 "--port", str(port)], stdout=out, stderr=err)
    try:
        wait_for_port(port, 30, proc)
        async with aiohttp.ClientSession() as http, \
                http.post(f"http://127.0.0.1:{port}/", json=send("hi")) as resp:
            assert (await resp.json())["result"]["parts"][0]["text"] == "echo: hi"
    finally:
        stop_process(proc)
    assert (tmp_path / "out").read_bytes() == b""  # no banner on stdout
    lines = parse_all("stderr", (tmp_path / "err").read_bytes())
    assert lines[0]["event"] == "demo agent listening"
    access = [line for line in lines if line.get("event") == "call"]
    assert [(x["method"], x["path"], x["status"]) for x in access] == [("POST", "/", 200)]
