"""How long a resume of a 1,000-event gap takes to serve from the journal (not part of
`make bench`; docs/performance.md): 1,001 events journaled in a SQLite store, then a
stream resumed from the first one reads and re-journals the rest in the driver's appends
of 32, five times. In process: no HTTP, no socket writes.

    .venv/bin/python -m bench.journal_resume
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time

from a2a.types import a2a_pb2 as pb

from gateway.config.state import JournalConfig
from gateway.state.sqlite_store import SqliteStore
from gateway.streams.journal import StreamJournal


def chunk(i: int) -> pb.StreamResponse:
    return pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
        task_id="t1", context_id="c", append=i > 0,
        artifact=pb.Artifact(artifact_id="a", parts=[pb.Part(text=f"chunk {i} " * 4)])))


async def main() -> None:
    store = SqliteStore(os.path.join(tempfile.mkdtemp(), "s.db"))
    live = StreamJournal(store, "t", JournalConfig())
    for start in range(0, 1001, 32):
        await live.record([chunk(i) for i in range(start, min(start+32, 1001))])
    times = []
    for _ in range(5):
        back = StreamJournal(store, "t", JournalConfig(), ("t1", 1))
        t0, n = time.perf_counter(), 0
        async for batch in back.replay():
            for s in range(0, len(batch), 32):
                n += len(await back.record(batch[s:s+32]))
        times.append((time.perf_counter() - t0) * 1000)
    print("resume of", n, "events:", " ".join(f"{t:.1f}" for t in times), "ms")
    await store.close()


if __name__ == "__main__":
    asyncio.run(main())
