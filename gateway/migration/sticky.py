"""Which arm a new conversation goes to: a stable hash of the tenant and the conversation's
key, the same in every process and replica (Python's own hash() is salted per process),
so no conversation flips between agents while the share stays."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Literal

Arm = Literal["primary", "candidate"]
PRIMARY: Arm = "primary"
CANDIDATE: Arm = "candidate"
ARMS: tuple[Arm, ...] = (PRIMARY, CANDIDATE)

_SCALE = float(1 << 64)


def point(tenant: str, key: str) -> float:
    """Where ``key`` falls in [0, 1), for ``tenant``: uniform, and stable across processes,
    restarts and versions of this gateway."""
    hashed = _seeded(tenant).copy()  # copying the tenant's part costs less than making it
    hashed.update(key.encode())
    return int.from_bytes(hashed.digest(), "big") / _SCALE


@lru_cache(maxsize=1024)
def _seeded(tenant: str) -> hashlib.blake2b:
    """BLAKE2b (8 bytes) fed ``tenant`` and a NUL, ready for a key: never fed more, only
    copied."""
    return hashlib.blake2b(f"{tenant}\x00".encode(), digest_size=8)


def arm_for(tenant: str, key: str, share: float) -> Arm:
    """The arm of a new conversation: the candidate for the first ``share`` of the hash
    space. Raising the share moves only conversations from the primary to the candidate
    (the points below the old share stay below the new one)."""
    return CANDIDATE if point(tenant, key) < share else PRIMARY
