"""The stream journal's storage (gateway/state/journal.py) on both stores: dense seqs,
the same bytes keep their seq, bounds, expiry, tenants, and two processes' worth of
stores appending at once. Most tests run on SQLite and on a real Redis (make_store)."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from gateway.config.models import ConfigError, parse_config
from gateway.state import Store
from gateway.state.journal import JournalEntry, JournalLimits, JournalRead, JournalStore
from gateway.state.redis_journal import journal_keys
from gateway.state.redis_store import RedisStore
from gateway.state.sqlite_store import SqliteStore
from tests.support.waiting import wait_until

MakeStore = Callable[..., Store]
T0 = 1_700_000_000.0
TENANTS = {"t": {"backend": {"url": "http://a/", "version": "0.3"}}}


def limits(max_events: int = 1000, max_bytes: int = 1 << 20, ttl: float = 60.0,
           idle_ttl: float = 600.0) -> JournalLimits:
    return JournalLimits(max_events, max_bytes, ttl, idle_ttl)


def ev(n: int) -> bytes:
    return b'{"event":%d}' % n


def entries(*seqs: int) -> list[JournalEntry]:
    """The entries ev(seq) at their seq: what the tests below append, one ev a seq."""
    return [JournalEntry(s, ev(s)) for s in seqs]


def test_lost_after() -> None:
    empty = JournalRead([], 0, 0, False)
    assert not empty.lost_after(0) and empty.lost_after(1) and empty.lost_after(5)
    held = JournalRead([], 4, 8, False)  # 1..3 were trimmed
    assert held.lost_after(0) and held.lost_after(2)
    assert not held.lost_after(3) and not held.lost_after(5) and not held.lost_after(8)
    assert held.lost_after(9)  # a cursor past the end is not this journal's
    trimmed_away = JournalRead([], 9, 8, False)  # all held entries were dropped
    assert trimmed_away.lost_after(7) and not trimmed_away.lost_after(8)


def test_config_defaults_and_limits() -> None:
    journal = parse_config({"tenants": TENANTS}).state.journal
    assert journal.enabled and journal.hold == 300 and journal.replay_batch == 500
    assert journal.limits() == JournalLimits(10_000, 8 * 1024 * 1024, 3600.0, 86400.0)
    custom = parse_config({"tenants": TENANTS, "state": {"journal": {
        "max_events": 5, "max_bytes": 100, "ttl": 1.5, "idle_ttl": 9, "hold": 0}}})
    assert custom.state.journal.limits() == JournalLimits(5, 100, 1.5, 9.0)
    with pytest.raises(ConfigError, match=r"state\.journal\.max_events"):
        parse_config({"tenants": TENANTS, "state": {"journal": {"max_events": 0}}})


async def test_seqs_are_dense_and_the_same_bytes_keep_theirs(store: Store) -> None:
    assert isinstance(store, JournalStore)
    assert await store.journal_read("t1", "task", 0, 100) == JournalRead([], 0, 0, False)
    assert await store.journal_append("t1", "task", [ev(1), ev(2), ev(3)], False,
                                      limits()) == [1, 2, 3]
    # Known bytes get their old seq, new ones the next; a repeat within a batch too.
    assert await store.journal_append("t1", "task", [ev(2), ev(4), ev(4), ev(1)], False,
                                      limits()) == [2, 4, 4, 1]
    assert await store.journal_append("t1", "task", [ev(3)], False, limits()) == [3]
    assert await store.journal_read("t1", "task", 0, 100) == JournalRead(
        entries(1, 2, 3, 4), 1, 4, False)


async def test_read_after_a_cursor_with_a_limit(store: Store) -> None:
    await store.journal_append("t1", "task", [ev(n) for n in range(1, 11)], False, limits())
    got = await store.journal_read("t1", "task", 3, 4)
    assert got == JournalRead(entries(4, 5, 6, 7), 1, 10, False)
    assert not got.lost_after(3)
    assert await store.journal_read("t1", "task", 8, 500) == JournalRead(
        entries(9, 10), 1, 10, False)
    at_end = await store.journal_read("t1", "task", 10, 500)
    assert at_end == JournalRead([], 1, 10, False) and not at_end.lost_after(10)
    assert (await store.journal_read("t1", "task", 12, 500)).lost_after(12)


async def test_trimming_by_events(store: Store) -> None:
    bound = limits(max_events=5)
    await store.journal_append("t1", "task", [ev(n) for n in range(1, 7)], False, bound)
    await store.journal_append("t1", "task", [ev(7), ev(8)], False, bound)
    got = await store.journal_read("t1", "task", 0, 100)
    assert got == JournalRead(entries(4, 5, 6, 7, 8), 4, 8, False)
    assert got.lost_after(0) and got.lost_after(2) and not got.lost_after(3)
    # A trimmed event's bytes are no longer held: appended again, they are new.
    assert await store.journal_append("t1", "task", [ev(1)], False, bound) == [9]
    assert (await store.journal_read("t1", "task", 0, 100)).first == 5


async def test_trimming_by_bytes(store: Store) -> None:
    size = len(ev(1))  # ev(1) .. ev(9) are all this long
    bound = limits(max_bytes=3 * size)
    await store.journal_append("t1", "task", [ev(n) for n in range(1, 6)], False, bound)
    got = await store.journal_read("t1", "task", 0, 100)
    assert got == JournalRead(entries(3, 4, 5), 3, 5, False)
    assert got.lost_after(1) and not got.lost_after(2)
    # One event bigger than the bound takes the others with it and goes itself: no
    # cursor before it can continue.
    big = b"x" * (4 * size)
    assert await store.journal_append("t1", "task", [big], False, bound) == [6]
    gone = await store.journal_read("t1", "task", 0, 100)
    assert gone == JournalRead([], 7, 6, False)
    assert gone.lost_after(5) and not gone.lost_after(6)


async def test_tenants_do_not_see_each_others_journals(store: Store) -> None:
    await store.journal_append("t1", "task", [b"one"], False, limits())
    await store.journal_append("t2", "task", [b"\xff\x00two", b"one"], False, limits())
    # Ids with the separator in them: ("a:b", "c") is not ("a", "b:c").
    await store.journal_append("a:b", "c", [b"ab/c"], True, limits())
    await store.journal_append("a", "b:c", [b"a/bc"], False, limits())
    assert await store.journal_read("t1", "task", 0, 10) == JournalRead(
        [JournalEntry(1, b"one")], 1, 1, False)
    assert await store.journal_read("t2", "task", 0, 10) == JournalRead(
        [JournalEntry(1, b"\xff\x00two"), JournalEntry(2, b"one")], 1, 2, False)
    assert await store.journal_read("a:b", "c", 0, 10) == JournalRead(
        [JournalEntry(1, b"ab/c")], 1, 1, True)
    assert await store.journal_read("a", "b:c", 0, 10) == JournalRead(
        [JournalEntry(1, b"a/bc")], 1, 1, False)
    assert (await store.journal_read("t3", "task", 0, 10)).last == 0


async def test_two_stores_appending_at_once_get_distinct_dense_seqs(
        make_store: MakeStore) -> None:
    """Two workers' (or replicas') stores on one place, 40 appends in flight at once:
    every event one seq, 1..81 with none twice, and the event all of them append (a
    backend repeating itself to two streams) one seq for all."""
    one, two = make_store(), make_store()
    shared = b"shared"

    async def append(store: Store, n: int) -> tuple[list[int], list[bytes]]:
        batch = [ev(2 * n), shared, ev(2 * n + 1)]
        return await store.journal_append("t1", "task", batch, False, limits()), batch
    results = await asyncio.gather(*(append(one if n % 2 else two, n) for n in range(40)))
    written = {seq: data for seqs, batch in results for seq, data in zip(seqs, batch, strict=True)}
    assert sorted(written) == list(range(1, 82))
    assert len({seqs[1] for seqs, _ in results}) == 1  # the shared event's seq
    got = await one.journal_read("t1", "task", 0, 1000)
    assert got == JournalRead([JournalEntry(s, written[s]) for s in range(1, 82)], 1, 81,
                              False)
    assert await two.journal_read("t1", "task", 0, 1000) == got


async def test_an_expired_journal_reads_empty_and_starts_over(store: Store) -> None:
    short = limits(ttl=0.05)
    await store.journal_append("t1", "task", [ev(n) for n in range(1, 7)], True, short)
    assert (await store.journal_read("t1", "task", 0, 10)).terminal

    async def expired() -> JournalRead | None:
        got = await store.journal_read("t1", "task", 0, 10)
        return got if got.last == 0 else None
    gone = await wait_until(expired, "the terminal journal expired", timeout=5)
    assert gone == JournalRead([], 0, 0, False) and gone.lost_after(5)
    assert await store.journal_append("t1", "task", [ev(6), ev(1)], False,
                                      limits()) == [1, 2]


async def test_sqlite_expiry_by_the_stores_clock(tmp_path: Path) -> None:
    now = [T0]
    store = SqliteStore(str(tmp_path / "state.db"), clock=lambda: now[0])
    try:
        bound = limits(ttl=10, idle_ttl=100)
        await store.journal_append("t1", "task", [ev(1)], False, bound)
        await store.journal_append("t1", "other", [ev(1)], False, bound)  # idle: T0 + 100
        now[0] = T0 + 50  # within idle_ttl; the terminal append sets T0 + 60
        await store.journal_append("t1", "task", [ev(2)], True, bound)
        now[0] = T0 + 55  # a later append of a terminal task keeps ttl: T0 + 65
        await store.journal_append("t1", "task", [ev(3)], False, bound)
        now[0] = T0 + 64.9
        assert await store.journal_read("t1", "task", 0, 10) == JournalRead(
            entries(1, 2, 3), 1, 3, True)
        now[0] = T0 + 65
        gone = await store.journal_read("t1", "task", 0, 10)
        assert gone == JournalRead([], 0, 0, False) and gone.lost_after(5)
        await store.prune()  # deletes the expired journal's rows, keeps the other's
        db = sqlite3.connect(tmp_path / "state.db")
        try:
            assert db.execute("SELECT task_id, seq FROM journal").fetchall() == [("other", 1)]
            assert db.execute("SELECT task_id FROM journal_heads").fetchall() == [("other",)]
        finally:
            db.close()
        now[0] = T0 + 100
        assert (await store.journal_read("t1", "other", 0, 10)).last == 0
    finally:
        await store.close()


async def test_redis_keys_expire_with_the_journal(redis_url: str) -> None:
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    store = RedisStore(redis_url, prefix)
    client = aioredis.Redis.from_url(redis_url)
    try:
        keys = journal_keys(prefix, "t1", "task")
        bound = limits(ttl=10, idle_ttl=100)

        async def ttls() -> list[int]:  # ms left of each of the task's keys
            return [await client.pttl(k) for k in keys]
        await store.journal_append("t1", "task", [ev(1), ev(2)], False, bound)
        assert all(90_000 < ms <= 100_000 for ms in await ttls()), await ttls()
        await store.journal_append("t1", "task", [ev(3)], True, bound)
        assert all(0 < ms <= 10_000 for ms in await ttls()), await ttls()
        await store.journal_append("t1", "task", [ev(4)], False, bound)  # still terminal
        assert all(0 < ms <= 10_000 for ms in await ttls()), await ttls()
        assert (await store.journal_read("t1", "task", 0, 10)).last == 4
    finally:
        await client.aclose()
        await store.close()
