"""Load clients of the idle-streams benchmark (bench/idle_streams.py), and its unary probe.

    python -m bench.idle_clients '<spec JSON>'

Spec: `kind` (`grpc`: v1.0 `lf.a2a.v1.A2AService/SendStreamingMessage` calls, up to
`per_channel` of them on one HTTP/2 connection; `sse`: v1.0 JSON-RPC
`SendStreamingMessage` calls, one HTTP/1.1 connection each), `target` (host:port for
gRPC, the JSON-RPC URL for SSE), `count` (streams), `opening` (streams being opened at
once), `first_timeout` (seconds a stream may take to bring its first event) and
`hold_max` (seconds the streams are held at most, whatever the driver says).

The driver talks to the process over its stdin and stdout, one JSON line per step:
the process prints `{"step": "ready"}`; on the line `open` it opens every stream, waits
for each one's first event and prints `{"step": "open", ...}` (how many opened, how
many failed and the first failure); on the line `close` (or at end of input, or after
`hold_max`) it closes them and prints `{"step": "closed", ...}`, `dropped` being the
streams that ended before they were closed. Streams are idle once open: nothing is
read or written on them but their end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import grpc
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc as pb_grpc

V10_METADATA = (("a2a-version", "1.0"),)
V10_HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


def send_request(tag: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(
        message_id=f"idle-{tag}", role=pb.ROLE_USER, parts=[pb.Part(text="idle")]))


def jsonrpc_body(method: str, tag: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": tag, "method": method, "params": {"message": {
        "messageId": f"idle-{tag}", "role": "ROLE_USER", "parts": [{"text": "idle"}]}}}).encode()


def grpc_channel(target: str) -> grpc.aio.Channel:
    # A channel of its own: channels with the same arguments would share one connection.
    return grpc.aio.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])


@dataclass
class Tally:
    opened: int = 0
    failed: int = 0
    dropped: int = 0
    sample: str | None = None
    closing: bool = False
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def fail(self, why: str) -> None:
        self.failed += 1
        self.sample = self.sample or why[:400]


# ---------------------------------------------------------------- streams, held idle


async def _grpc_stream(stub: pb_grpc.A2AServiceStub, number: int, tally: Tally,
                       opened: asyncio.Event, first_timeout: float) -> None:
    call = stub.SendStreamingMessage(send_request(f"s{number}"), metadata=V10_METADATA)
    try:
        try:
            async with asyncio.timeout(first_timeout):
                first = await call.read()
        except grpc.aio.AioRpcError as exc:
            tally.fail(f"{exc.code().name}: {exc.details()}")
            return
        except TimeoutError:
            tally.fail(f"no first event within {first_timeout:g} s")
            return
        finally:
            opened.set()
        if not isinstance(first, pb.StreamResponse) or not first.HasField("task"):
            tally.fail(f"first event not a Task: {first!r}")
            return
        tally.opened += 1
        with contextlib.suppress(grpc.aio.AioRpcError):
            await call.read()  # comes back (EOF or an error status) only if the stream ends
        if not tally.closing:
            tally.dropped += 1
    finally:
        call.cancel()


async def _sse_stream(session: aiohttp.ClientSession, url: str, number: int, tally: Tally,
                      opened: asyncio.Event, first_timeout: float) -> None:
    body = jsonrpc_body("SendStreamingMessage", f"s{number}")
    try:
        async with asyncio.timeout(first_timeout):
            resp = await session.post(url, data=body, headers={
                **V10_HEADERS, "Accept": "text/event-stream"})
            line = b""
            while resp.status == 200 and not line.startswith(b"data:"):
                line = await resp.content.readline()
                if not line:
                    break
        if resp.status != 200 or b'"task"' not in line or b'"error"' in line:
            tally.fail(f"HTTP {resp.status}: {line[:300]!r}")
            resp.close()
            return
    except (aiohttp.ClientError, OSError) as exc:
        tally.fail(repr(exc))
        return
    except TimeoutError:
        tally.fail(f"no first event within {first_timeout:g} s")
        return
    finally:
        opened.set()
    tally.opened += 1
    try:
        while await resp.content.readline():
            pass
        if not tally.closing:
            tally.dropped += 1
    except (aiohttp.ClientError, OSError):
        if not tally.closing:
            tally.dropped += 1
    finally:
        resp.close()


async def open_all(spec: dict[str, Any], tally: Tally) -> Callable[[], Awaitable[None]]:
    """Open `count` streams, at most `opening` at a time; return what closes them."""
    count, first_timeout = int(spec["count"]), float(spec["first_timeout"])
    gate = asyncio.Semaphore(int(spec["opening"]))
    closers: list[Callable[[], Awaitable[None]]] = []
    if spec["kind"] == "grpc":
        per_channel = int(spec["per_channel"])
        channels = [grpc_channel(spec["target"]) for _ in range(math.ceil(count / per_channel))]
        stubs = [pb_grpc.A2AServiceStub(c) for c in channels]  # type: ignore[no-untyped-call]

        def one(n: int, ev: asyncio.Event) -> Coroutine[Any, Any, None]:
            return _grpc_stream(stubs[n // per_channel], n, tally, ev, first_timeout)

        for channel in channels:
            closers.append(channel.close)
    else:
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, force_close=True),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30))

        def one(n: int, ev: asyncio.Event) -> Coroutine[Any, Any, None]:
            return _sse_stream(session, spec["target"], n, tally, ev, first_timeout)

        closers.append(session.close)

    async def start(n: int) -> None:
        async with gate:
            ev = asyncio.Event()
            tally.tasks.append(asyncio.create_task(one(n, ev)))
            await ev.wait()

    await asyncio.gather(*(start(n) for n in range(count)))

    async def close() -> None:
        tally.closing = True
        for task in tally.tasks:
            task.cancel()
        await asyncio.gather(*tally.tasks, return_exceptions=True)
        for closer in closers:
            await closer()

    return close


def say(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def main_async(spec: dict[str, Any]) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    hold_max = float(spec["hold_max"])
    say(step="ready")
    if (await asyncio.wait_for(reader.readline(), hold_max)).strip() != b"open":
        return
    tally = Tally()
    began = time.monotonic()
    close = await open_all(spec, tally)
    say(step="open", opened=tally.opened, failed=tally.failed, sample=tally.sample,
        seconds=round(time.monotonic() - began, 3))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(reader.readline(), hold_max)  # `close`, or end of input
    began = time.monotonic()
    await close()
    say(step="closed", dropped=tally.dropped, seconds=round(time.monotonic() - began, 3))


# ---------------------------------------------------------------- the unary probe


async def probe_latencies(kind: str, target: str, count: int, warmup: int) -> list[float]:
    """Seconds per unary SendMessage, one call in flight, over a connection of its own
    (gRPC to host:port, or JSON-RPC to a URL). A failed call raises RuntimeError."""
    latencies: list[float] = []
    try:
        if kind == "grpc":
            async with grpc_channel(target) as channel:
                stub = pb_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
                for n in range(warmup + count):
                    began = time.perf_counter()
                    reply = await stub.SendMessage(send_request(f"p{n}"),
                                                   metadata=V10_METADATA, timeout=30)
                    if not reply.HasField("message"):
                        raise RuntimeError(f"unexpected answer {reply!r}")
                    latencies.append(time.perf_counter() - began)
        else:
            timeout = aiohttp.ClientTimeout(total=30)
            async with aiohttp.ClientSession(timeout=timeout) as session:
                for n in range(warmup + count):
                    began = time.perf_counter()
                    async with session.post(target, data=jsonrpc_body("SendMessage", f"p{n}"),
                                            headers=V10_HEADERS) as resp:
                        data = await resp.read()
                    if resp.status != 200 or b'"message"' not in data or b'"error"' in data:
                        raise RuntimeError(f"HTTP {resp.status}: {data[:300]!r}")
                    latencies.append(time.perf_counter() - began)
    except (grpc.aio.AioRpcError, aiohttp.ClientError, TimeoutError) as exc:
        raise RuntimeError(f"{exc!r}"[:600]) from None
    return latencies[warmup:]


def main() -> int:
    asyncio.run(main_async(json.loads(sys.argv[1])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
