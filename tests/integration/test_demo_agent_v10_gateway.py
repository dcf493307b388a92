"""The gateway in front of the demo agent serving v1.0 (`--protocol 1.0`): a v0.3 client
gets the same answers, by meaning, as from the v0.3 demo agent — the migration mode
premise (a legacy v0.3 agent and its v1.0 successor answer alike)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from gateway.demo.agent import start_demo_agent
from tests.support.helpers import MakeGateway, free_port, v03

JSON = dict[str, Any]
# What differs between any two runs whatever the agent: generated ids and clocks.
RUN_SPECIFIC = frozenset({"id", "contextId", "taskId", "messageId", "timestamp"})


@pytest.fixture
async def gateways(make_gateway: MakeGateway, demo_agent: str) -> AsyncIterator[dict[str, str]]:
    """Gateways with one tenant each: the v0.3 demo agent ("0.3"), the v1.0 one ("1.0"),
    and the v1.0 one answering with `--answer-variant artifact-text` ("1.0-v2")."""
    successors = []
    for variant in (None, "artifact-text"):
        port = free_port()
        successors.append((await start_demo_agent("127.0.0.1", port, protocol="1.0",
                                                  answer_variant=variant), port))
    urls = [f"http://127.0.0.1:{port}/" for _, port in successors]
    yield {"0.3": await make_gateway({"legacy": v03(demo_agent)}) + "/",
           "1.0": await make_gateway({"successor": v03(urls[0], "1.0")}) + "/",
           "1.0-v2": await make_gateway({"successor": v03(urls[1], "1.0")}) + "/"}
    for runner, _ in successors:
        await runner.cleanup()


def _same_run(value: Any) -> Any:
    """``value`` with what is particular to one run (ids, timestamps) blanked out."""
    if isinstance(value, dict):
        return {k: "<run>" if k in RUN_SPECIFIC else _same_run(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_same_run(v) for v in value]
    return value


class V03Client:
    """A v0.3 JSON-RPC client of one gateway, raw (no SDK): J03 in, J03 out."""

    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http, self.url, self._ids = http, url, 0

    def _body(self, method: str, params: JSON) -> JSON:
        self._ids += 1
        return {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}

    async def call(self, method: str, params: JSON) -> Any:
        async with self.http.post(self.url, json=self._body(method, params)) as resp:
            reply = await resp.json()
        assert "error" not in reply, reply
        return reply["result"]

    async def stream(self, method: str, params: JSON) -> list[Any]:
        events = []
        async with self.http.post(self.url, json=self._body(method, params)) as resp:
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            async for line in resp.content:
                if line.startswith(b"data:"):
                    events.append(json.loads(line[5:])["result"])
        return events

    @staticmethod
    def message(text: str, **extra: Any) -> JSON:
        return {"message": {"kind": "message", "messageId": f"m-{text}", "role": "user",
                            "parts": [{"kind": "text", "text": text}], **extra}}


async def _conversation(client: V03Client) -> dict[str, Any]:
    """The same calls in the same order; every answer, as it came."""
    seen: dict[str, Any] = {}
    seen["echo"] = await client.call("message/send", client.message("hello"))
    task = seen["task"] = await client.call("message/send", client.message("task: a shed"))
    seen["get"] = await client.call("tasks/get", {"id": task["id"], "historyLength": 1})
    seen["stream"] = await client.stream("message/stream", client.message("stream: 3"))
    asked = seen["input"] = await client.call("message/send", client.message("input: tea"))
    seen["answer"] = await client.call("message/send", client.message(
        "China", taskId=asked["id"], contextId=asked["contextId"]))
    slow = await client.call("message/send", {**client.message("slow"),
                                              "configuration": {"blocking": False}})
    seen["cancel"] = await client.call("tasks/cancel", {"id": slow["id"]})
    return seen


async def test_a_v03_client_gets_the_same_answers_from_either_agent(
        http: aiohttp.ClientSession, gateways: dict[str, str]) -> None:
    legacy = await _conversation(V03Client(http, gateways["0.3"]))
    successor = await _conversation(V03Client(http, gateways["1.0"]))
    for step in legacy:
        assert _same_run(successor[step]) == _same_run(legacy[step]), step
    # What the answers say, in case both sides went wrong the same way.
    assert legacy["echo"]["parts"] == [{"kind": "text", "text": "echo: hello"}]
    assert successor["task"]["artifacts"][0]["parts"][0] == {"kind": "text",
                                                             "text": "built a shed"}
    assert successor["task"]["status"]["state"] == "completed"
    assert [e["artifact"]["parts"][0]["text"] for e in successor["stream"]
            if e["kind"] == "artifact-update"] == ["chunk 0", "chunk 1", "chunk 2"]
    assert successor["stream"][-1] == {**successor["stream"][-1], "kind": "status-update",
                                       "final": True}
    assert successor["input"]["status"]["state"] == "input-required"
    assert successor["answer"]["artifacts"][0]["parts"][0]["text"] == "tea from China"
    assert successor["cancel"]["status"]["state"] == "canceled"


async def test_the_variant_is_the_one_difference(http: aiohttp.ClientSession,
                                                 gateways: dict[str, str]) -> None:
    """What a shadow diff between the two would show: `artifact-text` changes the first
    text of each task's first artifact, and nothing else."""
    legacy = _same_run(await _conversation(V03Client(http, gateways["0.3"])))
    varied = _same_run(await _conversation(V03Client(http, gateways["1.0-v2"])))
    for step in ("task", "get", "answer"):
        first = legacy[step]["artifacts"][0]["parts"][0]
        first["text"] += " (v2)"
    first_chunk = next(e for e in legacy["stream"] if e["kind"] == "artifact-update")
    first_chunk["artifact"]["parts"][0]["text"] = "chunk 0 (v2)"
    assert varied == legacy
    assert varied["task"]["artifacts"][0]["parts"][0]["text"] == "built a shed (v2)"
