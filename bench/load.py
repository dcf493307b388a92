"""The load client: one process per scenario group, aiohttp, fixed counts, bounded time.

    python -m bench.load '<spec JSON>'      # prints one JSON result on stdout

Spec: `concurrency`, `rounds`, `time_cap` (seconds per job and round: no new request
starts after it), `deadline` (seconds for the whole process: jobs not started by then
are skipped), `request_timeout`, `watch` ({name: pid} whose CPU time is read around
every measured phase), and `jobs`, each with `id`, `url`, `headers`, `body` (a
template: `__N__` becomes a unique request number), `kind` (`unary` | `stream`),
`expect` (text an ok unary answer contains), `events` (data: events an ok stream has,
the last one completed), `requests` and `warmup` (per round).

The jobs run round-robin, `rounds` times, so that whatever else the machine does
during the run falls on every job alike. Each job and round gets a fresh session, a
warm-up on it (not measured), then its measured phase: `concurrency` workers share
the count, each sending its next request when the last one is answered (a closed
loop). A request is ok only if its answer is the expected one.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from bench.procs import cpu_seconds


@dataclass
class Phase:
    sent: int = 0
    ok: int = 0
    errors: int = 0
    error_sample: str | None = None
    latencies: list[float] = field(default_factory=list)  # seconds, ok requests only
    first_event: list[float] = field(default_factory=list)  # streams: time to first event
    wall: float = 0.0
    capped: bool = False

    def fail(self, why: str) -> None:
        self.errors += 1
        if self.error_sample is None:
            self.error_sample = why[:400]


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (q in 0..100)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


async def _unary(session: aiohttp.ClientSession, job: dict[str, Any], body: bytes,
                 phase: Phase, started: float) -> None:
    async with session.post(job["url"], data=body, headers=job["headers"]) as resp:
        data = await resp.read()
    if resp.status == 200 and job["expect"].encode() in data and b'"error"' not in data:
        phase.ok += 1
        phase.latencies.append(time.perf_counter() - started)
    else:
        phase.fail(f"HTTP {resp.status}: {data[:300]!r}")


async def _stream(session: aiohttp.ClientSession, job: dict[str, Any], body: bytes,
                  phase: Phase, started: float) -> None:
    events, first, last = 0, 0.0, b""
    async with session.post(job["url"], data=body, headers=job["headers"]) as resp:
        async for line in resp.content:
            if line.startswith(b"data:"):
                if events == 0:
                    first = time.perf_counter() - started
                events += 1
                last = line
    # The last event is the completed status: "completed" (v0.3), "TASK_STATE_COMPLETED".
    if resp.status == 200 and events >= job["events"] and b"completed" in last.lower() \
            and b'"error"' not in last:
        phase.ok += 1
        phase.latencies.append(time.perf_counter() - started)
        phase.first_event.append(first)
    else:
        phase.fail(f"HTTP {resp.status}, {events} events, last {last[-300:]!r}")


async def run_phase(session: aiohttp.ClientSession, job: dict[str, Any], count: int,
                    concurrency: int, tag: str, cap: float) -> Phase:
    phase = Phase()
    template = job["body"].encode()
    send = _stream if job["kind"] == "stream" else _unary
    begin = time.perf_counter()
    deadline = begin + cap

    async def worker() -> None:
        while phase.sent < count:
            if time.perf_counter() >= deadline:
                phase.capped = True
                return
            number = phase.sent
            phase.sent += 1
            body = template.replace(b"__N__", f"{tag}{number}".encode())
            started = time.perf_counter()
            try:
                await send(session, job, body, phase, started)
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                phase.fail(repr(exc))

    await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))
    phase.wall = time.perf_counter() - begin
    return phase


@dataclass
class JobTotal:
    """A job's measured phases over all rounds, pooled."""

    measured: Phase = field(default_factory=Phase)
    rounds_rps: list[float] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    warmup_errors: int = 0
    warmup_sample: str | None = None

    def add(self, phase: Phase, cpu: dict[str, float]) -> None:
        m = self.measured
        m.sent += phase.sent
        m.ok += phase.ok
        m.errors += phase.errors
        m.error_sample = m.error_sample or phase.error_sample
        m.latencies += phase.latencies
        m.first_event += phase.first_event
        m.wall += phase.wall
        m.capped = m.capped or phase.capped
        self.rounds_rps.append(phase.ok / phase.wall if phase.wall > 0 else 0.0)
        for name, seconds in cpu.items():
            self.cpu[name] = self.cpu.get(name, 0.0) + seconds

    def summary(self) -> dict[str, Any]:
        m = self.measured
        lat, first = sorted(m.latencies), sorted(m.first_event)
        out: dict[str, Any] = {
            "sent": m.sent, "ok": m.ok, "errors": m.errors + self.warmup_errors,
            "error_sample": m.error_sample or self.warmup_sample,
            "wall_s": round(m.wall, 4), "capped": m.capped,
            "rps": m.ok / m.wall if m.wall > 0 else 0.0,
            "rps_rounds": [round(x, 1) for x in self.rounds_rps],
            "p50_ms": percentile(lat, 50) * 1000, "p95_ms": percentile(lat, 95) * 1000,
            "p99_ms": percentile(lat, 99) * 1000,
            "mean_ms": sum(lat) / len(lat) * 1000 if lat else math.nan,
            "max_ms": lat[-1] * 1000 if lat else math.nan,
            "cpu_s": self.cpu,
        }
        if first:
            out["first_event_p50_ms"] = percentile(first, 50) * 1000
        return out


def _cpu(watch: dict[str, int]) -> dict[str, float]:
    return {name: cpu_seconds(pid) for name, pid in watch.items()}


async def run_job_round(job: dict[str, Any], spec: dict[str, Any], number: int,
                        total: JobTotal) -> None:
    concurrency = int(spec["concurrency"])
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)
    timeout = aiohttp.ClientTimeout(total=float(spec["request_timeout"]))
    cap = float(spec["time_cap"])
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        warm = await run_phase(session, job, int(job["warmup"]), concurrency,
                               f"w{number}-", min(cap, 10.0))
        before = _cpu(spec["watch"])
        phase = await run_phase(session, job, int(job["requests"]), concurrency,
                                f"m{number}-", cap)
        after = _cpu(spec["watch"])
    total.warmup_errors += warm.errors
    total.warmup_sample = total.warmup_sample or warm.error_sample
    total.add(phase, {name: after[name] - before[name] for name in after})


async def main_async(spec: dict[str, Any]) -> dict[str, Any]:
    end = time.monotonic() + float(spec["deadline"])
    totals = {job["id"]: JobTotal() for job in spec["jobs"]}
    skipped: list[str] = []
    for number in range(int(spec["rounds"])):
        for job in spec["jobs"]:
            if time.monotonic() >= end:
                skipped.append(f"{job['id']} (round {number + 1})")
                continue
            await run_job_round(job, spec, number, totals[job["id"]])
    return {"jobs": {jid: t.summary() for jid, t in totals.items() if t.rounds_rps},
            "skipped": skipped}


def main() -> int:
    spec = json.loads(sys.argv[1])
    result = asyncio.run(main_async(spec))
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
