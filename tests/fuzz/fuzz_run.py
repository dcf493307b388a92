"""Running examples against a live gateway: budgets, the client side, the log watch.

The gateway, the stubs and the clients live on the test's event loop; hypothesis runs in
a worker thread (`FuzzTarget.run`) and hands each call to the loop, so the servers keep
serving between examples and every call is bounded by CALL_TIMEOUT.

Budgets: A2A_FUZZ_BUDGET=small (default; part of `make test`), medium or long
(`make fuzz`); A2A_FUZZ_EXAMPLES=N overrides the examples per ingress. With
A2A_FUZZ_COLLECT=file.jsonl, violations are appended to the file instead of failing the
test, so one run can list every distinct failure.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
import grpc
import structlog
from hypothesis import HealthCheck, example, settings
from multidict import CIMultiDict
from structlog.testing import capture_logs
from yarl import URL

from tests.fuzz.fuzz_checks import FAULT_REASONS, Findings, GrpcReply
from tests.fuzz.fuzz_checks_http import HttpReply, parse_sse
from tests.fuzz.fuzz_documents import GrpcMethod
from tests.fuzz.fuzz_stubs import Stub
from tests.fuzz.fuzz_values import Raw

T = TypeVar("T")
CALL_TIMEOUT = 5.0
BUDGETS = {"small": {"jsonrpc": 300, "rest": 300, "grpc": 200, "enums": 120},
           "medium": {"jsonrpc": 3000, "rest": 3000, "grpc": 2000, "enums": 1500},
           "long": {"jsonrpc": 20000, "rest": 10000, "grpc": 5000, "enums": 5000}}
BUDGET = os.environ.get("A2A_FUZZ_BUDGET", "small")
COLLECT = os.environ.get("A2A_FUZZ_COLLECT")
VERBOSE = os.environ.get("A2A_FUZZ_VERBOSE") == "1"


def fuzz_settings(ingress: str, share: float) -> settings:
    """Settings for one test that spends ``share`` of the ingress' budget."""
    total = int(os.environ.get("A2A_FUZZ_EXAMPLES") or BUDGETS[BUDGET][ingress])
    small = BUDGET == "small" and not os.environ.get("A2A_FUZZ_EXAMPLES")
    extra: dict[str, Any] = {"database": None} if small else {}
    return settings(max_examples=max(1, round(total * share)), deadline=None,
                    derandomize=small, print_blob=not small,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much,
                                           HealthCheck.large_base_example], **extra)


# ---------------------------------------------------------------- requests


def _short(data: bytes | str) -> str:
    text = data.decode("utf-8", "backslashreplace") if isinstance(data, bytes) else data
    return repr(Raw(text))[4:-1]


@dataclass(frozen=True)
class HttpRequest:
    verb: str
    target: str  # path and query, percent-encoded as sent
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def __repr__(self) -> str:
        headers = ", ".join(f"{k}: {_short(v)}" for k, v in self.headers)
        return (f"{self.verb} {_short(self.target)} [{headers}] body "
                f"({len(self.body)} bytes) {_short(self.body)}")


@dataclass(frozen=True)
class GrpcRequest:
    method: GrpcMethod
    payload: bytes
    metadata: tuple[tuple[str, str], ...]

    def __repr__(self) -> str:
        return (f"gRPC {self.method.path} metadata {list(self.metadata)!r:.300} payload "
                f"({len(self.payload)} bytes) {self.payload[:300]!r}")


def seeded(cases: tuple[Any, ...]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Run these requests first, every time (hypothesis explicit examples): the inputs
    known to have broken a property, so that `make test` keeps checking them."""
    def decorate(test: Callable[..., None]) -> Callable[..., None]:
        for case in reversed(cases):
            test = example(req=case)(test)
        return test
    return decorate


# ---------------------------------------------------------------- the log watch


def _structlog_problem(entry: Mapping[str, Any]) -> str | None:
    text = repr(dict(entry))
    if entry.get("exc_info") or entry.get("log_level") in ("error", "critical", "exception") \
            or "Traceback" in text or entry.get("outcome") in FAULT_REASONS:
        return text
    return None


class LogWatch(logging.Handler):
    """Problems in the gateway's logs: structlog entries with a traceback, an error level
    or a fault outcome, and stdlib records at ERROR (aiohttp's "Error handling request",
    grpc's unexpected handler errors, asyncio's unretrieved task exceptions)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.records: list[str] = []
        self.entries: list[MutableMapping[str, Any]] = []
        self._seen = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))

    @contextmanager
    def watching(self) -> Iterator[LogWatch]:
        root = logging.getLogger()
        root.addHandler(self)
        try:
            with capture_logs() as entries:
                self.entries = entries
                yield self
        finally:
            root.removeHandler(self)

    def drain(self) -> list[str]:
        new, self._seen = self.entries[self._seen:], len(self.entries)
        problems = [p for p in map(_structlog_problem, new) if p]
        problems += self.records
        self.records = []
        return problems


