"""What both stores' journals share (gateway/state/sqlite_journal.py,
gateway/state/redis_journal.py): how an event's bytes are told apart, and how the oldest
seq held becomes JournalRead.first."""

from __future__ import annotations

import hashlib


def event_digest(data: bytes) -> bytes:
    """The identity of an event's bytes in a journal (both stores use it)."""
    return hashlib.blake2b(data, digest_size=16).digest()


def held_first(first: int | None, last: int) -> int:
    """JournalRead.first from the oldest seq held (None: none): 0 for a journal that never
    held an entry; last + 1 for one whose entries were all trimmed away (the newest alone
    was over max_bytes), so that lost_after tells any cursor before ``last`` it lost some."""
    if last == 0:
        return 0
    return last + 1 if first is None else first
