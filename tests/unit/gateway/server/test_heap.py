"""A serving process, once started, freezes what it holds and collects young objects less
often (gateway/server/heap.py); the test process gets its own settings back."""

from __future__ import annotations

import gc

from gateway.server.heap import YOUNG_THRESHOLD, settle_after_start


def test_settle_after_start_freezes_the_heap_and_raises_the_young_threshold() -> None:
    before = gc.get_threshold()
    try:
        settle_after_start()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
