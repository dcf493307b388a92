"""How long a resume of a 1,000-event gap takes to serve from the journal: 1,001 events
journaled in a SQLite store, then a stream resumed from the first one reads and
re-journals the rest in the driver's appends of 32, five times. In process: no HTTP, no
socket writes. `make bench` runs it in its stream journal section (bench/journal.py,
target `journal:resume.gap_1000_ms`); alone:

    .venv/bin/python -m bench.journal_resume
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from typing import Any

from a2a.types import a2a_pb2 as pb

from gateway.config.state import JournalConfig
from gateway.state.sqlite_store import SqliteStore
from gateway.streams.journal import StreamJournal

GAP = 1000  # events a resume serves
REPEATS = 5
APPEND = 32  # events per append, as the stream driver writes them


def chunk(i: int) -> pb.StreamResponse:
    return pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
        task_id="t1", context_id="c", append=i > 0,
        artifact=pb.Artifact(artifact_id="a", parts=[pb.Part(text=f"chunk {i} " * 4)])))


async def resume_times(gap: int = GAP, repeats: int = REPEATS) -> dict[str, Any]:
    """`events`: what each resume served (``gap``: the events after the first); `times_ms`:
    each resume's wall time, reading the journal and re-journaling what it read."""
    with tempfile.TemporaryDirectory(prefix="a2a-journal-resume-") as tmp:
        store = SqliteStore(os.path.join(tmp, "s.db"))
        try:
            live = StreamJournal(store, "t", JournalConfig())
            for start in range(0, gap + 1, APPEND):
                await live.record([chunk(i) for i in range(start, min(start + APPEND,
                                                                       gap + 1))])
            times, served = [], set()
            for _ in range(repeats):
                back = StreamJournal(store, "t", JournalConfig(), ("t1", 1))
                t0, n = time.perf_counter(), 0
                async for batch in back.replay():
                    for s in range(0, len(batch), APPEND):
                        n += len(await back.record(batch[s:s + APPEND]))
                times.append((time.perf_counter() - t0) * 1000)
                served.add(n)
        finally:
            await store.close()
    # Every resume serves the same gap; a different count would time something else.
    return {"events": served.pop() if len(served) == 1 else -1, "times_ms": times}


def main() -> None:
    out = asyncio.run(resume_times())
    print("resume of", out["events"], "events:",
          " ".join(f"{t:.1f}" for t in out["times_ms"]), "ms")


if __name__ == "__main__":
    main()
