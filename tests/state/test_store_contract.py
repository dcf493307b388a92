"""One contract, two stores: every test here runs on SQLite and on a real Redis."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import Callable

import pytest

from gateway.state import (
    BadPageToken,
    KeptOwner,
    RetentionConfig,
    Store,
    TaskQuery,
    TaskRecord,
)
from gateway.state.retention import prune_forever
from gateway.state.sqlite_tasks import _CHUNK as CHUNK  # rows SQLite writes to a statement
from tests.support.waiting import wait_until

T0 = 1_700_000_000.0

# the make_store fixture (conftest.py): stores of one kind sharing one place
MakeStore = Callable[..., Store]


def rec(task_id: str, at: float, *, tenant: str = "t1", ctx: str = "c1",
        state: str = "TASK_STATE_WORKING", owner: str | None = None,
        backend: str = "b1") -> TaskRecord:
    return TaskRecord(tenant, task_id, ctx, state, at, at, owner, backend)


async def all_pages(store: Store, query: TaskQuery, size: int) -> list[str]:
    ids: list[str] = []
    token = ""
    while True:
        page = await store.list_tasks(query, size, token)
        assert len(page.records) <= size
        ids += [r.task_id for r in page.records]
        token = page.next_page_token
        if not token:
            return ids


async def test_upsert_and_get(store: Store) -> None:
    assert await store.get_task("t1", "a") is None
    first = TaskRecord("t1", "a", "c1", "TASK_STATE_SUBMITTED", T0, T0, "alice", "b1")
    await store.record_task(first)
    assert await store.get_task("t1", "a") == first
    # A newer status replaces state, context and backend; created_at and owner stay.
    await store.record_task(TaskRecord("t1", "a", "c1", "TASK_STATE_COMPLETED", T0 + 5,
                                       T0 + 5.123456, "mallory", "b2"))
    got = await store.get_task("t1", "a")
    assert got == TaskRecord("t1", "a", "c1", "TASK_STATE_COMPLETED", T0, T0 + 5.123456,
                             "alice", "b2")
    # An older one (a late webhook) does not move it back.
    await store.record_task(rec("a", T0 + 1, state="TASK_STATE_WORKING"))
    assert await store.get_task("t1", "a") == got


async def test_record_tasks_in_one_batch(store: Store) -> None:
    """A batch reads as the same records written one by one, in its order."""
    await store.record_tasks([])
    batch = [rec(f"b{i:03d}", T0 + i, owner="al" if i % 2 else None) for i in range(300)]
    batch += [rec("b005", T0 + 500, state="TASK_STATE_COMPLETED", owner="bo"),
              rec("b007", T0 - 1, state="TASK_STATE_FAILED", owner="bo"),
              rec("b001", T0 + 1, tenant="t2"),
              rec("ünï-😀 \"q\"", T0 + 0.5, ctx="ctx ✓", owner="ö", tenant="t3"),
              # Records with and without an owner, in their order: on a tie the later one
              # wins (written owner-first, "first" would).
              rec("tie", T0, ctx="first", tenant="t4"),
              rec("tie", T0, ctx="second", owner="al", tenant="t4")]
    await store.record_tasks(batch)
    assert await store.get_task("t4", "tie") == rec("tie", T0, ctx="second", owner="al",
                                                    tenant="t4")
    assert await store.get_task("t3", "ünï-😀 \"q\"") == rec(
        "ünï-😀 \"q\"", T0 + 0.5, ctx="ctx ✓", owner="ö", tenant="t3")
    page = await store.list_tasks(TaskQuery("t1"), 3)
    assert page.total_size == 300
    assert [(r.task_id, r.state) for r in page.records] == [
        ("b005", "TASK_STATE_COMPLETED"), ("b299", "TASK_STATE_WORKING"),
        ("b298", "TASK_STATE_WORKING")]
    assert await store.get_task("t1", "b005") == TaskRecord(
        "t1", "b005", "c1", "TASK_STATE_COMPLETED", T0 + 5, T0 + 500, "al", "b1")
    # An older status in the batch does not move the task back; the first owner stays.
    assert await store.get_task("t1", "b007") == rec("b007", T0 + 7, owner="al")
    assert await store.get_task("t1", "b004") == rec("b004", T0 + 4)
    assert [r.task_id for r in (await store.list_tasks(TaskQuery("t2"))).records] == ["b001"]


async def test_a_batch_of_long_runs_reads_as_records_written_one_by_one(
        store: Store) -> None:
    """Runs of tens of records with and without an owner (SQLite writes them many rows to
    a statement), tasks repeated inside a run, ties: the same as one by one."""
    rnd = random.Random(7)
    batch: list[TaskRecord] = []
    while len(batch) < 400:
        owner = rnd.choice([None, "al", "bo"])
        for _ in range(rnd.choice([1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 2 * CHUNK + 16])):
            at = T0 + rnd.randrange(30)
            batch.append(rec(f"k{rnd.randrange(120):03d}", at, tenant="batch", owner=owner,
                             ctx=rnd.choice(["c1", "c2"]),
                             state=rnd.choice(["TASK_STATE_WORKING", "TASK_STATE_FAILED"]),
                             backend=f"b{len(batch)}"))
    await store.record_tasks(batch)
    for r in batch:
        await store.record_task(TaskRecord("single", r.task_id, r.context_id, r.state,
                                           r.created_at, r.updated_at, r.owner, r.backend))
    ids = sorted({r.task_id for r in batch})
    for task_id in ids:
        got, want = await store.get_task("batch", task_id), await store.get_task(
            "single", task_id)
        assert want is not None and got is not None
        assert dataclasses.replace(got, tenant="single") == want, task_id
    assert (await store.list_tasks(TaskQuery("batch"))).total_size == len(ids)


async def test_owner_filled_later(store: Store) -> None:
    await store.record_task(rec("a", T0))
    await store.record_task(rec("a", T0 - 1, owner="alice"))
    got = await store.get_task("t1", "a")
    assert got is not None and got.owner == "alice" and got.updated_at == T0
    page = await store.list_tasks(TaskQuery("t1", owner="alice"))
    assert [r.task_id for r in page.records] == ["a"]


async def test_a_tasks_first_agent_stays_and_a_late_record_fills_a_missing_one(
        store: Store) -> None:
    # A migration follows its tasks by the agent recorded first (gateway/migration); a
    # relayed webhook carries none, and leaves it as it was.
    await store.record_task(dataclasses.replace(rec("a", T0), agent="candidate"))
    await store.record_task(rec("a", T0 + 1, backend="relay"))
    await store.record_task(dataclasses.replace(rec("a", T0 + 2), agent="primary"))
    got = await store.get_task("t1", "a")
    assert got is not None and got.agent == "candidate" and got.updated_at == T0 + 2
    await store.record_task(rec("b", T0))
    await store.record_task(dataclasses.replace(rec("b", T0 - 1, owner="al"), agent="primary"))
    got = await store.get_task("t1", "b")
    assert got is not None and (got.agent, got.owner, got.updated_at) == ("primary", "al", T0)
    # A batch too (SQLite writes it in chunks of one statement a kind of row).
    batch = [dataclasses.replace(rec(f"x{n}", T0 + n, owner="al" if n % 2 else None),
                                 agent=None if n % 3 else "candidate")
             for n in range(CHUNK + 5)]
    await store.record_tasks(batch)
    page = await store.list_tasks(TaskQuery("t1", context_id="c1"), 100)
    agents = {r.task_id: r.agent for r in page.records}
    assert agents == {"a": "candidate", "b": "primary",
                      **{r.task_id: r.agent for r in batch}}


async def test_ordering_status_timestamp_descending(store: Store) -> None:
    for i, at in enumerate([T0 + 3, T0 + 1, T0 + 2, T0 + 2, T0 + 0.5]):
        await store.record_task(rec(f"task-{i}", at))
    page = await store.list_tasks(TaskQuery("t1"))
    # ties: task id descending
    assert [r.task_id for r in page.records] == ["task-0", "task-3", "task-2", "task-1",
                                                 "task-4"]
    assert page.next_page_token == "" and page.total_size == 5
    # An update moves a task to the front.
    await store.record_task(rec("task-4", T0 + 10))
    page = await store.list_tasks(TaskQuery("t1"))
    assert page.records[0].task_id == "task-4"


async def test_filters(store: Store) -> None:
    await store.record_task(rec("a", T0 + 1, ctx="c1", state="TASK_STATE_WORKING", owner="al"))
    await store.record_task(rec("b", T0 + 2, ctx="c2", state="TASK_STATE_COMPLETED", owner="al"))
    await store.record_task(rec("c", T0 + 3, ctx="c1", state="TASK_STATE_COMPLETED", owner="bo"))
    await store.record_task(rec("d", T0 + 4, ctx="c2", state="TASK_STATE_FAILED"))

    async def ids(**kw: object) -> tuple[list[str], int]:
        page = await store.list_tasks(TaskQuery("t1", **kw))  # type: ignore[arg-type]
        return [r.task_id for r in page.records], page.total_size

    assert await ids() == (["d", "c", "b", "a"], 4)
    assert await ids(context_id="c1") == (["c", "a"], 2)
    assert await ids(states={"TASK_STATE_COMPLETED"}) == (["c", "b"], 2)
    assert await ids(states=["TASK_STATE_COMPLETED", "TASK_STATE_FAILED"]) == (["d", "c", "b"], 3)
    assert await ids(status_after=T0 + 2) == (["d", "c", "b"], 3)  # inclusive
    assert await ids(owner="al") == (["b", "a"], 2)
    assert await ids(owner="nobody") == ([], 0)
    assert await ids(owner="al", context_id="c2") == (["b"], 1)
    assert await ids(context_id="c1", states={"TASK_STATE_COMPLETED"}, owner="bo",
                     status_after=T0 + 3) == (["c"], 1)
    assert await ids(context_id="c3") == ([], 0)


async def test_owner_scoping_and_tenant_isolation(store: Store) -> None:
    await store.record_task(rec("a", T0 + 1, owner="alice"))
    await store.record_task(rec("b", T0 + 2, owner="bob"))
    await store.record_task(rec("a", T0 + 3, tenant="t2", owner="alice"))
    alice = await store.list_tasks(TaskQuery("t1", owner="alice"))
    assert [(r.tenant, r.task_id) for r in alice.records] == [("t1", "a")]
    everyone = await store.list_tasks(TaskQuery("t1"))
    assert [r.task_id for r in everyone.records] == ["b", "a"]
    other = await store.list_tasks(TaskQuery("t2"))
    assert [(r.tenant, r.task_id, r.updated_at) for r in other.records] == [("t2", "a", T0 + 3)]
    t1a = await store.get_task("t1", "a")
    assert t1a is not None and t1a.updated_at == T0 + 1
    assert await store.get_task("t3", "a") is None


@pytest.mark.parametrize("query", [TaskQuery("t1"), TaskQuery("t1", owner="o"),
                                   TaskQuery("t1", context_id="c1"),
                                   TaskQuery("t1", states={"TASK_STATE_WORKING"})])
async def test_paging_to_the_end(store: Store, query: TaskQuery) -> None:
    # 23 tasks, several sharing a timestamp, pages of 5.
    expected = []
    for i in range(23):
        r = rec(f"t{i:02d}", T0 + i // 3, owner="o")
        await store.record_task(r)
        expected.append(r)
    expected.sort(key=lambda r: (r.updated_at, r.task_id), reverse=True)
    first = await store.list_tasks(query, 5)
    assert first.total_size == 23 and first.next_page_token
    assert await all_pages(store, query, 5) == [r.task_id for r in expected]
    assert await all_pages(store, query, 23) == [r.task_id for r in expected]
    assert await all_pages(store, query, 100) == [r.task_id for r in expected]


async def test_paging_stable_under_inserts(store: Store) -> None:
    for i in range(20):
        await store.record_task(rec(f"old{i:02d}", T0 + i))
    query, seen, token = TaskQuery("t1"), [], ""
    n = 0
    while True:
        page = await store.list_tasks(query, 3, token)
        seen += [r.task_id for r in page.records]
        # New tasks arrive while the client pages: they sort before the cursor.
        await store.record_task(rec(f"new{n:02d}", T0 + 100 + n))
        n += 1
        token = page.next_page_token
        if not token:
            break
    assert seen == [f"old{i:02d}" for i in reversed(range(20))]


async def test_page_size_bounds_and_bad_token(store: Store) -> None:
    for i in range(120):
        await store.record_task(rec(f"t{i:03d}", T0 + i))
    assert len((await store.list_tasks(TaskQuery("t1"))).records) == 50
    assert len((await store.list_tasks(TaskQuery("t1"), 1000)).records) == 100
    with pytest.raises(BadPageToken):
        await store.list_tasks(TaskQuery("t1"), 5, "not a token!")


async def test_retention(make_store: MakeStore) -> None:
    store = make_store(RetentionConfig(max_age=0, max_tasks=5))
    for i in range(10):
        await store.record_task(rec(f"t{i}", T0 + i, owner="o", ctx=f"c{i % 2}"))
    await store.record_task(rec("x", T0 + 20, tenant="t2"))
    # Older than T0 + 3: three go; then the bound: of the 8 left in all, the 3 least
    # recently updated go.
    assert await store.prune(T0 + 3) == 6
    page = await store.list_tasks(TaskQuery("t1"))
    assert [r.task_id for r in page.records] == ["t9", "t8", "t7", "t6"]
    assert (await store.list_tasks(TaskQuery("t1", context_id="c0"))).total_size == 2
    assert (await store.list_tasks(TaskQuery("t1", owner="o"))).total_size == 4
    assert await store.get_task("t1", "t5") is None
    assert await store.get_task("t2", "x") is not None
    assert await store.prune() == 0
    # max_age by default
    aged = make_store(RetentionConfig(max_age=60, max_tasks=0))
    await aged.record_task(rec("fresh", time.time()))
    assert await aged.prune() == 5
    assert [r.task_id for r in (await aged.list_tasks(TaskQuery("t1"))).records] == ["fresh"]


async def test_pruning_binds_the_conversations_of_the_tasks_it_drops_where_kept(
        make_store: MakeStore) -> None:
    # A migration follows its primary's conversations by the tasks the index holds of
    # them: pruning binds what it drops, as a claim does, for the tenants it is told of.
    store = make_store(RetentionConfig(max_age=0, max_tasks=3))
    for n, ctx in enumerate(["c-old", "c-bound", "c-count", ""]):
        await store.record_task(rec(f"t{n}", T0 + n, tenant="shop", ctx=ctx))
    await store.record_task(rec("x", T0, tenant="other", ctx="c-x"))
    for n in range(3):  # newer: they stay
        await store.record_task(rec(f"new{n}", T0 + 10 + n, tenant="shop", ctx="c-new"))
    await store.claim("m:shop:c-bound", "candidate", 60)  # a live binding stays
    kept = {"shop": KeptOwner("m:shop:", "primary", 60), "gone": KeptOwner("m:g:", "x", 60)}
    # By age: x, t0, t1; then by count, of the 5 left: t2, t3 (no conversation).
    assert await store.prune(T0 + 2, kept) == 5
    assert await store.claimed("m:shop:c-old") == "primary"
    assert await store.claimed("m:shop:c-count") == "primary"
    assert await store.claimed("m:shop:c-bound") == "candidate"
    assert await store.claimed("m:shop:c-x") is None  # another tenant's: not kept
    assert await store.claimed("m:shop:") is None
    assert await store.claimed("m:shop:c-new") is None
    # Without `kept` pruning binds nothing.
    await store.record_task(rec("late", T0 + 20, tenant="shop", ctx="c-late"))
    assert await store.prune(T0 + 100) == 4
    assert await store.claimed("m:shop:c-late") is None


async def test_pruning_binds_a_dropped_task_and_its_conversation_to_its_agent(
        make_store: MakeStore) -> None:
    # A candidate's task is followed by the agent its row records, not by a binding: a
    # row dropped leaves both bound to the candidate; a task of the default agent (or
    # of none) leaves only its conversation bound.
    store = make_store(RetentionConfig(max_age=0, max_tasks=0))
    for task, ctx, agent in [("t-c", "c-c", "candidate"), ("t-p", "c-p", "primary"),
                             ("t-n", "c-n", None)]:
        await store.record_task(dataclasses.replace(rec(task, T0, tenant="shop", ctx=ctx),
                                                    agent=agent))
    kept = {"shop": KeptOwner("m:shop:c:", "primary", 60, tasks="m:shop:t:")}
    assert await store.prune(T0 + 1, kept) == 3
    assert [await store.claimed(f"m:shop:c:{c}") for c in ("c-c", "c-p", "c-n")] == [
        "candidate", "primary", "primary"]
    assert [await store.claimed(f"m:shop:t:{t}") for t in ("t-c", "t-p", "t-n")] == [
        "candidate", None, None]


async def test_pruning_binds_a_conversation_once_no_task_of_it_is_left(
        make_store: MakeStore) -> None:
    # A conversation no one bound goes to the agent of its newest task in the index:
    # pruning binds it only with its last task, to that task's agent, by age and by
    # count alike (ids ordered against time, so no store goes by id). One store below,
    # read through connections with different retention rules.
    kept = {"shop": KeptOwner("m:shop:c:", "primary", 60)}

    async def task(store: Store, task_id: str, ctx: str, at: float,
                   agent: str | None) -> None:
        await store.record_task(dataclasses.replace(
            rec(task_id, at, tenant="shop", ctx=ctx), agent=agent))

    aged = make_store(RetentionConfig(max_age=0, max_tasks=0))
    await task(aged, "z-old", "c-age", T0, "candidate")
    await task(aged, "a-new", "c-age", T0 + 5, None)
    assert await aged.prune(T0 + 1, kept) == 1
    assert await aged.claimed("m:shop:c:c-age") is None  # its newer task still says
    assert await aged.prune(T0 + 10, kept) == 1
    assert await aged.claimed("m:shop:c:c-age") == "primary"
    counted = make_store(RetentionConfig(max_age=0, max_tasks=1))
    await task(counted, "z-old", "c-count", T0, "primary")
    await task(counted, "a-new", "c-count", T0 + 5, "candidate")
    assert await counted.prune(None, kept) == 1
    assert await counted.claimed("m:shop:c:c-count") is None
    await task(counted, "other", "c-other", T0 + 9, None)
    assert await counted.prune(None, kept) == 1
    assert await counted.claimed("m:shop:c:c-count") == "candidate"
    assert await aged.prune(T0 + 10, kept) == 1  # (c-other's, for the next)
    await task(aged, "z-old", "c-both", T0, "candidate")
    await task(aged, "a-new", "c-both", T0 + 5, "primary")
    assert await aged.prune(T0 + 10, kept) == 2  # dropped at once
    assert await aged.claimed("m:shop:c:c-both") == "primary"


async def test_seen_once_atomic(make_store: MakeStore) -> None:
    a, b = make_store(), make_store()  # two connections (workers or replicas)
    results = await asyncio.gather(*(s.seen_once("n1", 60) for s in [a, b] * 25))
    assert sorted(results) == [False] * 49 + [True]
    assert await a.seen_once("n2", 60) and not await b.seen_once("n2", 60)
    # Forgotten after its ttl.
    assert await a.seen_once("short", 0.2)
    assert not await b.seen_once("short", 0.2)
    await asyncio.sleep(0.3)
    assert await b.seen_once("short", 0.2)


async def test_claim(make_store: MakeStore) -> None:
    a, b = make_store(), make_store()
    results = await asyncio.gather(*(s.claim("seal", f"task-{i}", 60)
                                     for i, s in enumerate([a, b] * 10)))
    assert len(set(results)) == 1 and results[0].startswith("task-")
    assert await b.claim("seal", "other", 60) == results[0]


async def test_spent(make_store: MakeStore) -> None:
    a, b = make_store(), make_store()
    assert not await a.is_spent("s1")
    await a.mark_spent("s1", 60)
    assert await b.is_spent("s1")
    # Spent after a delay; a second mark does not move it.
    await a.mark_spent("s2", 60, after=0.3)
    await b.mark_spent("s2", 60, after=100)
    assert not await b.is_spent("s2")
    await asyncio.sleep(0.4)
    assert await b.is_spent("s2")
    # Forgotten after ttl.
    await a.mark_spent("s3", 0.2)
    assert await a.is_spent("s3")
    await asyncio.sleep(0.3)
    assert not await a.is_spent("s3")


async def test_token_bucket(make_store: MakeStore) -> None:
    a, b = make_store(), make_store()
    # burst 5, 10 per second, shared by two connections
    results = [await s.take_tokens("k", 10, 5) for s in [a, b, a, b, a]]
    assert all(ok for ok, _ in results)
    ok, retry = await b.take_tokens("k", 10, 5)
    assert not ok and 0 < retry <= 0.1 + 0.01
    await asyncio.sleep(retry + 0.02)
    assert (await a.take_tokens("k", 10, 5))[0]
    assert not (await a.take_tokens("k", 10, 5))[0]
    # Another key has its own bucket; a cost above the burst never passes.
    assert (await a.take_tokens("k2", 10, 5, cost=5))[0]
    assert (await a.take_tokens("k3", 10, 5, cost=6)) == (False, float("inf"))


async def test_token_bucket_concurrent(make_store: MakeStore) -> None:
    a, b = make_store(), make_store()
    results = await asyncio.gather(*(s.take_tokens("burst", 0.001, 10) for s in [a, b] * 20))
    assert sum(ok for ok, _ in results) == 10


async def test_ping_and_close(make_store: MakeStore) -> None:
    store = make_store()
    assert isinstance(store, Store) and store.backend in ("sqlite", "redis")
    await store.ping()
    await store.close()


def _four_tasks(make_store: MakeStore) -> Store:
    """A store kept to 2 tasks, not pruned yet; :func:`_pruned_on_a_timer` adds 4."""
    return make_store(RetentionConfig(max_age=0, max_tasks=2))


async def _pruned_on_a_timer(store: Store, interval: float) -> None:
    """Four tasks recorded, then pruned by ``prune_forever`` until 2 are left."""
    for i in range(4):
        await store.record_task(rec(f"t{i}", T0 + i))
    pruner = asyncio.create_task(prune_forever(store, interval))
    try:
        async def pruned() -> bool:
            return (await store.list_tasks(TaskQuery("t1"))).total_size == 2

        await wait_until(pruned, "pruned to 2 tasks")
    finally:
        pruner.cancel()


async def test_pruned_on_a_timer(make_store: MakeStore) -> None:
    store = _four_tasks(make_store)
    await _pruned_on_a_timer(store, 0.05)
    assert [r.task_id for r in (await store.list_tasks(TaskQuery("t1"))).records] == ["t3", "t2"]


async def test_pruning_goes_on_after_a_failure_of_ours(make_store: MakeStore) -> None:
    # Only the store's errors were caught: any other ended the pruning task for the life
    # of the process, and the index grew without its bound.
    store = _four_tasks(make_store)
    real, calls = store.prune, []

    async def failing_once(**kwargs: object) -> int:
        calls.append(kwargs)
        if len(calls) == 1:
            raise OverflowError("cannot convert float infinity to integer")
        return await real(**kwargs)  # type: ignore[arg-type]

    store.prune = failing_once  # type: ignore[method-assign]
    await _pruned_on_a_timer(store, 0.01)
    assert len(calls) >= 2


async def test_prune_forgets_expired_relay_and_bucket_entries(store: Store) -> None:
    assert await store.seen_once("gone", 0.05)
    await store.take_tokens("b", 1000, 1)
    await asyncio.sleep(0.1)
    await store.prune()
    assert await store.seen_once("gone", 60)


async def test_a_swap_replaces_only_the_value_expected(store: Store) -> None:
    assert await store.swap("setting", None, "one", 60)  # bound to nothing: bound now
    assert not await store.swap("setting", None, "two", 60)  # bound already
    assert not await store.swap("setting", "zero", "two", 60)  # another value expected
    assert await store.claimed("setting") == "one"
    assert await store.swap("setting", "one", "two", 60)
    assert await store.claimed("setting") == "two"
    # The same swap again (its reply was lost, the write retried): done already.
    assert await store.swap("setting", "one", "two", 60)
    assert not await store.swap("setting", "one", "three", 60)
    if store.backend == "redis":
        return  # Redis expires a binding itself (PX): nothing of it is left to swap
    await store.rebind("gone", "old", -1)  # expired: bound to nothing
    assert not await store.swap("gone", "old", "new", 60)
    assert await store.swap("gone", None, "new", 60)
    assert await store.claimed("gone") == "new"
