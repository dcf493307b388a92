"""The owners of conversations and tasks in the state store, on SQLite and Redis alike
(gateway/migration/owners.py): the first binding wins in every process, bindings are
written in batches (a group commit), and a call that must wait for its binding waits for
the write that carries it, also when the store refuses one."""

from __future__ import annotations

import asyncio

import pytest

from gateway.migration import owners as owners_module
from gateway.migration.owners import Owners, owner_key
from gateway.state import StoreError
from gateway.state.sqlite_store import SqliteStore
from tests.state.conftest import MakeStore
from tests.support.waiting import wait_until
from translators.errors import A2AError


async def test_claims_can_be_read_and_rebound(make_store: MakeStore) -> None:
    one, two = make_store(), make_store()
    assert await one.claimed("k") is None
    assert await one.claim("k", "a", 60) == "a"
    assert await two.claimed("k") == "a"
    await two.rebind("k", "b", 60)
    assert await one.claimed("k") == "b"
    assert await one.claim("k", "c", 60) == "b"


async def test_the_first_owner_bound_wins_in_every_process(make_store: MakeStore) -> None:
    a, b = Owners(make_store(), 60), Owners(make_store(), 60)
    assert await a.claim("shop", "context", "c-1", "candidate") == "candidate"
    assert await b.claim("shop", "context", "c-1", "primary") == "candidate"
    assert await b.owner("shop", "context", "c-1") == "candidate"
    assert await b.owner("shop", "task", "t-unknown") is None
    assert await b.owner("other", "context", "c-1") is None  # per tenant
    assert b.known(owner_key("shop", "context", "c-1")) == "candidate"  # no second read


async def test_bindings_are_written_together_and_the_first_writer_wins(
        make_store: MakeStore) -> None:
    one, two = make_store(), make_store()
    assert await one.claim_all([("a", "primary"), ("b", "candidate")], 60) == [
        "primary", "candidate"]
    assert await two.claim_all([("b", "primary"), ("c", "primary")], 60) == [
        "candidate", "primary"]
    assert await two.claim_all([], 60) == []
    a, b = Owners(one, 60), Owners(two, 60)
    b.bind_later(["migration:shop:task:t-1"], "primary")  # with the next write
    await a.bind(["migration:shop:task:t-1", "migration:shop:context:c-1"], "candidate")
    await b.flushed()
    # b's write came second: the store kept a's, and b follows it once it has written.
    assert await b.store.claimed("migration:shop:task:t-1") == "candidate"  # type: ignore[union-attr]
    assert b.known(owner_key("shop", "task", "t-1")) == "candidate"
    assert await Owners(make_store(), 60).owner("shop", "context", "c-1") == "candidate"


async def test_a_large_claim_keeps_each_keys_first_writer_and_its_order(
        make_store: MakeStore) -> None:
    """More keys than one statement reads back (and than a batch written on the loop's
    connection), a key twice in one batch: each gets the value bound first."""
    one, two = make_store(), make_store()
    first = [(f"k-{i}", "candidate" if i % 3 == 0 else "primary") for i in range(1200)]
    assert await one.claim_all(first, 60) == [value for _, value in first]
    again = [("k-7", "candidate"), ("new", "primary"), ("new", "candidate"),
             ("k-3", "primary"), *[(f"k-{i}", "candidate") for i in range(1100, 1200)]]
    assert await two.claim_all(again, 60) == [
        "primary", "primary", "primary", "candidate",
        *["candidate" if i % 3 == 0 else "primary" for i in range(1100, 1200)]]


async def test_an_expired_binding_is_taken_by_the_next_claim_on_the_loops_connection(
        make_store: MakeStore) -> None:
    store = make_store()
    if not isinstance(store, SqliteStore):
        pytest.skip("Redis expires a binding itself (PX): nothing of it is left to claim")
    assert store.loop_writer is not None
    await store.rebind("old", "candidate", -1)  # expired a second ago
    await store.rebind("live", "candidate", 60)
    written = store.loop_writer.written
    assert await store.claim_all([("old", "primary"), ("live", "primary")], 60) == [
        "primary", "candidate"]
    assert store.loop_writer.written == written + 1  # a small batch: no thread hop
    assert await store.claimed("old") == "primary"
    assert await store.claimed("live") == "candidate"


