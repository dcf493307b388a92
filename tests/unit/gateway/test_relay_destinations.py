"""What the relay worker keeps per destination (gateway/relay/destinations.py): the
circuit breaker's states on a clock the test moves, the concurrency cap on a loop whose
clock jumps (tests/support/fake_time.py), and their config's one-line errors."""

from __future__ import annotations

import asyncio

import pytest

from gateway.config.models import ConfigError, parse_config
from gateway.relay.destinations import Breakers, Slots, destination
from tests.support.fake_time import run_in_fake_time

HOOKS = "https://hooks.example:443"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def breakers(clock: Clock, failures: int = 3) -> Breakers:
    return Breakers(failures=failures, cool_down=30, probe_wait=10, clock=clock)


def test_a_destination_is_scheme_host_and_port_whatever_the_path() -> None:
    assert destination("https://hooks.example/a?x=1") == HOOKS
    assert destination("https://user:pw@hooks.example:443/b") == HOOKS
    assert destination("http://127.0.0.1:8080/c") == "http://127.0.0.1:8080"
    assert destination("http://[::1]/d") == "http://[::1]:80"
    assert destination("http://[::1/") == "<unparseable>"


def test_the_circuit_opens_after_failures_in_a_row_and_puts_deliveries_off() -> None:
    clock = Clock()
    b = breakers(clock)
    assert b.admit(HOOKS) == 0
    assert b.record(HOOKS, "down") is None and b.record(HOOKS, "down") is None
    assert b.record(HOOKS, "up") is None  # a success in between: counting starts again
    assert [b.record(HOOKS, "down") for _ in range(3)] == [None, None, "opened"]
    assert b.state(HOOKS) == "open" and b.open_count() == 1
    clock.now += 12
    assert b.admit(HOOKS) == 18  # put off to the cool-down's end
    assert b.admit("https://other.example:443") == 0  # other destinations go on
    # An attempt admitted before it opened fails meanwhile: no change.
    assert b.record(HOOKS, "down") is None and b.admit(HOOKS) == 18


def test_half_open_lets_one_probe_go_whose_success_closes_it() -> None:
    clock = Clock()
    b = breakers(clock, failures=1)
    assert b.record(HOOKS, "down") == "opened"
    clock.now += 30
    assert b.state(HOOKS) == "half-open"
    assert b.admit(HOOKS) == 0  # the probe
    assert b.admit(HOOKS) == 10  # the others wait for its answer (at most probe_wait)
    clock.now += 4
    assert b.admit(HOOKS) == 6
    assert b.record(HOOKS, "up") == "closed"
    assert b.state(HOOKS) == "closed" and b.open_count() == 0 and b.admit(HOOKS) == 0


def test_a_failed_probe_opens_it_again_for_a_whole_cool_down() -> None:
    clock = Clock()
    b = breakers(clock, failures=1)
    b.record(HOOKS, "down")
    clock.now += 31
    assert b.admit(HOOKS) == 0
    assert b.record(HOOKS, "down") == "reopened"
    assert b.admit(HOOKS) == 30 and b.open_count() == 1


def test_a_probe_that_never_answers_or_tells_nothing_lets_another_go() -> None:
    clock = Clock()
    b = breakers(clock, failures=1)
    b.record(HOOKS, "down")
    clock.now += 30
    assert b.admit(HOOKS) == 0
    clock.now += 10  # probe_wait over, no answer recorded (the process lost it)
    assert b.admit(HOOKS) == 0
    assert b.record(HOOKS, "unknown") is None  # the SSRF guard refused: no verdict
    assert b.admit(HOOKS) == 0 and b.state(HOOKS) == "half-open"


def test_no_breaker_with_zero_failures_and_idle_circuits_are_forgotten() -> None:
    clock = Clock()
    off = breakers(clock, failures=0)
    assert all(off.record(HOOKS, "down") is None for _ in range(50))
    assert off.admit(HOOKS) == 0 and off.open_count() == 0
    b = breakers(clock, failures=2)
    b.record(HOOKS, "down")
    b.record(HOOKS, "down")
    b.record("http://once.example:80", "down")
    clock.now += 2 * 30 + 10 + 1  # nothing came for either since
    assert b.open_count() == 0 and b.state(HOOKS) == "closed"
    assert b.record(HOOKS, "down") is None  # counting starts again


def test_slots_cap_deliveries_per_destination_and_time_out_waiting() -> None:
    async def main() -> None:
        slots = Slots(2)
        in_flight = {"a": 0, "b": 0}
        peak = {"a": 0, "b": 0}
        loop = asyncio.get_running_loop()

        async def deliver(dest: str) -> tuple[bool, float]:
            start = loop.time()
            async with slots.hold(dest, patience=25) as held:
                if held:
                    in_flight[dest] += 1
                    peak[dest] = max(peak[dest], in_flight[dest])
                    await asyncio.sleep(10)
                    in_flight[dest] -= 1
            return held, loop.time() - start

        got = await asyncio.gather(*(deliver("a") for _ in range(7)), deliver("b"))
        assert peak == {"a": 2, "b": 1}
        # a: two at once, 10 s each: slots come free at 10 s and 20 s; the seventh's
        # would at 30 s, past its patience; b never waited.
        assert sorted(got[:7]) == [(False, 25), (True, 10), (True, 10), (True, 20),
                                   (True, 20), (True, 30), (True, 30)]
        assert got[7] == (True, 10)
        assert slots._held == {}  # no entry left for a destination nothing waits for

    run_in_fake_time(main())


@pytest.mark.parametrize(("queue", "path"), [
    ({"per_destination": 0}, "push_relay.queue.per_destination"),
    ({"breaker": {"failures": -1}}, "push_relay.queue.breaker.failures"),
    ({"breaker": {"cool_down": 0}}, "push_relay.queue.breaker.cool_down"),
    ({"breaker": {"probes": 2}}, "push_relay.queue.breaker.probes"),
])
def test_bad_destination_limits_are_one_line_naming_the_path(
        queue: dict[str, object], path: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"tenants": {"t": {"backend": {"url": "http://127.0.0.1:1/",
                                                    "version": "0.3"}}},
                      "push_relay": {"queue": queue}})
    text = str(err.value)
    assert path in text and len(text.splitlines()) == 1, text
