"""The stream journal's storage (gateway/state/journal.py) on both stores: dense seqs,
a writer's events matched to the entries after its position, bounds, expiry, tenants,
and two processes' worth of stores appending at once. Most tests run on SQLite and on a real Redis (make_store)."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from gateway.config.models import ConfigError, parse_config
from gateway.observability.metrics import JOURNAL_BYTES, JOURNAL_EVENTS
from gateway.state import Store
from gateway.state.journal import (
    JournalEntry,
    JournalLimits,
    JournalRead,
    JournalSize,
    JournalStore,
    limits_of,
)
from gateway.state.redis_journal import journal_keys
from gateway.state.redis_store import RedisStore
from gateway.state.retention import sample_journal
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
    assert not journal.enabled and journal.hold == 60 and journal.replay_batch == 500
    assert limits_of(journal) == JournalLimits(10_000, 8 * 1024 * 1024, 3600.0, 86400.0)
    custom = parse_config({"tenants": TENANTS, "state": {"journal": {
        "max_events": 5, "max_bytes": 100, "ttl": 1.5, "idle_ttl": 9, "hold": 0}}})
    assert limits_of(custom.state.journal) == JournalLimits(5, 100, 1.5, 9.0)
    with pytest.raises(ConfigError, match=r"state\.journal\.max_events"):
        parse_config({"tenants": TENANTS, "state": {"journal": {"max_events": 0}}})


async def test_seqs_are_dense_and_equal_bytes_are_new_events(store: Store) -> None:
    assert isinstance(store, JournalStore)
    assert await store.journal_read("t1", "task", 0, 100) == JournalRead([], 0, 0, False)
    assert await store.journal_append("t1", "task", [ev(1), ev(2), ev(3)], False,
                                      limits(), None) == [1, 2, 3]
    # The writer at its last event: the same bytes again are new events, in a batch too.
    assert await store.journal_append("t1", "task", [ev(3), ev(4), ev(4)], False,
                                      limits(), 3) == [4, 5, 6]
    assert await store.journal_append("t1", "task", [ev(4)], False, limits(), 6) == [7]
    got = await store.journal_read("t1", "task", 0, 100)
    assert [(e.seq, e.data) for e in got.entries] == [
        (1, ev(1)), (2, ev(2)), (3, ev(3)), (4, ev(3)), (5, ev(4)), (6, ev(4)), (7, ev(4))]
    assert (got.first, got.last, got.terminal) == (1, 7, False)


async def test_a_writer_behind_matches_the_entries_after_its_position(store: Store) -> None:
    status = b'{"status":"working"}'  # sent twice: entries 5 and 6
    first = [ev(1), ev(2), ev(3), ev(4), status, status, ev(7)]
    assert await store.journal_append("t1", "task", first, False, limits(), 0) == list(
        range(1, 8))
    # A second stream of the task resumed after 3 reads the same events from there on:
    # each is the first entry after its position (6 is the second status, not 5 again),
    # and where the first writer has not been yet, it appends.
    assert await store.journal_append("t1", "task", [ev(4), status, status], False,
                                      limits(), 3) == [4, 5, 6]
    assert await store.journal_append("t1", "task", [ev(7), ev(8)], False,
                                      limits(), 6) == [7, 8]
    # Bytes equal only to entries at or before the position are a new event.
    assert await store.journal_append("t1", "task", [ev(2)], False, limits(), 5) == [9]
    # An event that matches nothing after the position is appended, and the writer is at
    # the end from there: its next event does not match an entry before that.
    assert await store.journal_append("t1", "task", [b"other", status], False,
                                      limits(), 4) == [10, 11]
    got = await store.journal_read("t1", "task", 0, 100)
    assert [e.data for e in got.entries] == [*first, ev(8), ev(2), b"other", status]


async def test_no_position_matches_nothing_journaled_before(store: Store) -> None:
    await store.journal_append("t1", "task", [ev(1), ev(2)], False, limits(), None)
    # A stream that starts now: the journal's events before it are not its own.
    assert await store.journal_append("t1", "task", [ev(1), ev(2)], False, limits(),
                                      None) == [3, 4]
    # Within the call its position moves: a second writer's copy of this batch matches.
    assert await store.journal_append("t1", "task", [ev(1), ev(1)], False, limits(),
                                      None) == [5, 6]
    assert await store.journal_append("t1", "task", [ev(1), ev(1)], False, limits(),
                                      4) == [5, 6]
    assert (await store.journal_read("t1", "task", 0, 100)).last == 6


async def test_read_after_a_cursor_with_a_limit(store: Store) -> None:
    await store.journal_append("t1", "task", [ev(n) for n in range(1, 11)], False, limits(),
                               None)
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
    await store.journal_append("t1", "task", [ev(n) for n in range(1, 7)], False, bound, None)
    await store.journal_append("t1", "task", [ev(7), ev(8)], False, bound, 6)
    got = await store.journal_read("t1", "task", 0, 100)
    assert got == JournalRead(entries(4, 5, 6, 7, 8), 4, 8, False)
    assert got.lost_after(0) and got.lost_after(2) and not got.lost_after(3)
    # A trimmed entry is gone for a writer behind it too: its bytes are a new event
    # (its digest went with it), while held ones after the position still match.
    assert await store.journal_append("t1", "task", [ev(1)], False, bound, 0) == [9]
    assert await store.journal_append("t1", "task", [ev(6), ev(7)], False, bound,
                                      2) == [6, 7]
    assert (await store.journal_read("t1", "task", 0, 100)).first == 5


async def test_trimming_by_bytes(store: Store) -> None:
    size = len(ev(1))  # ev(1) .. ev(9) are all this long
    bound = limits(max_bytes=3 * size)
    await store.journal_append("t1", "task", [ev(n) for n in range(1, 6)], False, bound, None)
    got = await store.journal_read("t1", "task", 0, 100)
    assert got == JournalRead(entries(3, 4, 5), 3, 5, False)
    assert got.lost_after(1) and not got.lost_after(2)
    # One event bigger than the bound takes the others with it and goes itself: no
    # cursor before it can continue.
    big = b"x" * (4 * size)
    assert await store.journal_append("t1", "task", [big], False, bound, 5) == [6]
    gone = await store.journal_read("t1", "task", 0, 100)
    assert gone == JournalRead([], 7, 6, False)
    assert gone.lost_after(5) and not gone.lost_after(6)


async def test_tenants_do_not_see_each_others_journals(store: Store) -> None:
    await store.journal_append("t1", "task", [b"one"], False, limits(), None)
    await store.journal_append("t2", "task", [b"\xff\x00two", b"one"], False, limits(),
                                None)
    # Ids with the separator in them: ("a:b", "c") is not ("a", "b:c").
    await store.journal_append("a:b", "c", [b"ab/c"], True, limits(), None)
    await store.journal_append("a", "b:c", [b"a/bc"], False, limits(), None)
    assert await store.journal_read("t1", "task", 0, 10) == JournalRead(
        [JournalEntry(1, b"one")], 1, 1, False)
    assert await store.journal_read("t2", "task", 0, 10) == JournalRead(
        [JournalEntry(1, b"\xff\x00two"), JournalEntry(2, b"one")], 1, 2, False)
    assert await store.journal_read("a:b", "c", 0, 10) == JournalRead(
        [JournalEntry(1, b"ab/c")], 1, 1, True)
    assert await store.journal_read("a", "b:c", 0, 10) == JournalRead(
        [JournalEntry(1, b"a/bc")], 1, 1, False)
    assert (await store.journal_read("t3", "task", 0, 10)).last == 0


async def test_writers_on_two_stores_at_once_journal_the_stream_once(
        make_store: MakeStore) -> None:
    """Two workers' (or replicas') stores on one place, four streams of the task (two on
    each) reading the same events and appending them in batches at once, each from its
    own position: every stream gets the seqs 1..n, and the journal is the events once,
    the repeated status as often as it was sent."""
    one, two = make_store(), make_store()
    status = b'{"status":"working"}'
    events = [e for n in range(30) for e in ([ev(n), status] if n % 3 else [ev(n)])]

    async def stream(store: Store) -> list[int]:
        seqs: list[int] = []
        for start in range(0, len(events), 3):
            seqs += await store.journal_append("t1", "task", events[start:start + 3], False,
                                               limits(), seqs[-1] if seqs else 0)
        return seqs
    results = await asyncio.gather(*(stream(store) for store in (one, two, one, two)))
    assert results == [list(range(1, len(events) + 1))] * 4
    got = await one.journal_read("t1", "task", 0, 1000)
    assert got == JournalRead([JournalEntry(s, e) for s, e in enumerate(events, 1)], 1,
                              len(events), False)
    assert await two.journal_read("t1", "task", 0, 1000) == got


async def test_an_expired_journal_reads_empty_and_starts_over(store: Store) -> None:
    short = limits(ttl=0.05)
    await store.journal_append("t1", "task", [ev(n) for n in range(1, 7)], True, short, None)
    assert (await store.journal_read("t1", "task", 0, 10)).terminal

    async def expired() -> JournalRead | None:
        got = await store.journal_read("t1", "task", 0, 10)
        return got if got.last == 0 else None
    gone = await wait_until(expired, "the terminal journal expired", timeout=5)
    assert gone == JournalRead([], 0, 0, False) and gone.lost_after(5)
    # A writer's position in the journal that expired matches nothing in the new one.
    assert await store.journal_append("t1", "task", [ev(6), ev(1)], False,
                                      limits(), 6) == [1, 2]


async def test_sqlite_expiry_by_the_stores_clock(tmp_path: Path) -> None:
    now = [T0]
    store = SqliteStore(str(tmp_path / "state.db"), clock=lambda: now[0])
    try:
        bound = limits(ttl=10, idle_ttl=100)
        await store.journal_append("t1", "task", [ev(1)], False, bound, None)
        await store.journal_append("t1", "other", [ev(1)], False, bound, None)  # idle: T0 + 100
        now[0] = T0 + 50  # within idle_ttl; the terminal append sets T0 + 60
        await store.journal_append("t1", "task", [ev(2)], True, bound, 1)
        now[0] = T0 + 55  # a later append of a terminal task keeps ttl: T0 + 65
        await store.journal_append("t1", "task", [ev(3)], False, bound, 2)
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


async def test_sqlite_size_is_what_the_unexpired_journals_hold_and_the_pruning_samples_it(
        tmp_path: Path) -> None:
    now = [T0]
    store = SqliteStore(str(tmp_path / "state.db"), clock=lambda: now[0])
    try:
        assert await store.journal_size() == JournalSize(0, 0)
        await store.journal_append("t1", "a", [ev(1), ev(2), ev(3)], False,
                                   limits(max_events=2), None)  # ev(1) trimmed
        await store.journal_append("t1", "b", [ev(1)], True, limits(ttl=10), None)
        held = len(ev(2)) + len(ev(3)) + len(ev(1))
        assert await store.journal_size() == JournalSize(3, held)
        await sample_journal(store)
        assert (JOURNAL_EVENTS._value.get(), JOURNAL_BYTES._value.get()) == (3, held)  # type: ignore[attr-defined]
        now[0] = T0 + 10  # b expired: not held any more, pruned or not
        assert await store.journal_size() == JournalSize(2, held - len(ev(1)))
        await store.prune()
        assert await store.journal_size() == JournalSize(2, held - len(ev(1)))
    finally:
        await store.close()


async def test_sqlite_file_with_the_unique_digest_index_loses_it(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    try:  # the journal table as the first version made it
        db.executescript(
            "CREATE TABLE journal (tenant TEXT NOT NULL, task_id TEXT NOT NULL, "
            "seq INTEGER NOT NULL, digest BLOB NOT NULL, data BLOB NOT NULL, "
            "PRIMARY KEY (tenant, task_id, seq)) WITHOUT ROWID;"
            "CREATE UNIQUE INDEX journal_by_digest ON journal (tenant, task_id, digest);")
    finally:
        db.close()
    store = SqliteStore(str(path))
    try:
        assert await store.journal_append("t1", "task", [ev(1), ev(1)], False, limits(),
                                          None) == [1, 2]
    finally:
        await store.close()
    db = sqlite3.connect(path)
    try:
        assert db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND "
                          "tbl_name = 'journal' AND sql IS NOT NULL").fetchall() == [
            ("journal_by_digest_seq",)]
    finally:
        db.close()


async def test_redis_keys_expire_with_the_journal(redis_url: str) -> None:
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    store = RedisStore(redis_url, prefix)
    client = aioredis.Redis.from_url(redis_url)
    try:
        keys = journal_keys(prefix, "t1", "task")
        bound = limits(ttl=10, idle_ttl=100)

        async def ttls() -> list[int]:  # ms left of each of the task's keys
            return [await client.pttl(k) for k in keys]
        await store.journal_append("t1", "task", [ev(1), ev(2)], False, bound, None)
        assert all(90_000 < ms <= 100_000 for ms in await ttls()), await ttls()
        await store.journal_append("t1", "task", [ev(3)], True, bound, 2)
        assert all(0 < ms <= 10_000 for ms in await ttls()), await ttls()
        await store.journal_append("t1", "task", [ev(4)], False, bound, 3)  # still terminal
        assert all(0 < ms <= 10_000 for ms in await ttls()), await ttls()
        assert (await store.journal_read("t1", "task", 0, 10)).last == 4
    finally:
        await client.aclose()
        await store.close()


async def test_redis_trimming_drops_the_entries_digests(redis_url: str) -> None:
    prefix = f"test-{uuid.uuid4().hex[:8]}:"
    store = RedisStore(redis_url, prefix)
    client = aioredis.Redis.from_url(redis_url)
    try:
        entries_key, digests_key, _ = journal_keys(prefix, "t1", "task")
        bound = limits(max_events=3)
        await store.journal_append("t1", "task", [ev(1), ev(1), ev(2), ev(1), ev(3)], False,
                                   bound, None)
        # Held: 3..5, each its bytes and its digest in the hash, its member in the set.
        assert await client.zcard(digests_key) == 3
        assert sorted(await client.hkeys(entries_key)) == [b"3", b"4", b"5", b"d3", b"d4",
                                                            b"d5"]
        assert (await store.journal_read("t1", "task", 0, 10)).entries == [
            JournalEntry(3, ev(2)), JournalEntry(4, ev(1)), JournalEntry(5, ev(3))]
    finally:
        await client.aclose()
        await store.close()
