"""A call's stream plan, built once from the backend's version, the client's version and
the operation: which repairs the reads get, which filters the events pass, and whether
the client needs v0.3 `final` flags."""

from __future__ import annotations

import asyncio

from gateway.call import Call
from gateway.egress.base import Backend
from gateway.streams.driver import StreamPlan
from gateway.streams.filters import (
    Bounds,
    Chain,
    Counted,
    StreamFilter,
    WrittenFirst,
    final_flags,
)
from gateway.streams.v03_repair import SettledEnd, v03_reads
from gateway.tasks.index import TaskIndex
from translators.versions import V03


def plan_stream(call: Call, backend: Backend, tasks: TaskIndex) -> StreamPlan:
    v03_backend = backend.config.version == V03
    filters: list[StreamFilter] = []
    if v03_backend:
        filters.append(SettledEnd(backend, call))  # its end settled (reference §3.8)
    filters.append(Counted(call, tasks))  # after the repairs: what the client gets
    return StreamPlan(
        reads=v03_reads(backend, call, backend.stream(call)),
        chain=Chain(filters),
        bounds=Bounds(backend.config, asyncio.get_running_loop().time()),
        final_flags=final_flags(call),
        written_first=WrittenFirst(call, tasks) if tasks.creates(call) else None)
