"""What the relay worker keeps per destination (a receiver's scheme, host and port), in
this process's memory (docs/push-relay.md, "Destinations"):

- :class:`Slots`, the concurrency cap: at most ``push_relay.queue.per_destination``
  deliveries in flight to one destination; the others wait for a slot, no attempt spent;
- :class:`Breakers`, the circuit breaker: after ``breaker.failures`` retryable failures
  in a row a destination's circuit opens for ``breaker.cool_down`` seconds (its due
  deliveries are put off until then, no attempt spent), then one probe goes (half-open):
  its success closes the circuit, its failure opens it again.

Each process (worker, replica) keeps its own: a receiver that is down is found out by
each within ``failures`` attempts, and what one process postpones stays in the shared
queue for any other — a breaker only saves attempts, it never decides a delivery's fate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def destination(url: str) -> str:
    """``scheme://host:port`` of a webhook URL (the default port spelled out), so one
    receiver's deliveries share one slot count and one circuit whatever their path."""
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
        host = parts.hostname or ""
    except ValueError:
        return "<unparseable>"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}:{port}"


class Slots:
    """The per-destination cap. Only destinations with a delivery in flight or waiting
    have an entry."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._held: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}

    @asynccontextmanager
    async def hold(self, dest: str, patience: float) -> AsyncIterator[bool]:
        """Hold one of ``dest``'s slots; yields False (holding none) when none came free
        within ``patience`` seconds."""
        entry = self._held.setdefault(dest, (asyncio.Semaphore(self.cap), [0]))
        sem, users = entry
        users[0] += 1
        got = False
        try:
            try:
                async with asyncio.timeout(patience):
                    await sem.acquire()
                got = True
            except TimeoutError:
                pass
            yield got
        finally:
            if got:
                sem.release()
            users[0] -= 1
            if users[0] == 0:
                del self._held[dest]


# What an attempt tells the breaker: the receiver answered (success, or a refusal that
# says it is up), failed in a way worth retrying, or told nothing (the SSRF guard).
Verdict = Literal["up", "down", "unknown"]
# A change of a circuit's state, for the log and the metric.
Transition = Literal["opened", "reopened", "closed"]


@dataclass
class _Circuit:
    failures: int = 0
    open_until: float | None = None  # None: closed
    probe_until: float = 0.0  # a probe is out until then (half-open)
    seen: float = 0.0  # when a delivery to it last went or was put off


class Breakers:
    """The per-destination circuit breakers; ``clock`` is monotonic seconds. Only
    destinations with a failure since their last success have an entry, and only while
    deliveries to them come (:meth:`open_count` forgets the others)."""

    def __init__(self, failures: int, cool_down: float, probe_wait: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.failures = failures  # 0: never opens
        self.cool_down = cool_down
        # How long a probe may take (an attempt's timeout): until then no second probe.
        self.probe_wait = probe_wait
        self.clock = clock
        self._circuits: dict[str, _Circuit] = {}

    def admit(self, dest: str) -> float:
        """0 when a delivery to ``dest`` may go now (when the circuit is half-open, it
        is the probe); else the seconds to put it off by."""
        circuit = self._circuits.get(dest)
        if circuit is None or circuit.open_until is None:
            return 0.0
        now = circuit.seen = self.clock()
        if now < circuit.open_until:
            return circuit.open_until - now
        if now < circuit.probe_until:
            return circuit.probe_until - now  # the probe's answer decides
        circuit.probe_until = now + self.probe_wait
        return 0.0

    def record(self, dest: str, verdict: Verdict) -> Transition | None:
        """What an admitted attempt came to; the circuit's change, if any."""
        circuit = self._circuits.get(dest)
        if verdict == "up":
            if circuit is None:
                return None
            del self._circuits[dest]
            return "closed" if circuit.open_until is not None else None
        if verdict == "unknown" or self.failures == 0:
            if circuit is not None:
                circuit.probe_until = 0.0  # no answer to go by: the next attempt probes
            return None
        if circuit is None:
            circuit = self._circuits[dest] = _Circuit()
        circuit.failures += 1
        now = circuit.seen = self.clock()
        if circuit.open_until is None:
            if circuit.failures < self.failures:
                return None
            circuit.open_until = now + self.cool_down
            return "opened"
        if now < circuit.open_until:
            return None  # an attempt admitted before the circuit opened
        circuit.open_until, circuit.probe_until = now + self.cool_down, 0.0
        return "reopened"  # the probe failed

    def open_count(self) -> int:
        """Destinations whose circuit is open or half-open. A circuit no delivery came to
        for two cool-downs is forgotten: deliveries put off come back after one, so none
        is waiting for it (a receiver still down is found out again)."""
        now = self.clock()
        idle = 2 * self.cool_down + self.probe_wait
        for dest in [d for d, c in self._circuits.items() if now - c.seen > idle]:
            del self._circuits[dest]
        return sum(c.open_until is not None for c in self._circuits.values())

    def state(self, dest: str) -> str:
        circuit = self._circuits.get(dest)
        if circuit is None or circuit.open_until is None:
            return "closed"
        return "open" if self.clock() < circuit.open_until else "half-open"
