"""The canary's share in the state store, on SQLite and Redis alike, as workers and
replicas share it (gateway/migration/control.py): a move made in one process reaches the
others, of two made at once one moves, a config applied starts from its own share or the
move made under it, and a read begun before a move never undoes it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from prometheus_client import REGISTRY

from gateway.config.migration import MigrationConfig, RollbackConfig
from gateway.config.models import parse_config
from gateway.migration.control import Control
from gateway.migration.stats import TenantStats, Verdict
from gateway.migration.tenant import TenantMigration
from gateway.migration.tenants import Migrations
from gateway.state import Store, StoreError
from tests.state.conftest import MakeStore
from tests.support.helpers import ManualClock, v03
from tests.support.migration_calls import call, chosen, migration, route, ticket
from tests.support.waiting import wait_until
from translators import operations as ops


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

    async def ended(self) -> None:
        """The held read answered and applied."""
        self.gate.set()
        await wait_until(lambda: self.answered, "the background read ended")


async def _reading_a_promotion(make_store: MakeStore) -> tuple[Control, _HeldRead]:
    """A process whose background read (a call's) has read the promotion another process
    made, and is held before it applies it."""
    await Control("shop", _config(), make_store()).move("promote", "admin", "by hand")
    store = make_store()
    control = Control("shop", _config(), store)
    held = _HeldRead(store)
    control.current()
    await wait_until(lambda: held.read, "the background read read the promotion")
    return control, held


async def test_a_read_begun_before_a_move_does_not_undo_it(make_store: MakeStore) -> None:
    # The background read a call started reads the promotion made earlier; a rollback
    # here, then the read ends: applied, the share went back to 1 and the rollback's
    # event was gone in this process until the next read.
    control, held = await _reading_a_promotion(make_store)
    assert await control.move("rollback", "automatic", "candidate error rate 0.50")
    await held.ended()
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
    control, held = await _reading_a_promotion(make_store)
    await Control("shop", _config(), make_store()).move("rollback", "automatic",
                                                        "candidate error rate 0.50")
    await control.refresh()
    assert control.share == 0.0
    await held.ended()
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
