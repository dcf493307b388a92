"""What migration mode keeps in the store, on SQLite and Redis alike, as two workers or
replicas share it: owners of conversations and tasks (the first binding wins and is seen
by the other), the canary's share moved in one process and read in the other."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from prometheus_client import REGISTRY

from gateway.config.migration import MigrationConfig, RollbackConfig
from gateway.config.models import parse_config
from gateway.migration import owners as owners_module
from gateway.migration.control import Control
from gateway.migration.owners import Owners, owner_key
from gateway.migration.stats import TenantStats, Verdict
from gateway.migration.tenant import TenantMigration
from gateway.migration.tenants import Migrations
from gateway.state import Store, StoreError, TaskRecord
from gateway.state.sqlite_store import SqliteStore
from gateway.tasks.index import TaskIndex
from tests.state.conftest import MakeStore
from tests.support.helpers import ManualClock, v03
from tests.support.migration_calls import call, chosen, migration, route, ticket
from tests.support.waiting import wait_until
from translators import operations as ops
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


def _config(**extra: object) -> MigrationConfig:
    return MigrationConfig.model_validate({"candidate": {"url": "http://c.example/",
                                                         "version": "1.0"},
                                           "mode": "canary", "canary": {"share": 0.3},
                                           **extra})


async def test_a_rollback_in_one_process_reaches_the_others(make_store: MakeStore) -> None:
    one = Control("shop", _config(), make_store())
    two = Control("shop", _config(), make_store())
    assert (one.share, two.share) == (0.3, 0.3)
    await one.move("rollback", "automatic", "candidate error rate 0.50")
    await two.refresh()
    assert two.share == 0.0 and two.moved
    assert two.events[0]["kind"] == "rollback" and two.events[0]["by"] == "automatic"
    assert two.events[0]["from_share"] == 0.3
    await two.move("promote", "admin", "by hand")
    await one.refresh()
    assert one.share == 1.0
    assert [e["kind"] for e in one.events] == ["promote", "rollback"]


async def test_a_new_config_starts_from_its_own_share(make_store: MakeStore) -> None:
    old = Control("shop", _config(), make_store())
    await old.move("rollback", "automatic", "too many errors")
    new = Control("shop", _config(canary={"share": 0.5}), make_store())
    await new.refresh()
    assert new.share == 0.5  # the operator's newer word
    assert new.events[0]["kind"] == "rollback"  # the history stays


async def test_the_share_each_process_uses_is_the_one_it_shows(make_store: MakeStore) -> None:
    shown: dict[str, list[float]] = {"one": [], "two": []}
    one = Control("shop", _config(), make_store(), on_share=shown["one"].append)
    two = Control("shop", _config(), make_store(), on_share=shown["two"].append)
    await one.move("rollback", "automatic", "candidate error rate 0.50")
    await two.refresh()  # the move made in the other process
    assert shown == {"one": [0.3, 0.0], "two": [0.3, 0.0]}


async def test_a_reload_keeps_the_moved_share_before_the_store_is_read(
        make_store: MakeStore) -> None:
    old = Control("shop", _config(), make_store())
    await old.move("rollback", "automatic", "too many errors")
    shown: list[float] = []
    same = Control("shop", _config(), make_store(), on_share=shown.append)
    same.carry(old)
    assert same.share == 0.0 and shown == [0.3, 0.0]  # no call goes by 0.3 meanwhile
    assert same.events[0]["kind"] == "rollback"
    changed = Control("shop", _config(canary={"share": 0.5}), make_store())
    changed.carry(old)
    assert changed.share == 0.5  # the operator's newer word
    assert changed.events[0]["kind"] == "rollback"


async def test_a_config_going_back_to_an_earlier_mode_and_share_starts_from_its_own(
        make_store: MakeStore) -> None:
    # "A move holds until a config changes the mode or the share": a config applied
    # makes its basis the store's, so the earlier config's rollback is over for good.
    def migrations(mode: str) -> Migrations:
        config = parse_config({"tenants": {"shop": {
            **v03("http://127.0.0.1:9/"), "migration": {
                "mode": mode, "canary": {"share": 0.3},
                "candidate": {"url": "http://127.0.0.1:2/", "version": "1.0"}}}},
            "state": {"path": ":memory:"}})
        routes = {"shop": route("http://127.0.0.1:9/")}
        return Migrations(config, routes, lambda name, c: route(str(c.url)), make_store())

    first = migrations("canary")
    await first.adopt()
    await first.move("shop", "rollback", "automatic")
    for mode in ("cutover", "off"):  # a config between, with its own mode (or none)
        between = migrations(mode)
        await between.adopt()
    back = migrations("canary")
    await back.adopt()
    report = await back.report("shop")
    assert report is not None and report["share"] == 0.3
    assert [e["kind"] for e in report["events"]] == ["rollback"]  # the history stays
    # A restart, or another worker, with the config a move was made under keeps it.
    await back.move("shop", "rollback", "automatic")
    same = migrations("canary")
    await same.adopt()
    report = await same.report("shop")
    assert report is not None and report["share"] == 0.0


async def test_a_reload_through_off_carries_what_the_report_counted() -> None:
    def migrations(mode: str, previous: Migrations | None) -> Migrations:
        config = parse_config({"tenants": {"shop": {
            **v03("http://127.0.0.1:9/"), "migration": {
                "mode": mode, "canary": {"share": 0.3},
                "candidate": {"url": "http://127.0.0.1:2/", "version": "1.0"}}}}})
        return Migrations(config, {"shop": route("http://127.0.0.1:9/")},
                          lambda name, c: route(str(c.url)), None, previous)

    canary = migrations("canary", None)
    canary.active["shop"].stats.call("candidate", 0.01, "error")
    resting = migrations("off", canary)
    assert "shop" not in resting.active and await resting.report("shop") == {
        "tenant": "shop", "mode": "off"}
    again = migrations("canary", migrations("off", resting))  # off twice in a row
    report = await again.report("shop")
    assert report is not None and report["arms"]["candidate"]["errors"] == 1


async def test_a_move_to_the_share_there_already_records_nothing(
        make_store: MakeStore) -> None:
    one = Control("shop", _config(), make_store())
    two = Control("shop", _config(), make_store())
    assert await one.move("promote", "admin API (127.0.0.1)", "by hand")
    # The other process reads the promotion before it moves: a second click is no move.
    assert not await two.move("promote", "admin API (10.0.0.2)", "by hand")
    await one.refresh()
    assert [e["kind"] for e in one.events] == ["promote"] == [e["kind"] for e in two.events]
    assert await two.move("rollback", "automatic", "candidate error rate 0.50")
    assert not await one.move("rollback", "admin API (127.0.0.1)", "by hand")
    assert [e["by"] for e in one.events] == ["automatic", "admin API (127.0.0.1)"]


class _HeldRead:
    """The store's next read: it reads the record at once, and answers it when the test
    opens the gate (a read begun before what the test does meanwhile)."""

    def __init__(self, store: Store) -> None:
        self.real = store.claimed
        self.gate = asyncio.Event()
        self.read = False  # the record read, held at the gate
        self.answered = False  # and answered: the reader has applied it (no await between)
        store.claimed = self.claimed  # type: ignore[method-assign]

    async def claimed(self, key: str) -> str | None:
        value = await self.real(key)
        if self.read:  # only the first read is held
            return value
        self.read = True
        await self.gate.wait()
        self.answered = True
        return value


async def test_a_read_begun_before_a_move_does_not_undo_it(make_store: MakeStore) -> None:
    # The background read a call started reads the promotion made earlier; a rollback
    # here, then the read ends: applied, the share went back to 1 and the rollback's
    # event was gone in this process until the next read.
    await Control("shop", _config(), make_store()).move("promote", "admin", "by hand")
    store = make_store()
    control = Control("shop", _config(), store)
    held = _HeldRead(store)
    control.current()
    await wait_until(lambda: held.read, "the background read read the promotion")
    assert await control.move("rollback", "automatic", "candidate error rate 0.50")
    held.gate.set()
    await wait_until(lambda: held.answered, "the background read ended")
    assert control.share == 0.0
    assert [e["kind"] for e in control.events] == ["rollback", "promote"]


async def test_a_read_answered_before_a_moves_record_is_stored_does_not_undo_it(
        make_store: MakeStore) -> None:
    # A read begun while the rollback's record is on its way to the store, answered
    # with the promotion, is outdated: the rollback holds once stored.
    await Control("shop", _config(), make_store()).move("promote", "admin", "by hand")
    store = make_store()
    control = Control("shop", _config(), store)
    gate, real, sent = asyncio.Event(), store.swap, asyncio.Event()

    async def held(key: str, expected: str | None, value: str, ttl: float) -> bool:
        sent.set()
        await gate.wait()
        return await real(key, expected, value, ttl)

    store.swap = held  # type: ignore[method-assign]
    moving = asyncio.create_task(control.move("rollback", "automatic", "too many errors"))
    await wait_until(sent.is_set, "the rollback's record on its way to the store")
    reading = asyncio.create_task(control.refresh())  # the store still holds the promotion
    await asyncio.sleep(0)
    gate.set()
    assert await moving
    await reading
    assert control.share == 0.0 and control.events[0]["kind"] == "rollback"
    await control.refresh()  # begun once the record is stored: read as the others do
    assert control.share == 0.0 and control.events[0]["kind"] == "rollback"


async def test_of_two_processes_rolling_back_at_once_one_moves(make_store: MakeStore) -> None:
    # Each worker's rollback saw the same outage: both read the share before either
    # wrote, both said "moved" and counted it, and the last write lost the other's event.
    await Control("shop", _config(), make_store()).move("promote", "admin", "by hand")
    both_read = asyncio.Barrier(2)
    controls = []
    for _ in range(2):
        store = make_store()
        real, first = store.claimed, [True]

        async def read_together(key: str, real: Any = real, first: list[bool] = first,
                                ) -> str | None:
            value = await real(key)
            if first.pop() if first else False:  # each process's first read: at once
                await both_read.wait()
            return value

        store.claimed = read_together  # type: ignore[method-assign]
        controls.append(Control("shop", _config(), store))
    moved = await asyncio.gather(*(c.move("rollback", "automatic", "outage")
                                   for c in controls))
    assert sorted(moved) == [False, True]
    fresh = Control("shop", _config(), make_store())
    await fresh.refresh()
    assert fresh.share == 0.0
    assert [e["kind"] for e in fresh.events] == ["rollback", "promote"]


async def test_a_move_by_hand_the_store_cannot_keep_is_refused(make_store: MakeStore) -> None:
    # It answered as moved (200), and the next read of the store put the share back:
    # the operator's rollback during an incident undid itself. The automatic one still
    # holds in this process (the candidate failing is no time to wait for the store).
    store = make_store()
    control = Control("shop", _config(), store)
    assert control.share == 0.3

    async def down(*args: object) -> bool:
        raise StoreError("the store is down")

    store.swap = down  # type: ignore[method-assign]
    with pytest.raises(StoreError):
        await control.move("rollback", "admin API (127.0.0.1)", "by hand")
    assert control.share == 0.3 and control.events == []
    store.claimed = down  # type: ignore[method-assign, assignment]
    with pytest.raises(StoreError):
        await control.move("rollback", "admin API (127.0.0.1)", "by hand")
    assert await control.move("rollback", "automatic", "candidate error rate 0.50")
    assert control.share == 0.0 and control.events[0]["by"] == "automatic"


async def test_a_promotion_made_elsewhere_starts_this_process_rollback_window_afresh(
        make_store: MakeStore) -> None:
    # This worker never saw the share at 0 (no new conversation reached it between the
    # other's rollback and the promotion): its window kept the failures from before, and
    # its next calls rolled the promotion back in every process.
    rules = RollbackConfig.model_validate({"window": 60, "min_calls": 20,
                                           "max_error_rate": 0.2})
    here, clock = migration(share=1.0, store=make_store()), ManualClock()
    here.stats = TenantStats(rules, keep=3, clock=clock)

    async def counted(verdict: Verdict) -> None:
        c = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(message_id="m")))
        ticket(await chosen(here, c)).count(verdict)

    for verdict in ("error",) * 10 + ("ok",) * 5:  # 15 calls: too few to judge
        await counted(verdict)
    elsewhere = migration(share=1.0, store=make_store())
    await elsewhere.move("rollback", "automatic", "candidate error rate 0.60")
    await elsewhere.move("promote", "admin API (127.0.0.1)", "mended")
    await here.control.refresh()
    assert here.control.share == 1.0
    for _ in range(5):
        await counted("ok")
    clock.now += 1  # the window's next slice: its first call asks for a check
    await counted("ok")
    assert here._rolling is None and here.control.share == 1.0


async def test_a_config_applied_takes_a_move_made_under_it_before_its_first_call(
        make_store: MakeStore) -> None:
    # A fresh worker (or a restart) with the config a rollback was made under: its first
    # new conversation went by the configured share until a background read landed.
    await Control("shop", _config(), make_store()).move("rollback", "automatic", "errors")
    fresh = Control("shop", _config(), make_store())
    assert fresh.share == 0.3
    await fresh.adopt()
    assert fresh.share == 0.0 and fresh.events[0]["kind"] == "rollback"


async def test_an_older_read_does_not_undo_a_newer_one(make_store: MakeStore) -> None:
    # A background read holds the promotion; the other process rolls back, and a newer
    # read here (the report's) applies it before the older one ends.
    other = Control("shop", _config(), make_store())
    await other.move("promote", "admin", "by hand")
    store = make_store()
    control = Control("shop", _config(), store)
    held = _HeldRead(store)
    control.current()
    await wait_until(lambda: held.read, "the background read read the promotion")
    await other.move("rollback", "automatic", "candidate error rate 0.50")
    await control.refresh()
    assert control.share == 0.0
    held.gate.set()
    await wait_until(lambda: held.answered, "the background read ended")
    assert control.share == 0.0
    assert [e["kind"] for e in control.events] == ["rollback", "promote"]


async def test_the_report_says_who_rolled_back_while_the_rollback_holds(
        make_store: MakeStore) -> None:
    store = make_store()
    m = TenantMigration("shop", _config(), route("http://127.0.0.1:1/"),
                        route("http://127.0.0.1:2/"), store)
    shown = (await m.report(5))["rollback"]
    assert (shown["rolled_back"], shown["rolled_back_by"]) == (False, None)
    await m.move("rollback", "automatic", "candidate error rate 0.50")
    shown = (await m.report(5))["rollback"]
    assert (shown["rolled_back"], shown["rolled_back_by"]) == (True, "automatic")
    await m.move("promote", "admin API (127.0.0.1)", "by hand")
    await m.move("rollback", "admin API (127.0.0.1)", "by hand")
    shown = (await m.report(5))["rollback"]
    assert (shown["rolled_back"], shown["rolled_back_by"]) == (True, "admin API (127.0.0.1)")
    # A config with a share of its own ends the rollback; its event stays in the history.
    changed = TenantMigration("shop", _config(canary={"share": 0.5}), m.primary,
                              m.candidate, store, previous=m)
    report = await changed.report(5)
    assert report["share"] == 0.5 and report["events"][0]["kind"] == "rollback"
    assert (report["rollback"]["rolled_back"], report["rollback"]["rolled_back_by"]) == (
        False, None)


async def test_only_a_move_made_is_counted(make_store: MakeStore) -> None:
    m = TenantMigration("shop", _config(), route("http://127.0.0.1:1/"),
                        route("http://127.0.0.1:2/"), make_store())
    labels = {"tenant": "shop", "action": "promote", "by": "admin"}

    def counted() -> float:
        return REGISTRY.get_sample_value("a2a_gateway_migration_moves_total", labels) or 0.0

    before = counted()
    await m.move("promote", "admin", "by hand")
    await m.move("promote", "admin", "by hand")
    assert counted() == before + 1


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


async def _new_conversation(m: TenantMigration, answer: pb.SendMessageResponse,
                            shadowed: bool = False) -> Awaitable[None] | None:
    """A message with no context through ``m``, answered with ``answer``: what
    ``answered`` returns (the bindings to wait for, or None)."""
    sent = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="hello")])))
    passage = await chosen(m, sent)
    ticket(passage).shadowed = shadowed
    return m.answered(sent, ticket(passage), answer)


async def test_the_primarys_tasks_are_not_written_and_another_process_reads_one_once(
        make_store: MakeStore) -> None:
    # A task no one bound is the primary's in every process: only the conversation the
    # primary took is written (before its answer: no index row follows it here);
    # elsewhere its task is read once, then followed.
    here = migration(share=0.0, store=make_store())  # every new conversation: the primary
    waiting = await _new_conversation(here, pb.SendMessageResponse(
        task=pb.Task(id="t-p", context_id="c-p")))
    assert waiting is not None
    await waiting
    store = make_store()
    assert await store.claimed("migration:shop:context:c-p") == "primary"
    assert await store.claimed("migration:shop:task:t-p") is None
    there = migration(share=0.0, store=store)
    reads: list[str] = []
    real = store.claimed

    async def counted(key: str) -> str | None:
        reads.append(key)
        return await real(key)

    store.claimed = counted  # type: ignore[method-assign]
    for _ in range(2):
        got = await chosen(there, call(ops.GET_TASK, pb.GetTaskRequest(id="t-p")))
        assert ticket(got).arm == "primary"
    assert reads == ["migration:shop:task:t-p"]


def _message(context_id: str) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(message=pb.Message(
        message_id=f"m-{context_id}", context_id=context_id, parts=[pb.Part(text="and then?")]))


async def test_a_conversation_under_way_before_the_migration_stays_with_the_primary(
        make_store: MakeStore) -> None:
    # The task index holds a task of conversation c-old, made before the migration; no
    # one bound it. Its next message names only the conversation: were it taken for a new
    # one, at share 1 it would go on at the candidate, which never saw it.
    store = make_store()
    await store.record_task(TaskRecord("shop", "t-old", "c-old", "TASK_STATE_COMPLETED",
                                       1.0, 1.0, backend="JSONRPC/0.3"))
    tasks = TaskIndex(parse_config({"tenants": {"shop": v03("http://127.0.0.1:9/")},
                                    "state": {"path": ":memory:"}}), store)
    m = migration(share=1.0, store=store, conversations=tasks)
    passage = await chosen(m, call(ops.SEND, _message("c-old")))
    assert ticket(passage).arm == "primary" and not ticket(passage).new
    await m.owners.flushed()  # bound for every process, whatever the index keeps later
    assert await make_store().claimed("migration:shop:context:c-old") == "primary"
    # A conversation the index does not hold is a new one: the share decides.
    assert ticket(await chosen(m, call(ops.SEND, _message("c-new")))).arm == "candidate"
    # Another tenant's conversation of that id is not this tenant's.
    other = TaskRecord("elsewhere", "t-x", "c-x", "TASK_STATE_COMPLETED", 1.0, 1.0)
    await store.record_task(other)
    assert ticket(await chosen(m, call(ops.SEND, _message("c-x")))).arm == "candidate"


async def test_with_no_share_left_a_conversation_recorded_with_the_candidate_goes_on_there(
        make_store: MakeStore) -> None:
    # Share 0 (shadow, or after a rollback): the index is still asked of a conversation
    # no one bound, for the row of its task follows it to the agent that served it.
    store = make_store()
    await store.record_tasks([
        TaskRecord("shop", "t-c", "c-cand", "TASK_STATE_COMPLETED", 1.0, 1.0,
                   backend="JSONRPC/1.0", agent="candidate"),
        TaskRecord("shop", "t-o", "c-old", "TASK_STATE_COMPLETED", 1.0, 1.0,
                   backend="JSONRPC/0.3")])
    m = migration(share=0.0, store=store, conversations=_index(store))
    chosen_ = {c: ticket(await chosen(m, call(ops.SEND, _message(c))))
               for c in ("c-cand", "c-old", "c-any")}
    assert {c: (t.arm, t.new) for c, t in chosen_.items()} == {
        "c-cand": ("candidate", False), "c-old": ("primary", False),
        "c-any": ("primary", True)}
    await m.owners.flushed()  # the candidate's is followed by its row, not bound
    assert await store.claimed("migration:shop:context:c-cand") is None
    assert await store.claimed("migration:shop:context:c-old") == "primary"
    # And a task of the candidate no one bound, by its row.
    got = await chosen(m, call(ops.GET_TASK, pb.GetTaskRequest(id="t-c")))
    assert ticket(got).arm == "candidate"


async def test_the_candidates_new_conversation_waits_for_no_binding_where_the_index_follows(
        make_store: MakeStore) -> None:
    # Other processes read the store (`waits`): the candidate's new conversation waited
    # for its two bindings; the index writes the task's row, with its agent, before the
    # answer goes out anyway, so nothing is left to wait for or to write.
    store = make_store()
    m = migration(share=1.0, store=store, conversations=_index(store))
    assert m.owners.waits and m.follows_index
    sent = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="hello")])))
    passage = await chosen(m, sent)
    assert ticket(passage).arm == "candidate" and sent.ctx.outcome.agent == m.names.candidate
    assert m.answered(sent, ticket(passage), pb.SendMessageResponse(
        task=pb.Task(id="t-c", context_id="c-c"))) is None
    await m.owners.flushed()
    assert await store.claimed("migration:shop:context:c-c") is None
    assert await store.claimed("migration:shop:task:t-c") is None
    assert m.owners.known("migration:shop:task:t-c") == "candidate"
    assert m.owners.known("migration:shop:context:c-c") == "candidate"
    # Without the index, both are bound before the answer goes out, as before.
    bare = migration(share=1.0, store=store)
    sent = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="hello")])))
    passage = await chosen(bare, sent)
    assert sent.ctx.outcome.agent is None
    waiting = bare.answered(sent, ticket(passage), pb.SendMessageResponse(
        task=pb.Task(id="t-b", context_id="c-b")))
    assert waiting is not None
    await waiting
    assert await store.claimed("migration:shop:task:t-b") == bare.names.candidate


def _index(store: object) -> TaskIndex:
    return TaskIndex(parse_config({"tenants": {"shop": v03("http://127.0.0.1:9/")},
                                   "state": {"path": ":memory:"}}), store)  # type: ignore[arg-type]


async def test_the_primarys_new_conversation_is_followed_by_the_index_not_bound(
        make_store: MakeStore) -> None:
    # The index writes a row for the task anyway: that row, not a binding of its own,
    # keeps the conversation with the primary for every other process; pruning the
    # row binds it (Migrations.kept_owners), so the index forgets none silently.
    store = make_store()
    here = migration(share=0.0, store=store, conversations=_index(store))
    assert here.follows_index
    assert await _new_conversation(here, pb.SendMessageResponse(
        task=pb.Task(id="t-p", context_id="c-p"))) is None
    await here.owners.flushed()
    assert await store.claimed("migration:shop:context:c-p") is None  # nothing written
    assert here.owners.known("migration:shop:context:c-p") == "primary"  # followed here
    # Another process, the share now 1: the index's row of its task says it is under way.
    await store.record_task(TaskRecord("shop", "t-p", "c-p", "TASK_STATE_COMPLETED",
                                       1.0, 1.0, backend="JSONRPC/1.0"))
    there = migration(share=1.0, store=make_store(), conversations=_index(make_store()))
    assert ticket(await chosen(there, call(ops.SEND, _message("c-p")))).arm == "primary"
    # A new conversation answered by a message (no task: no row) is bound, before the
    # answer goes out.
    waiting = await _new_conversation(here, pb.SendMessageResponse(
        message=pb.Message(message_id="r", task_id="t-m", context_id="c-m")))
    assert waiting is not None
    await waiting
    assert await store.claimed("migration:shop:context:c-m") == "primary"


async def test_pruning_the_index_binds_the_primarys_conversations_of_a_migration(
        make_store: MakeStore) -> None:
    store = make_store()
    config = parse_config({"tenants": {"shop": {
        **v03("http://127.0.0.1:9/"), "migration": {
            "mode": "canary", "canary": {"share": 0.3},
            "candidate": {"url": "http://127.0.0.1:2/", "version": "1.0"}}},
        "plain": v03("http://127.0.0.1:8/")}, "state": {"path": ":memory:"}})
    routes = {name: route(str(t.backend.url)) for name, t in config.tenants.items()}
    m = Migrations(config, routes, lambda name, c: route(str(c.url)), store,
                   conversations=TaskIndex(config, store))
    kept = m.kept_owners()
    assert list(kept) == ["shop"]
    await store.record_task(TaskRecord("shop", "t-1", "c-1", "TASK_STATE_COMPLETED", 1.0, 1.0))
    await store.record_task(TaskRecord("plain", "t-2", "c-2", "TASK_STATE_COMPLETED", 1.0, 1.0))
    assert await store.prune(2.0, kept) == 2
    assert await store.claimed("migration:shop:context:c-1") == "primary"
    assert await store.claimed("migration:plain:context:c-2") is None


async def test_a_shadowed_new_conversation_answered_by_a_message_is_bound(
        make_store: MakeStore) -> None:
    # A shadowed call's ids are read whole (its copy learns the message's task id too),
    # so its task id does not mean a task row: the conversation is bound as before.
    store = make_store()
    m = migration(share=0.0, store=store, conversations=_index(store))
    mirrored: list[tuple[str, str]] = []
    m.shadow.mirror = lambda call, answer, seconds, ids: mirrored.append(ids)  # type: ignore[method-assign]
    waiting = await _new_conversation(m, pb.SendMessageResponse(
        message=pb.Message(message_id="r", task_id="t-s", context_id="c-s")), shadowed=True)
    assert mirrored == [("t-s", "c-s")] and waiting is not None
    await waiting
    assert await store.claimed("migration:shop:context:c-s") == "primary"


async def test_a_primary_stream_is_bound_unless_its_first_event_is_a_task_the_index_records(
        make_store: MakeStore) -> None:
    # The index records a stream's task from its Task and status events (task_facts'
    # STATEFUL_EVENTS); an artifact chunk that names a task first leaves no row: bound.
    store = make_store()
    m = migration(share=0.0, store=store, conversations=_index(store))
    firsts = {"c-task": pb.StreamResponse(task=pb.Task(id="t-1", context_id="c-task")),
              "c-status": pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
                  task_id="t-2", context_id="c-status")),
              "c-chunk": pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
                  task_id="t-3", context_id="c-chunk"))}
    for first in firsts.values():
        streamed = call(ops.STREAM, pb.SendMessageRequest(message=pb.Message(
            message_id="m", parts=[pb.Part(text="hello")])))
        await ticket(await chosen(m, streamed)).before(first)
    await m.owners.flushed()
    assert {c: await store.claimed(f"migration:shop:context:{c}") for c in firsts} == {
        "c-task": None, "c-status": None, "c-chunk": "primary"}
    assert all(m.owners.known(f"migration:shop:context:{c}") == "primary" for c in firsts)


async def test_a_task_the_candidates_message_names_is_bound_for_the_index_has_no_row_of_it(
        make_store: MakeStore) -> None:
    # The index records a task from a Task or a status event, not from a message or an
    # artifact chunk naming it: such a task of the candidate is bound, as without the
    # index (a task no one bound would be taken for the primary's).
    store = make_store()
    m = migration(share=1.0, store=store, conversations=_index(store))
    waiting = await _new_conversation(m, pb.SendMessageResponse(
        message=pb.Message(message_id="r", task_id="t-m", context_id="c-m")))
    assert isinstance(waiting, Awaitable)  # before the answer goes out
    await waiting
    streamed = call(ops.STREAM, pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="hello")])))
    await ticket(await chosen(m, streamed)).before(pb.StreamResponse(
        artifact_update=pb.TaskArtifactUpdateEvent(task_id="t-a", context_id="c-a")))
    there = make_store()
    assert [await there.claimed(f"migration:shop:{key}") for key in (
        "task:t-m", "context:c-m", "task:t-a", "context:c-a")] == [m.names.candidate] * 4


async def test_the_primarys_new_conversation_a_message_answered_is_bound_before_the_answer(
        make_store: MakeStore) -> None:
    # No task row follows it: another worker asked for its next message before a
    # background write would take it for a new conversation, and might hash it to the
    # candidate.
    m = migration(share=0.0, store=make_store())
    c = call(ops.SEND, pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="hello")])))
    answer = pb.SendMessageResponse(message=pb.Message(message_id="a", context_id="c-9"))
    waiting = m.answered(c, ticket(await chosen(m, c)), answer)
    assert waiting is not None
    await waiting
    assert await Owners(make_store(), 60).owner("shop", "context", "c-9") == "primary"