# ---------------------------------------------------------------- the target


@dataclass
class FuzzTarget:
    loop: asyncio.AbstractEventLoop
    http_base: str
    session: aiohttp.ClientSession
    channel: grpc.aio.Channel
    stubs: list[Stub]
    logs: LogWatch
    outcomes: Counter[str] = field(default_factory=Counter)

    def _on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(CALL_TIMEOUT * 4)

    async def run(self, prop: Callable[[], None]) -> None:
        """Run a hypothesis test (no arguments left) off the loop; print what the answers
        were (shown by `pytest -rP`)."""
        self.outcomes.clear()
        try:
            await asyncio.to_thread(prop)
        finally:
            total = sum(self.outcomes.values())
            print(f"{total} calls:")
            for label, count in sorted(self.outcomes.items(), key=lambda kv: -kv[1]):
                print(f"  {count:6d}  {label}")

    def http(self, req: HttpRequest) -> HttpReply | str:
        """The answer, or why there was none."""
        return self._on_loop(self._http(req))

    async def _http(self, req: HttpRequest) -> HttpReply | str:
        url = URL(self.http_base + req.target, encoded=True)
        skip = () if any(k.lower() == "content-type" for k, _ in req.headers) else (
            "Content-Type",)
        try:
            async with self.session.request(
                    req.verb, url, data=req.body, headers=CIMultiDict(req.headers),
                    skip_auto_headers=skip, allow_redirects=False,
                    timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT)) as resp:
                body = await resp.read()
                events = parse_sse(body) if resp.content_type == "text/event-stream" else None
                return HttpReply(resp.status, CIMultiDict(resp.headers), body, events)
        except TimeoutError:
            return f"no answer within {CALL_TIMEOUT} s"
        except aiohttp.ClientError as exc:
            return f"connection failed: {exc!r}"

    def grpc(self, req: GrpcRequest) -> GrpcReply | str:
        return self._on_loop(self._grpc(req))

    async def _grpc(self, req: GrpcRequest) -> GrpcReply | str:
        method = req.method
        try:
            if method.streaming:
                stream = self.channel.unary_stream(method.path)(
                    req.payload, metadata=req.metadata, timeout=CALL_TIMEOUT)
                messages = [m async for m in stream]
                call: Any = stream
            else:
                call = self.channel.unary_unary(method.path)(
                    req.payload, metadata=req.metadata, timeout=CALL_TIMEOUT)
                messages = [await call]
            return GrpcReply(await call.code(), await call.details() or "",
                             tuple(await call.trailing_metadata() or ()), messages)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED and not err.trailing_metadata():
                return f"no answer within {CALL_TIMEOUT} s"
            return GrpcReply(err.code(), err.details() or "",
                             tuple(err.trailing_metadata() or ()), [])

    def finish(self, f: Findings, case: Any, reply: HttpReply | GrpcReply | str) -> None:
        """Add what the logs and the stubs saw, then fail (or record) the example."""
        self.outcomes[outcome(reply)] += 1
        for problem in self.logs.drain():
            f.add("log-problem", problem)
        for stub in self.stubs:
            for complaint in stub.drain():
                f.add("backend-complaint", f"v{stub.version} backend: {complaint}")
        if COLLECT and f.items:
            with open(COLLECT, "a", encoding="utf-8") as out:
                out.write(json.dumps({"case": repr(case), "findings": f.items}) + "\n")
            return
        f.verdict(case)


def outcome(reply: HttpReply | GrpcReply | str) -> str:
    """A short label of an answer, for the run's summary (with A2A_FUZZ_VERBOSE=1, the
    start of the error message too)."""
    label = _label(reply)
    if VERBOSE and not isinstance(reply, str):
        text = reply.details if isinstance(reply, GrpcReply) else reply.body[:300].decode(
            "utf-8", "replace")
        message = re.search(r'"message": ?"([^"]{0,60})', text) if isinstance(
            reply, HttpReply) else None
        label += " | " + re.sub(r"\d+", "N", message[1] if message else text[:60])
    return label


def _label(reply: HttpReply | GrpcReply | str) -> str:
    if isinstance(reply, str):
        return "no answer"
    if isinstance(reply, GrpcReply):
        return f"gRPC {reply.code.name}"
    if reply.events is not None:
        return f"HTTP {reply.status} stream of {min(len(reply.events), 5)}+ events"
    try:
        body = json.loads(reply.body)
    except (ValueError, RecursionError):
        return f"HTTP {reply.status} not JSON"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return f"HTTP {reply.status} error {body['error'].get('code')}"
    if isinstance(body, dict) and "result" in body:
        return f"HTTP {reply.status} result"
    return f"HTTP {reply.status}"


def structlog_is_capturable() -> bool:
    """capture_logs cannot see loggers cached on first use (a configure_logging call)."""
    return not structlog.get_config().get("cache_logger_on_first_use", False)
