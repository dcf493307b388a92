"""The peers' load client: raw HTTP/1.1 keep-alive over asyncio protocols, on uvloop.

    python -m bench.fastload '<spec JSON>'     # prints one JSON result on stdout

bench/load.py (aiohttp) tops out at a few thousand requests/s on one core, below what
nginx serves; this client does far less per request (one prebuilt request, a small
response parser) so that the middle hop, not the client, is what a run measures. It
runs on uvloop when uvloop is installed (bench.peers pins it to its own core).

Spec: `port`, `path`, `headers`, `body` (the same bytes for every request: the JSON-RPC
id is a fixed 1, which the stub's fixed answer carries) or `bodies` (a list each
connection sends in turn, connection i from the i-th on), `kind` (`unary` | `stream`),
`expect` (text an ok unary answer contains), `events` (data: events an ok stream has; its
last one must contain "completed"), `connections`, `warmup` and `duration` (seconds),
`max_requests` (a bound on the measured count) and `watch` ({name: pid} whose CPU time,
with their children's, is read at the start and the end of the measured window).

Each connection is a closed loop: it sends its next request when the last answer is
complete. Answers completed within the measured window count; an answer that is not the
expected one is an error (and is not counted as ok).
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, cast

from bench.procs import cpu_seconds

_HEAD, _BODY, _SIZE, _CHUNK, _CRLF, _TRAILER = range(6)


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and its live descendants (nginx master + worker)."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            total += cpu_seconds(current)
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(x) for x in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


class Stats:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.counting = False
        self.stopping = False
        self.ok = 0
        self.errors = 0
        self.error_sample: str | None = None
        self.events = 0
        self.latencies: list[float] = []
        self.first_event: list[float] = []
        self.limit = int(spec["max_requests"])

    def fail(self, why: str) -> None:
        if self.counting:
            self.errors += 1
        if self.error_sample is None:
            self.error_sample = why[:400]


class Conn(asyncio.Protocol):
    """One keep-alive connection, one request at a time."""

    def __init__(self, stats: Stats, requests: list[bytes], first: int,
                 done: asyncio.Future[None]) -> None:
        self.stats, self.requests, self.done = stats, requests, done
        self.next = first % len(requests)
        self.stream = stats.spec["kind"] == "stream"
        self.expect = stats.spec["expect"].encode()
        self.want_events = int(stats.spec["events"])
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.state = _HEAD
        self.remaining = 0
        self.status = 0
        self.body = bytearray()
        self.line = bytearray()  # streams: the incomplete last line
        self.count = 0
        self.last = b""
        self.started = 0.0
        self.first = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.send()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            if not self.stats.stopping:
                self.stats.fail(f"connection lost: {exc!r}")
            self.done.set_result(None)

    def send(self) -> None:
        s = self.stats
        if s.stopping or (s.counting and s.ok + s.errors >= s.limit):
            assert self.transport is not None
            self.transport.close()
            if not self.done.done():
                self.done.set_result(None)
            return
        self.state, self.body, self.line, self.count, self.last = _HEAD, bytearray(), \
            bytearray(), 0, b""
        self.started = time.perf_counter()
        assert self.transport is not None
        self.transport.write(self.requests[self.next])
        self.next = (self.next + 1) % len(self.requests)

    def _on_body(self, data: bytes | bytearray) -> None:
        if not self.stream:
            self.body += data
            return
        self.line += data
        if b"\n" not in data:
            return
        lines = self.line.split(b"\n")
        self.line = bytearray(lines.pop())
        for line in lines:
            if line.startswith(b"data:"):
                if self.count == 0:
                    self.first = time.perf_counter() - self.started
                self.count += 1
                self.last = bytes(line)

    def _finish(self) -> None:
        s = self.stats
        elapsed = time.perf_counter() - self.started
        if self.stream:
            good = (self.status == 200 and self.count >= self.want_events
                    and b"completed" in self.last.lower() and b'"error"' not in self.last)
            why = f"HTTP {self.status}, {self.count} events, last {self.last[-300:]!r}"
        else:
            good = (self.status == 200 and self.expect in self.body
                    and b'"error"' not in self.body)
            why = f"HTTP {self.status}: {bytes(self.body[:300])!r}"
        if not good:
            s.fail(why)
        elif s.counting and not s.stopping:
            s.ok += 1
            s.latencies.append(elapsed)
            if self.stream:
                s.events += self.count
                s.first_event.append(self.first)
        self.send()

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        while buf:
            if self.state == _HEAD:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = bytes(buf[:end]).lower()
                del buf[:end + 4]
                self.status = int(head[9:12])
                self.remaining = -1
                chunked = False
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name == b"content-length":
                        self.remaining = int(value)
                    elif name == b"transfer-encoding" and b"chunked" in value:
                        chunked = True
                if chunked:
                    self.state = _SIZE
                elif self.remaining >= 0:
                    self.state = _BODY
                    if self.remaining == 0:
                        self._finish()
                else:
                    self.stats.fail("an answer without length or chunks")
                    assert self.transport is not None
                    self.transport.close()
                    return
            elif self.state in (_BODY, _CHUNK):
                take = min(len(buf), self.remaining)
                self._on_body(buf[:take])
                del buf[:take]
                self.remaining -= take
                if self.remaining == 0:
                    if self.state == _BODY:
                        self._finish()
                    else:
                        self.state = _CRLF
            elif self.state == _SIZE:
                end = buf.find(b"\r\n")
                if end < 0:
                    return
                size = int(bytes(buf[:end]).split(b";")[0], 16)
                del buf[:end + 2]
                self.remaining = size
                self.state = _CHUNK if size else _TRAILER
            elif self.state == _CRLF:
                if len(buf) < 2:
                    return
                del buf[:2]
                self.state = _SIZE
            else:  # _TRAILER
                end = buf.find(b"\r\n")
                if end < 0:
                    return
                empty = end == 0
                del buf[:end + 2]
                if empty:
                    self._finish()


def _requests(spec: dict[str, Any]) -> list[bytes]:
    return [_request(spec, body) for body in spec.get("bodies") or [spec["body"]]]


def _request(spec: dict[str, Any], text: str) -> bytes:
    body = text.encode()
    head = [f"POST {spec['path']} HTTP/1.1", f"Host: 127.0.0.1:{spec['port']}",
            f"Content-Length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in spec["headers"].items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return math.nan
    return sorted_values[max(1, math.ceil(q / 100 * len(sorted_values))) - 1]


def _cpu(watch: dict[str, int]) -> dict[str, float]:
    return {name: tree_cpu_seconds(pid) for name, pid in watch.items()}


async def run(spec: dict[str, Any]) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    stats = Stats(spec)
    requests = _requests(spec)
    dones: list[asyncio.Future[None]] = []
    for i in range(int(spec["connections"])):
        done: asyncio.Future[None] = loop.create_future()
        dones.append(done)
        await loop.create_connection(
            lambda d=done, i=i: Conn(stats, requests, i, d),  # type: ignore[misc]
            "127.0.0.1", int(spec["port"]))
    await asyncio.sleep(float(spec["warmup"]))
    warm_errors, warm_sample = stats.error_sample is not None, stats.error_sample
    before, began = _cpu(spec["watch"]), time.perf_counter()
    stats.counting = True
    end = began + float(spec["duration"])
    while time.perf_counter() < end and stats.ok + stats.errors < stats.limit \
            and not all(d.done() for d in dones):
        await asyncio.sleep(0.05)
    wall = time.perf_counter() - began
    after = _cpu(spec["watch"])
    stats.stopping = True
    await asyncio.wait(dones, timeout=5.0)
    lat, first = sorted(stats.latencies), sorted(stats.first_event)
    out: dict[str, Any] = {
        "ok": stats.ok, "errors": stats.errors, "wall_s": round(wall, 4),
        "error_sample": stats.error_sample if not warm_errors or stats.errors
        else f"(warm-up) {warm_sample}",
        "warmup_errors": warm_errors,
        "rps": stats.ok / wall if wall > 0 else 0.0,
        "p50_ms": percentile(lat, 50) * 1000, "p90_ms": percentile(lat, 90) * 1000,
        "p99_ms": percentile(lat, 99) * 1000,
        "cpu_s": {name: after[name] - before[name] for name in after},
    }
    if spec["kind"] == "stream":
        out["events"] = stats.events
        out["events_per_s"] = stats.events / wall if wall > 0 else 0.0
        out["first_event_p50_ms"] = percentile(first, 50) * 1000
        out["first_event_p90_ms"] = percentile(first, 90) * 1000
    return out


def main() -> int:
    spec = json.loads(sys.argv[1])
    try:
        import uvloop
    except ImportError:
        result = asyncio.run(run(spec))
        result["client_loop"] = "asyncio"
    else:
        result = uvloop.run(run(spec))
        result["client_loop"] = "uvloop"
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
