"""The push relay's retry schedule (gateway/relay/delivery.py) and its config bounds."""

from __future__ import annotations

import email.utils
import time

import pytest

from gateway.config.models import ConfigError, PushRelayConfig, parse_config
from gateway.relay.delivery import backoff, retry_after


def settings(**queue: float) -> PushRelayConfig:
    return PushRelayConfig(backoff=5, queue={"max_backoff": 60, **queue})


def test_backoff_doubles_up_to_the_cap_within_the_jitter() -> None:
    s = settings(jitter=0.2)
    for attempts, base in ((1, 5), (2, 10), (3, 20), (4, 40), (5, 60), (9, 60)):
        delays = [backoff(s, attempts, None) for _ in range(50)]
        assert all(base * 0.8 <= d <= base * 1.2 for d in delays), (attempts, delays)
    assert len({backoff(s, 1, None) for _ in range(20)}) > 1  # jittered


def test_backoff_without_jitter_and_retry_after() -> None:
    s = settings(jitter=0)
    assert [backoff(s, n, None) for n in (1, 2, 3)] == [5, 10, 20]
    assert backoff(s, 1, 7.0) == 7.0  # the receiver's delay, not jittered
    assert backoff(s, 1, 3600.0) == 60  # capped at max_backoff


def test_retry_after_seconds_or_a_date() -> None:
    assert retry_after("120") == 120.0
    assert retry_after(None) is None and retry_after("soon") is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    got = retry_after(later)
    assert got is not None and 25 <= got <= 31
    assert retry_after(email.utils.formatdate(0, usegmt=True)) == 0.0  # in the past


def test_a_lease_shorter_than_an_attempt_is_refused_naming_both_paths() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"tenants": {"t": {"backend": {"url": "http://127.0.0.1:1/",
                                                    "version": "0.3"}}},
                      "push_relay": {"timeout": 30, "queue": {"lease": 10}}})
    text = str(err.value)
    assert "push_relay.queue.lease (10 s) must exceed push_relay.timeout (30 s)" in text
    assert len(text.splitlines()) == 1
