"""What one look of the relay worker costs on the SQLite queue (docs/state.md, "The push
relay's queue"): with N deliveries queued, the time of ``relay_next_due`` (the read every
look makes) and of ``relay_claim`` (with the claimed ones given back, so every round sees
the same queue), as medians. Not part of `make bench`; run it alone:

    PYTHONPATH=$PWD .venv/bin/python -m bench.relay_queue_look [--queued 10000] [--lanes N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from gateway.state.relay_queue import NewDelivery, RelayQueueLimits
from gateway.state.sqlite_store import SqliteStore


async def _median_ms(step: object, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await step()  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def measure(queued: int, lanes: int, rounds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(str(Path(tmp) / "state.db"))
        limits = RelayQueueLimits(max_per_tenant=queued + 1, dedupe_ttl=3600)
        for n in range(queued):
            await store.relay_enqueue(NewDelivery(
                tenant="t", lane=f"lane-{n % lanes}", webhook_id=f"w{n}", sealed="s",
                task_id=f"task-{n % lanes}", body=b"{}", event=b"e", dropped="[]",
                trace="{}"), limits)

        async def claim_and_release() -> None:
            got = await store.relay_claim(10, 30, frozenset())
            assert len(got) == 10
            await store.relay_release([d.id for d in got])

        out = {"next_due_ms": await _median_ms(store.relay_next_due, rounds),
               "claim_10_and_release_ms": await _median_ms(claim_and_release, rounds)}
        # Every head held (a busy relay): the look finds nothing due.
        held = await store.relay_claim(lanes, 30, frozenset())
        out["next_due_all_held_ms"] = await _median_ms(store.relay_next_due, rounds)
        await store.relay_release([d.id for d in held])
        await store.close()
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queued", type=int, default=10_000)
    parser.add_argument("--lanes", type=int, default=0, help="0: one lane per delivery")
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    lanes = args.lanes or args.queued
    out = asyncio.run(measure(args.queued, lanes, args.rounds))
    print(f"{args.queued} queued in {lanes} lanes: " + ", ".join(
        f"{name} {value:.3f}" for name, value in out.items()))


if __name__ == "__main__":
    main()
