"""A journaled stream outlives its client's call (docs/streams.md, "Resuming a stream"):
both ingresses (SSE, gateway/ingress/sse_out.py; gRPC, gateway/ingress/grpc.py) run
its driver in a task of its own, so that the client's leaving does not cut the backend's
stream mid-read and the driver can read it on into the journal (the hold)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from gateway.call import Call
from gateway.config.state import JournalConfig
from gateway.streams.driver import client_left

T = TypeVar("T")


def held(driving: Awaitable[T], call: Call, journal: JournalConfig) -> Awaitable[T]:
    """``driving`` (the call's stream driver) as the ingress awaits it: detached when the
    journal is on with a hold, as is otherwise."""
    if journal.enabled and journal.hold > 0:
        return _detached(driving, call, journal.hold)
    return driving


async def _detached(driving: Awaitable[T], call: Call, hold: float) -> T:
    """The driver in a task of its own, which the client's leaving (the transport cancels
    the handler) does not cancel: the driver reads the backend on into the journal once
    a write finds the client gone — for `state.journal.hold` seconds after the client
    left at most (then it is cancelled, as it would have been at once without a hold).
    The call ends for the client now: counted and logged as it leaves."""
    task = asyncio.ensure_future(driving)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if not task.done():
            client_left(call)
            task.add_done_callback(_settled)
            asyncio.get_running_loop().call_later(hold, task.cancel)
        raise


def _settled(task: asyncio.Future[T]) -> None:
    """A detached stream's end, read so that nothing reports it as never retrieved (the
    driver has logged whatever it was)."""
    if not task.cancelled():
        task.exception()
