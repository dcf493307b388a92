"""Every call leaves the gateway by one exit (observe.finish): counted once, logged once,
whatever way it ended — answered, refused by the backend, refused before it became a call
(a body that is not JSON, no such method or route), or streamed."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from tests.integration.test_operations import Proc, gateway_proc, j03, metric
from tests.support.waiting import wait_until

__all__ = ["gateway_proc"]  # the fixture, shared with test_operations


async def _send(http: aiohttp.ClientSession, verb: str, url: str, rid: str,
                body: bytes | None = None, **headers: str) -> tuple[int, str]:
    async with http.request(verb, url, data=body, headers={
            "X-Request-ID": rid, "Content-Type": "application/json", **headers}) as resp:
        return resp.status, await resp.text()


async def test_every_way_a_call_ends_is_counted_and_logged_once(gateway_proc: Proc) -> None:
    base = gateway_proc.base
    stream_body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "message/stream",
                              "params": j03("stream please")}).encode()
    sent: dict[str, tuple[int, str]] = {}
    async with aiohttp.ClientSession() as http:
        sent["ok"] = await _send(http, "POST", base + "/", "ok", json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": j03("hi")}).encode())
        sent["backend-refused"] = await _send(
            http, "GET", base + "/tasks/nope", "backend-refused", **{"A2A-Version": "1.0"})
        sent["not-json"] = await _send(http, "POST", base + "/", "not-json", b"{not json")
        sent["no-method"] = await _send(
            http, "POST", base + "/", "no-method",
            b'{"jsonrpc":"2.0","id":2,"method":"NoSuchMethod","params":{}}')
        sent["no-route"] = await _send(http, "GET", base + "/nowhere/at/all", "no-route",
                                       **{"A2A-Version": "1.0"})
        sent["wrong-verb"] = await _send(http, "DELETE", base + "/message:send", "wrong-verb",
                                         **{"A2A-Version": "1.0"})
        sent["stream"] = await _send(http, "POST", base + "/", "stream", stream_body,
                                     Accept="text/event-stream")
        async with http.get(base + "/metrics") as resp:
            text = await resp.text()
    # Each ended as it should (so that each way out is really taken) ...
    assert sent["ok"][0] == 200 and "echo: hi" in sent["ok"][1]
    assert sent["backend-refused"][0] == 404
    assert sent["not-json"][0] == 200 and "-32700" in sent["not-json"][1]
    assert sent["no-method"][0] == 200 and "-32601" in sent["no-method"][1]
    assert sent["no-route"][0] == 404
    assert sent["wrong-verb"][0] == 405
    assert sent["stream"][0] == 200 and "stream please" in sent["stream"][1]

    # ... and each is one log line and one count.
    def logged() -> dict[str, list[dict[str, Any]]] | None:
        lines: dict[str, list[dict[str, Any]]] = {}
        for line in gateway_proc.lines():
            if line.get("event") == "call":
                lines.setdefault(line.get("request_id", ""), []).append(line)
        return lines if set(sent) <= set(lines) else None

    lines = await wait_until(logged, "every call's log line")
    assert {rid: len(lines[rid]) for rid in sent} == {rid: 1 for rid in sent}
    assert lines["not-json"][0]["outcome"] == "PARSE_ERROR"
    assert lines["stream"][0]["operation"] == "SendStreamingMessage"
    # A call is counted when it ends, and each above had ended (its answer read whole)
    # before /metrics was read.
    assert metric(text, "a2a_gateway_calls_total") == len(sent)
