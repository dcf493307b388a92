"""What a migration writes in the store for the agent that serves a conversation or a task
(a binding's value, the agent of the task index's row), and how it reads one back.

The primary is written ``primary``; the candidate ``candidate@`` and a fingerprint of its
address (its `url`, or its `card` where it is discovered, and the `tenant` it is sent).
Records outlive a migration (bindings `owner_ttl`, rows `state.retention`: 7 days by
default), and the fingerprint is what lets the tenant's next migration read the records of
the one before: once that migration's candidate is the tenant's backend (the primary now,
at the same address), what it served is the primary's, not the new candidate's, which
never saw it. A record of a candidate at any other address (the candidate moved, or was
replaced by another) is the candidate's, as is one written without a fingerprint (by a
gateway from before this rule)."""

from __future__ import annotations

import hashlib

from gateway.config.backend import BackendConfig
from gateway.migration.sticky import CANDIDATE, PRIMARY, Arm

_CANDIDATE_AT = f"{CANDIDATE}@"


def fingerprint(config: BackendConfig) -> str:
    """A short stable digest of where ``config`` sends calls (12 hex digits): the same in
    every process, replica and version of this gateway."""
    address = (config.url or config.card or "").strip().rstrip("/")
    seed = f"{address}\x00{config.tenant or ''}".encode()
    return hashlib.blake2b(seed, digest_size=6).hexdigest()


class AgentNames:
    """The names one migration (its primary and candidate) writes and reads."""

    __slots__ = ("_primary", "candidate")

    def __init__(self, primary: BackendConfig | None, candidate: BackendConfig | None) -> None:
        """Either ``None``: the plain role names, with no fingerprint (what a store test
        that writes bindings by hand reads)."""
        self.candidate = (CANDIDATE if candidate is None
                          else _CANDIDATE_AT + fingerprint(candidate))
        self._primary = "" if primary is None else fingerprint(primary)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, AgentNames) and self.candidate == other.candidate
                and self._primary == other._primary)

    def __hash__(self) -> int:
        return hash((self.candidate, self._primary))

    def written(self, arm: Arm) -> str:
        """What the store records for ``arm``."""
        return self.candidate if arm == CANDIDATE else PRIMARY

    def read(self, value: str | None) -> Arm | None:
        """The arm a recorded ``value`` names (None: nothing recorded, or not a name of
        ours)."""
        if value == PRIMARY:
            return PRIMARY
        if value == self.candidate or value == CANDIDATE:
            return CANDIDATE
        if value is not None and value.startswith(_CANDIDATE_AT):
            # An earlier candidate: the primary's now where it is the tenant's backend.
            return PRIMARY if value[len(_CANDIDATE_AT):] == self._primary else CANDIDATE
        return None


PLAIN = AgentNames(None, None)