class _GatedWrites:
    """The store's claim_all, counted, and held at a gate the test opens."""

    def __init__(self, owners: Owners) -> None:
        assert owners.store is not None
        self.store = owners.store
        self.real = owners.store.claim_all
        self.writes: list[list[str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        owners.store.claim_all = self.claim_all  # type: ignore[method-assign]

    async def claim_all(self, items: list[tuple[str, str]], ttl: float) -> list[str | None]:
        self.writes.append([key for key, _ in items])
        await self.gate.wait()
        return await self.real(items, ttl)


async def _first_write_held(make_store: MakeStore, keys: list[str],
                            ) -> tuple[Owners, _GatedWrites, asyncio.Task[None]]:
    """Owners whose first write (a call's bind of ``keys`` to the candidate) is on its way
    to the store, held at the gate the test opens."""
    owners = Owners(make_store(), 60)
    gated = _GatedWrites(owners)
    gated.gate.clear()
    first = asyncio.create_task(owners.bind(keys, "candidate"))
    await wait_until(lambda: gated.writes, "the first write started")
    return owners, gated, first


class _RefusedOnce(_GatedWrites):
    """The first write held at the gate, then refused (the store down); the next as
    they come."""

    async def claim_all(self, items: list[tuple[str, str]], ttl: float) -> list[str | None]:
        if self.writes:
            return await super().claim_all(items, ttl)
        self.writes.append([key for key, _ in items])
        await self.gate.wait()
        raise StoreError("the store is down")


async def test_a_binding_the_store_refused_is_written_by_the_next_bind(
        make_store: MakeStore) -> None:
    # The candidate's new conversation, its caller told the store is unavailable: still
    # followed here, its binding was never written again (the retry found it known and
    # answered at once), so no other process ever learned its owner.
    owners = Owners(make_store(), 60)
    refused = _RefusedOnce(owners)
    refused.gate.clear()
    c1, c2 = owner_key("shop", "context", "c-1"), owner_key("shop", "context", "c-2")
    waiting = asyncio.create_task(owners.bind([c1, c2], "candidate"))
    await wait_until(lambda: refused.writes, "the write started")
    owners.remember(c2, "primary")  # followed otherwise meanwhile: it stays
    refused.gate.set()
    with pytest.raises(A2AError):
        await waiting
    await owners.bind([c1, c2], "candidate")  # the client's retry
    assert await Owners(make_store(), 60).owner("shop", "context", "c-1") == "candidate"
    assert refused.writes == [[c1, c2], [c1]] and owners.known(c2) == "primary"
    # Alone (no other process reads the store) this table is what routes: a binding
    # refused stays followed, as before (forgotten, its conversation would be hashed
    # anew by its id).
    alone = Owners(make_store(), 60, waits=False)
    refused = _RefusedOnce(alone)
    await alone.bind([c1], "primary")
    await alone.flushed()
    assert refused.writes == [[c1]] and alone.known(c1) == "primary"


async def test_a_call_racing_for_a_binding_another_call_took_waits_for_its_write(
        make_store: MakeStore) -> None:
    # Two calls of one new conversation (a context id the client chose) in one process:
    # the second found the key taken and answered at once, before the first's write, so
    # a follow-up through another replica could find no owner yet.
    owners, gated, first = await _first_write_held(make_store, ["k-1", "k-2"])
    racing = asyncio.create_task(owners.bind(["k-1"], "candidate"))  # on its way
    queued_first = asyncio.create_task(owners.bind(["k-3"], "candidate"))
    await wait_until(lambda: owners.known("k-3") is not None, "k-3 was taken")
    queued_racing = asyncio.create_task(owners.bind(["k-3"], "candidate"))  # queued
    for _ in range(20):
        await asyncio.sleep(0)
    assert not (racing.done() or queued_racing.done())
    gated.gate.set()
    await asyncio.gather(first, racing, queued_first, queued_racing)
    assert gated.writes == [["k-1", "k-2"], ["k-3"]]
    # Written: a bind of a known key answers at once, with no write.
    await owners.bind(["k-1", "k-3"], "candidate")
    assert gated.writes == [["k-1", "k-2"], ["k-3"]]


async def test_a_bind_waits_for_each_of_its_keys_write(make_store: MakeStore) -> None:
    # One key in the write on its way, the other queued behind it: the call answered
    # after the first write, before another process could read the second owner.
    owners, gated, first = await _first_write_held(make_store, ["ctx"])
    owners.bind_later(["task"], "candidate")
    both = asyncio.create_task(owners.bind(["ctx", "task"], "candidate"))
    gated.gate.set()
    await first
    await both
    assert gated.writes == [["ctx"], ["task"]]
    assert await gated.store.claimed("task") == "candidate"


async def test_a_closing_configs_flush_waits_only_for_what_was_taken_before_it(
        make_store: MakeStore) -> None:
    # A reload that keeps both agents shares the owners between the closing config and
    # the new one, whose calls go on binding: the close wrote on, with no linger, for as
    # long as bindings kept coming.
    owners = Owners(make_store(), 60)
    gated = _GatedWrites(owners)
    feeding = True

    async def fed(items: list[tuple[str, str]], ttl: float) -> list[str | None]:
        if feeding and len(gated.writes) < 20:  # the new config's calls meanwhile
            owners.bind_later([f"k-{len(gated.writes) + 1}"], "primary")
        return await gated.claim_all(items, ttl)

    owners.store.claim_all = fed  # type: ignore[union-attr, method-assign]
    owners.bind_later(["k-0"], "primary")
    await owners.flushed()
    assert gated.writes == [["k-0"]]
    feeding = False
    await owners.flushed()  # the last one: what came meanwhile
    assert gated.writes == [["k-0"], ["k-1"]]


async def test_bindings_no_call_waits_for_linger_even_behind_a_write(
        make_store: MakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # A binding that came while a write was on its way lingers for the next one: a write
    # right behind each write was one hop to the store per new conversation.
    monkeypatch.setattr(owners_module, "LINGER", 3600.0)  # only a waiting call ends it
    owners, gated, waiting = await _first_write_held(make_store, ["k-wait"])
    owners.bind_later(["k-1"], "primary")
    owners.bind_later(["k-2"], "primary")
    gated.gate.set()
    await waiting
    for _ in range(20):
        await asyncio.sleep(0)
    assert gated.writes == [["k-wait"]]  # k-1 and k-2 linger
    await owners.bind(["k-3"], "candidate")
    assert gated.writes == [["k-wait"], ["k-1", "k-2", "k-3"]]
    assert await gated.store.claimed("k-2") == "primary"


async def test_alone_a_binding_is_written_with_the_next_batch_and_followed_at_once(
        make_store: MakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # One process alone on its store (`wait_for_writes: auto`): nothing reads the store
    # but itself, so the candidate's binding does not hold up its answer.
    monkeypatch.setattr(owners_module, "LINGER", 3600.0)
    owners = Owners(make_store(), 60, waits=False)
    gated = _GatedWrites(owners)
    await owners.bind(["migration:shop:context:c-1"], "candidate")
    assert gated.writes == []
    assert owners.known(owner_key("shop", "context", "c-1")) == "candidate"
    await owners.flushed()  # a closing gateway's write does not linger
    assert gated.writes == [["migration:shop:context:c-1"]]
    assert await gated.store.claimed("migration:shop:context:c-1") == "candidate"
