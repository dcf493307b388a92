"""Webhook delivery of v0.3 push notifications (the full J03 Task, spec@v0.3.0 §9.5)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable

import aiohttp

from gateway.demo.wire import JSON

logger = logging.getLogger(__name__)

TOKEN_HEADER = "X-A2A-Notification-Token"


class PushSender:
    """Posts task snapshots to webhooks from one background worker.

    One worker (rather than a task per notification) keeps deliveries in the order
    the states happened, so a receiver never sees `completed` before `working`.
    """

    def __init__(self, timeout: float = 5.0) -> None:
        self._timeout = timeout
        self._queue: asyncio.Queue[tuple[str, str | None, JSON]] = asyncio.Queue()
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
            self._queue.put_nowait((config["url"], config.get("token"), task))

    async def _run(self) -> None:
        while True:
            url, token, task = await self._queue.get()
            await self._deliver(url, token, task)

    async def _deliver(self, url: str, token: str | None, task: JSON) -> None:
        assert self._session is not None
        headers = {TOKEN_HEADER: token} if token else {}
        try:
            async with self._session.post(url, json=task, headers=headers) as response:
                if response.status >= 400:
                    logger.warning(
                        "push to %s for task %s got HTTP %s", url, task["id"], response.status
                    )
        # A client-supplied URL can fail in many ways (bad scheme, DNS, refused,
        # timeout); none of them may stop the agent or later deliveries.
        except Exception as exc:
            logger.warning("push to %s for task %s failed: %r", url, task["id"], exc)
