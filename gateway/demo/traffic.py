"""`python -m gateway.demo.traffic`: a few conversations through a gateway, so a demo has
something to show (`make demo-migration`: the migration report fills with both agents'
calls and the shadow copies' disagreements). v0.3 JSON-RPC, as a legacy client speaks;
bounded in count and time; waits for the gateway to be ready first."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from typing import Any

import aiohttp

READY_SECONDS = 30.0  # how long the gateway may take to come up


async def _ready(http: aiohttp.ClientSession, health: str) -> bool:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        try:
            async with http.get(health) as resp:
                if resp.status == 200:
                    return True
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.2)
    return False


def _message(text: str, **ids: str) -> dict[str, Any]:
    return {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user",
            "parts": [{"kind": "text", "text": text}], **ids}


async def _call(http: aiohttp.ClientSession, url: str, method: str,
                params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    async with http.post(url, json=body) as resp:
        reply: dict[str, Any] = await resp.json(content_type=None)
        return reply


async def drive(url: str, health: str, count: int) -> int:
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        if not await _ready(http, health):
            print(f"traffic: the gateway did not answer {health} within {READY_SECONDS:g} s",
                  file=sys.stderr)
            return 1
        failed = 0
        for i in range(count):
            reply = await _call(http, url, "message/send",
                                {"message": _message(f"task: order {i}")})
            task = reply.get("result")
            if not isinstance(task, dict):
                failed += 1
                continue
            # A follow-up and a read: both reach the agent that owns the task.
            await _call(http, url, "tasks/get", {"id": task["id"]})
        print(f"traffic: {count} conversations sent to {url} ({failed} failed)")
        return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gateway.demo.traffic",
                                     description=__doc__)
    parser.add_argument("url", help="the tenant's JSON-RPC URL, e.g. http://127.0.0.1:8080/shop/")
    parser.add_argument("--health", default="http://127.0.0.1:8081/healthz",
                        help="where to wait for the gateway (default: %(default)s)")
    parser.add_argument("--count", type=int, default=30, choices=range(1, 1001),
                        metavar="N", help="conversations to start, 1..1000 (default: 30)")
    args = parser.parse_args(argv)
    return asyncio.run(drive(args.url, args.health, args.count))


if __name__ == "__main__":
    sys.exit(main())
