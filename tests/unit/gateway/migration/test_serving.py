"""What a config's migrations change only once that config serves (Migrations.adopt): the
share gauge, and the owners' settings it shares with the config it replaces."""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY

from gateway.config.models import parse_config
from gateway.migration.tenants import Migrations
from tests.support.migration_calls import route

PRIMARY, CANDIDATE = "http://127.0.0.1:1/", "http://127.0.0.1:2/"


def _migrations(previous: Migrations | None = None, **migration: Any) -> Migrations:
    config = parse_config({"tenants": {"gauged": {
        "backend": {"url": PRIMARY, "version": "1.0"},
        "migration": {"candidate": {"url": CANDIDATE, "version": "1.0"}, **migration}}}})
    return Migrations(config, {"gauged": route(PRIMARY)}, lambda name, c: route(str(c.url)),
                      None, previous)


def _gauge() -> float | None:
    return REGISTRY.get_sample_value("a2a_gateway_migration_canary_share",
                                     {"tenant": "gauged"})


async def test_the_share_gauge_and_the_owners_are_the_serving_configs() -> None:
    first = _migrations(mode="canary", canary={"share": 0.3}, owner_ttl=600)
    await first.adopt()
    assert _gauge() == 0.3
    # A config built and then refused (it never serves): the gauge said its share, and
    # the owners the two configs share took its owner_ttl.
    _migrations(first, mode="cutover", owner_ttl=60)
    assert _gauge() == 0.3 and first.active["gauged"].owners.ttl == 600
    # A config that turns the migration off: the gauge said the last share for good.
    off = _migrations(first, mode="off")
    await off.adopt()
    assert _gauge() == 0.0
    again = _migrations(off, mode="cutover", owner_ttl=60)
    await again.adopt()
    assert _gauge() == 1.0 and again.active["gauged"].owners.ttl == 60
    # The config it replaced reads the store on behind its last calls: not the gauge.
    first.active["gauged"].control._set(0.3)
    assert _gauge() == 1.0
