"""A journaled stream outlives its client's call (docs/streams.md, "Resuming a stream"):
the client's leaving must not cut the backend's stream mid-read, so that the driver can
read it on into the journal (the hold). An SSE stream on a guarded connection keeps its
driver in its handler, which the connection's loss then does not cancel (:func:`kept`);
elsewhere (gRPC, gateway/ingress/grpc.py) the driver runs in a task of its own, which
the cancelled handler leaves running (:func:`held`). The task costs a new stream's
first event a pass of the event loop, more than a millisecond under 16 busy streams
(bench/README.md, "The hold and the first event")."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from gateway.call import Call
from gateway.config.state import JournalConfig
from gateway.observability.metrics import HELD_STREAMS
from gateway.streams.driver import client_left

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class EndsEarly(Protocol[T_co]):
    """A sink the shutdown's drain can end for its client while the driver reads on into
    the journal (SSE: gateway/ingress/sse_out.py; the driver asks it to `leave`)."""

    def release(self) -> asyncio.Future[None]:
        """Set once the client's end may be written (no write under way)."""
        ...

    async def end_for_client(self) -> T_co:
        ...


class KeptConnection(Protocol):
    """The client's connection as a kept stream uses it (the ingress's guard,
    gateway/ingress/connections.py GuardedProtocol; typed here so that streams/ does not
    import ingress/)."""

    on_lost: Callable[[], None] | None

    def close(self, reason: str) -> None: ...


class LeavesAtDrain:
    """The part of a sink (SSE, gRPC) that ends its stream for its client at the drain,
    at an event boundary, the driver reading on into the journal: from :meth:`leave` on
    nothing is written; ``released`` (:meth:`release`) is set once no write is under way
    (:meth:`wrote` after each write), and the ingress then gives the client its
    end (EndsEarly.end_for_client, awaited by :func:`_detached`)."""

    opened: bool  # the sink's: whether anything was written

    def __init__(self) -> None:
        self.left = False
        self.writing = False
        self.released: asyncio.Future[None] | None = None

    def release(self) -> asyncio.Future[None]:
        self.released = asyncio.get_running_loop().create_future()
        return self.released

    def leave(self) -> bool:
        """End the stream for its client after the write under way. False when it
        cannot (nothing written yet: the drain ends it as any stream)."""
        if not self.opened or self.left or self.released is None:
            return False
        self.left = True
        if not self.writing:
            self.released.set_result(None)
        return True

    def wrote(self) -> None:
        """After each write (set ``writing`` before it; call this in its ``finally``): a
        leave that waited for the write is released. (Not a context manager: this is on
        every SSE write's path, and a generator per write costs.)"""
        self.writing = False
        if self.left and self.released is not None and not self.released.done():
            self.released.set_result(None)


def held(driving: Awaitable[T], call: Call, journal: JournalConfig,
         early: EndsEarly[T] | None = None) -> Awaitable[T]:
    """``driving`` (the call's stream driver) as the ingress awaits it: detached when the
    journal is on with a hold, as is otherwise."""
    if journal.holds:
        return _detached(driving, call, journal.hold, early)
    return driving


async def _detached(driving: Awaitable[T], call: Call, hold: float,
                    early: EndsEarly[T] | None) -> T:
    """The driver in a task of its own, which the client's leaving (the transport cancels
    the handler) does not cancel: the driver reads the backend on into the journal once
    a write finds the client gone — for `state.journal.hold` seconds after the client
    left at most (then it is cancelled, as it would have been at once without a hold).
    The call ends for the client now: counted and logged as it leaves.

    At the drain, an ``early`` sink may end for its client before the stream ends: the
    client gets its end here (counted OK), and the driver reads on into the journal."""
    task = asyncio.ensure_future(driving)
    released = early.release() if early is not None else None
    try:
        if released is None:
            return await asyncio.shield(task)
        await asyncio.wait((task, released), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        if not task.done():
            client_left(call)
            _read_on(task, hold)
        raise
    if not released.done():  # the stream ended, no drain came first
        return task.result()
    assert early is not None
    client_left(call, drained=True)
    HELD_STREAMS.inc()
    _read_on(task, hold)
    return await early.end_for_client()


async def kept(driving: Awaitable[T], call: Call, journal: JournalConfig,
               early: EndsEarly[T], conn: KeptConnection, gone: Callable[[], None]) -> T:
    """``driving`` in the handler's own task, the journal on with a hold: the loss of the
    client's connection (``conn``) does not cancel it (GuardedProtocol.on_lost) but ends
    the call for the client; the driver reads on into the journal (its next write finds
    the client gone), for `state.journal.hold` seconds at most; ``gone`` writes its
    access line then, as for a call cancelled by its client. At the drain, ``early``
    ends the stream for its client at an event boundary and closes its connection, and
    the driver reads on as in :func:`_detached`."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    timer: asyncio.TimerHandle | None = None
    released = early.release()

    def lost() -> None:
        nonlocal timer
        if not released.done():  # else the drain's end has counted the call
            client_left(call)
            gone()
        timer = loop.call_later(journal.hold, task.cancel)

    def drained(_: asyncio.Future[None]) -> None:
        if released.cancelled():
            return
        client_left(call, drained=True)
        HELD_STREAMS.inc()
        ending = asyncio.ensure_future(_end_closing(early, conn))
        ending.add_done_callback(_settled)

    conn.on_lost = lost
    released.add_done_callback(drained)
    try:
        return await driving
    finally:
        if conn.on_lost is lost:
            conn.on_lost = None
        if not released.done():
            released.cancel()
        if timer is not None:
            timer.cancel()


async def _end_closing(early: EndsEarly[T], conn: KeptConnection) -> None:
    """The drain's end for a kept stream's client, then its connection closed: the
    handler returns only once the driver has read on, and the client's next call must
    not wait for it on this connection."""
    try:
        await early.end_for_client()
    finally:
        conn.close("shutdown")


def _read_on(task: asyncio.Future[T], hold: float) -> None:
    task.add_done_callback(_settled)
    asyncio.get_running_loop().call_later(hold, task.cancel)


def _settled(task: asyncio.Future[T]) -> None:
    """A detached stream's end, read so that nothing reports it as never retrieved (the
    driver has logged whatever it was)."""
    if not task.cancelled():
        task.exception()
