"""The store contract against a model: random tasks and updates, every query paged to the
end (on SQLite and on Redis)."""

from __future__ import annotations

import random

from gateway.state import Store, TaskQuery, TaskRecord

T0 = 1_700_000_000.0


async def test_matches_a_model(store: Store) -> None:
    """Random tasks, updates (state, context and owner changes), a pruning; every query
    paged to the end equals the model's filtered, ordered list."""
    rnd = random.Random(13)
    states = ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED",
              "TASK_STATE_INPUT_REQUIRED"]
    model: dict[tuple[str, str], TaskRecord] = {}
    for step in range(150):
        tenant, task_id = rnd.choice(["t1", "t2"]), f"task-{rnd.randrange(60):02d}"
        at = T0 + rnd.randrange(40)  # many ties
        new = TaskRecord(tenant, task_id, rnd.choice(["c1", "c2", "c3"]), rnd.choice(states),
                         at, at, rnd.choice([None, "al", "bo"]), f"b{step}")
        await store.record_task(new)
        old = model.get((tenant, task_id))
        if old is None:
            model[(tenant, task_id)] = new
        elif new.updated_at >= old.updated_at:
            model[(tenant, task_id)] = TaskRecord(
                tenant, task_id, new.context_id, new.state, old.created_at, new.updated_at,
                old.owner or new.owner, new.backend)
        elif old.owner is None and new.owner is not None:
            model[(tenant, task_id)] = TaskRecord(
                tenant, task_id, old.context_id, old.state, old.created_at, old.updated_at,
                new.owner, old.backend)
    assert await store.prune(T0 + 5) == sum(r.updated_at < T0 + 5 for r in model.values())
    model = {k: r for k, r in model.items() if r.updated_at >= T0 + 5}
    multi_page = 0
    for _ in range(60):
        query = TaskQuery(rnd.choice(["t1", "t2"]), owner=rnd.choice([None, "al", "bo"]),
                          context_id=rnd.choice([None, None, "c1", "c2"]),
                          states=rnd.choice([None, set(rnd.sample(states, rnd.randint(1, 3)))]),
                          status_after=rnd.choice([None, T0 + rnd.randrange(40)]))
        want = sorted((r for r in model.values() if query.matches(r)),
                      key=lambda r: (r.updated_at, r.task_id), reverse=True)
        size = rnd.choice([1, 2, 3, 7, 50])
        multi_page += len(want) > size
        records, token = [], ""
        while True:
            page = await store.list_tasks(query, size, token)
            assert page.total_size == len(want)
            records += page.records
            token = page.next_page_token
            if not token:
                break
        assert records == want, query
    assert multi_page > 20
