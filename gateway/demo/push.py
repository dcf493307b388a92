"""Webhook delivery of push notifications: the task as it is now, at each state change.

v0.3 posts the full J03 Task (spec@v0.3.0 §9.5); with `--protocol 1.0` a renderer from
gateway.demo.v10 writes the same snapshot the v1.0 way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Iterable

import aiohttp

from gateway.demo.wire import JSON

logger = logging.getLogger(__name__)

TOKEN_HEADER = "X-A2A-Notification-Token"

# A push config (J03, as the engine keeps it) and a J03 Task snapshot, as the body and
# the headers to POST.
Render = Callable[[JSON, JSON], tuple[JSON, dict[str, str]]]


def render_v03(config: JSON, task: JSON) -> tuple[JSON, dict[str, str]]:
    token = config.get("token")
    return task, ({"Content-Type": "application/json", TOKEN_HEADER: token} if token
                  else {"Content-Type": "application/json"})


class PushSender:
    """Posts task snapshots to webhooks from one background worker.

    One worker (rather than a task per notification) keeps deliveries in the order
    the states happened, so a receiver never sees `completed` before `working`.
    """

    def __init__(self, timeout: float = 5.0, render: Render = render_v03) -> None:
        self._timeout = timeout
        self._render = render
        # (url, task id for the log, body, headers)
        self._queue: asyncio.Queue[tuple[str, str, JSON, dict[str, str]]] = asyncio.Queue()
        self._session: aiohttp.ClientSession | None = None
        self._worker: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self._timeout))
        self._worker = asyncio.create_task(self._run(), name="demo-agent-push")

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    def enqueue(self, configs: Iterable[JSON], task: JSON) -> None:
        for config in configs:
            # Rendered now, not when sent: the snapshot is of this state change.
            body, headers = self._render(config, task)
            self._queue.put_nowait((config["url"], task["id"], body, headers))

    async def _run(self) -> None:
        while True:
            await self._deliver(*await self._queue.get())

    async def _deliver(self, url: str, task_id: str, body: JSON, headers: dict[str, str]) -> None:
        assert self._session is not None
        try:
            async with self._session.post(url, data=json.dumps(body).encode(),
                                          headers=headers) as response:
                if response.status >= 400:
                    logger.warning(
                        "push to %s for task %s got HTTP %s", url, task_id, response.status
                    )
        # A client-supplied URL can fail in many ways (bad scheme, DNS, refused,
        # timeout); none of them may stop the agent or later deliveries.
        except Exception as exc:
            logger.warning("push to %s for task %s failed: %r", url, task_id, exc)
