"""What a migration records for each agent, and how a later migration of the tenant reads
it (gateway/migration/agents.py)."""

from __future__ import annotations

from gateway.config.backend import BackendConfig
from gateway.migration.agents import PLAIN, AgentNames, fingerprint
from gateway.migration.sticky import CANDIDATE, PRIMARY


def backend(url: str, tenant: str | None = None) -> BackendConfig:
    return BackendConfig(url=url, version="1.0", tenant=tenant)


LEGACY, SUCCESSOR, NEXT = (backend("http://legacy:9000/"), backend("http://successor:9000/"),
                           backend("http://next:9000/"))


def test_the_candidate_is_recorded_by_its_address() -> None:
    first = AgentNames(LEGACY, SUCCESSOR)
    assert first.written(PRIMARY) == "primary"
    assert first.written(CANDIDATE) == f"candidate@{fingerprint(SUCCESSOR)}"
    assert len(fingerprint(SUCCESSOR)) == 12
    # The same address however it is written; another tenant of one agent is another.
    assert fingerprint(backend("http://successor:9000")) == fingerprint(SUCCESSOR)
    assert fingerprint(backend("http://successor:9000/", "t-2")) != fingerprint(SUCCESSOR)
    assert fingerprint(BackendConfig(card="http://successor:9000/card")) != \
        fingerprint(SUCCESSOR)


def test_the_next_migration_reads_the_earlier_candidate_as_the_primary_it_became() -> None:
    first = AgentNames(LEGACY, SUCCESSOR)
    recorded = first.written(CANDIDATE)
    assert first.read(recorded) == CANDIDATE
    # The successor is the tenant's backend now, and another agent its candidate: what
    # the successor served stays with it.
    assert AgentNames(SUCCESSOR, NEXT).read(recorded) == PRIMARY
    # The candidate moved (or was replaced): its records are the candidate's, as before.
    assert AgentNames(LEGACY, NEXT).read(recorded) == CANDIDATE
    # The candidate is the primary itself (A/A): the candidate's.
    assert AgentNames(SUCCESSOR, SUCCESSOR).read(recorded) == CANDIDATE


def test_role_names_without_a_fingerprint_are_read_as_they_say() -> None:
    names = AgentNames(SUCCESSOR, NEXT)
    assert names.read("candidate") == CANDIDATE  # a gateway from before the fingerprint
    assert names.read("primary") == PRIMARY
    assert names.read(None) is None and names.read("") is None
    assert names.read("someone") is None
    assert PLAIN.written(CANDIDATE) == "candidate" and PLAIN.read("candidate") == CANDIDATE
    assert names == AgentNames(backend("http://successor:9000"), NEXT) != PLAIN
