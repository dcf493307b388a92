"""An agent's v1.0 JSON-RPC streaming answer, written frame by frame by a test that paces
it (the integration tests of held and resumed streams)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web


def posting_app(handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                ) -> web.Application:
    """An app that answers every POST to / with ``handler``."""
    app = web.Application()
    app.router.add_post("/", handler)
    return app


class JsonRpcStream:
    """The SSE answer to one JSON-RPC request, opened: each frame answers its id."""

    def __init__(self, body: dict[str, Any], response: web.StreamResponse) -> None:
        self.body = body
        self.response = response

    @classmethod
    async def opened(cls, request: web.Request) -> JsonRpcStream:
        body = await request.json()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        return cls(body, response)

    @property
    def method(self) -> str:
        return str(self.body["method"])

    async def result(self, result: dict[str, Any]) -> None:
        await self._frame({"result": result})

    async def error(self, code: int, message: str) -> None:
        await self._frame({"error": {"code": code, "message": message}})

    async def _frame(self, answer: dict[str, Any]) -> None:
        frame = {"jsonrpc": "2.0", "id": self.body["id"], **answer}
        await self.response.write(f"data: {json.dumps(frame)}\n\n".encode())

    async def end(self) -> web.StreamResponse:
        await self.response.write_eof()
        return self.response
