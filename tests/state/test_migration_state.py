"""What migration mode keeps in the store, on SQLite and Redis alike, as two workers or
replicas share it: owners of conversations and tasks (the first binding wins and is seen
by the other), the canary's share moved in one process and read in the other."""

from __future__ import annotations

from gateway.config.migration import MigrationConfig
from gateway.migration.control import Control
from gateway.migration.owners import Owners
from tests.state.conftest import MakeStore


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
    assert b.known("shop", "context", "c-1") == "candidate"  # no second read


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
    assert b.known("shop", "task", "t-1") == "candidate"
    assert await Owners(make_store(), 60).owner("shop", "context", "c-1") == "candidate"
