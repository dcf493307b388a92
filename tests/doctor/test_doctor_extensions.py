"""Seed I7 (extensions) and the version seeds against a small v1.0 JSON-RPC agent served
on loopback that requires an extension: doctor declares the required extension on its
probes, checks the echo of two declared URIs, and that leaving the required one out is
refused with ExtensionSupportRequiredError."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from gateway.doctor.runner import Options, doctor, silent
from tests.support.helpers import free_port

EXT, OTHER = "https://ext.example/required", "https://ext.example/optional"
Start = Callable[[bool], Awaitable[str]]


def _error(rid: Any, code: int, reason: str, message: str) -> dict[str, Any]:
    info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
            "domain": "a2a-protocol.org"}
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message,
                                                   "data": [info]}}


def agent_app(base: str, enforce: bool) -> web.Application:
    card = {"name": "ext-agent", "description": "requires an extension", "version": "1",
            "supportedInterfaces": [{"url": base + "/", "protocolBinding": "JSONRPC",
                                     "protocolVersion": "1.0"}],
            "capabilities": {"extensions": [{"uri": EXT, "required": True}, {"uri": OTHER}]},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": []}

    async def serve_card(_: web.Request) -> web.Response:
        return web.json_response(card)

    async def rpc(request: web.Request) -> web.Response:
        body = await request.json()
        rid, method = body.get("id"), body.get("method")
        declared = {u.strip() for u in request.headers.get("A2A-Extensions", "").split(",")}
        active = ",".join(u for u in (EXT, OTHER) if u in declared)
        headers = {"A2A-Extensions": active} if active else {}
        if request.headers.get("A2A-Version") != "1.0":
            answer = _error(rid, -32009, "VERSION_NOT_SUPPORTED", "send A2A-Version: 1.0")
        elif enforce and EXT not in declared:
            answer = _error(rid, -32008, "EXTENSION_SUPPORT_REQUIRED", f"declare {EXT}")
        elif method == "ListTasks":
            answer = {"jsonrpc": "2.0", "id": rid, "result": {"tasks": []}}
        elif method in ("GetTask", "CancelTask", "SubscribeToTask",
                        "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
                        "DeleteTaskPushNotificationConfig"):
            answer = _error(rid, -32001, "TASK_NOT_FOUND", "Task not found")
        else:
            answer = _error(rid, -32601, "METHOD_NOT_FOUND", "Method not found")
        return web.json_response(answer, headers=headers)

    app = web.Application()
    app.router.add_get("/.well-known/agent-card.json", serve_card)
    app.router.add_post("/", rpc)
    return app


@pytest.fixture
async def start() -> AsyncIterator[Start]:
    runners: list[web.AppRunner] = []

    async def make(enforce: bool) -> str:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        runner = web.AppRunner(agent_app(base, enforce))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        runners.append(runner)
        return base

    yield make
    for runner in runners:
        await runner.cleanup()


async def test_required_extension_agent(start: Start) -> None:
    base = await start(True)
    (t,) = (await doctor(base, Options(progress=silent))).targets
    assert t.card.extensions == [EXT, OTHER] and t.card.required_extensions == [EXT]
    (iface,) = t.interfaces
    assert iface.answered == ["JSONRPC 1.0"] and iface.agreement == "as advertised"
    ops = {o.operation: o.status for o in iface.operations}
    # Doctor declares the required extension, so the probes get through.
    assert ops["GetTask"] == ops["ListTasks"] == ops["CancelTask"] == "works"
    assert ops["GetExtendedAgentCard"] == "skipped"  # the card does not offer one
    seeds = {s.id: s for s in t.seeds}
    assert seeds["I7"].result == "pass"
    assert EXT in seeds["I7"].why and "ExtensionSupportRequiredError" in seeds["I7"].why
    assert seeds["I3"].result == "pass" and seeds["I4"].result == "pass"
    assert seeds["I12"].result == "n.a." and seeds["I13"].result == "pass"
    assert t.servable


async def test_agent_that_ignores_a_missing_required_extension(start: Start) -> None:
    base = await start(False)
    (t,) = (await doctor(base, Options(progress=silent))).targets
    seed = next(s for s in t.seeds if s.id == "I7")
    assert seed.result == "differs"
    assert "without the required one: TaskNotFoundError" in seed.why
