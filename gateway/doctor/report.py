"""What `a2a-gateway doctor` found, as plain data: the report's types and their JSON form.

The JSON form is the stable schema CI reads (report.schema.json beside this file);
every field below appears in it, always, so a reader never has to test for presence.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA_ID = "a2a-gateway-doctor/1"

# Per-operation results.
WORKS = "works"  # answered as the operation should (a result, or TaskNotFound for a random id)
ERROR = "error"  # the agent refused it, or does not serve it
SKIPPED = "skipped"  # not probed (needs --send, or no task to probe it on)
NA = "n/a"  # the operation does not exist in the interface's version

# Per-seed results.
PASS, DIFFERS, SEED_NA = "pass", "differs", "n.a."


@dataclass
class ErrorSeen:
    """An error as the agent gave it: the A2A error it reads as, and the wire's own code."""

    name: str  # e.g. TaskNotFoundError, or "NoA2AAnswer" for a bare 404 / UNIMPLEMENTED
    wire_code: str  # "-32001", "HTTP 404", "NOT_FOUND"
    message: str
    shape: str  # which dialect's error shape it had (e.g. "JSONRPC 1.0"), or "none"


@dataclass
class OperationResult:
    operation: str
    status: str  # WORKS | ERROR | SKIPPED | NA
    detail: str
    error: ErrorSeen | None = None


@dataclass
class InterfaceReport:
    url: str
    advertised_binding: str
    advertised_version: str
    reachable: bool = False
    # The (binding, version) dialects that answered as A2A on this URL, e.g. "JSONRPC 0.3".
    answered: list[str] = field(default_factory=list)
    agreement: str = "unreachable"  # "as advertised" | "differs" | "unreachable"
    note: str = ""
    operations: list[OperationResult] = field(default_factory=list)


@dataclass
class Loss:
    operation: str
    fields: list[str]
    effect: str  # what the loss policy does with it: "reported" | "rejected" | "carried"


@dataclass
class Refusal:
    operation: str
    reason: str


@dataclass
class ClientVerdict:
    """What the gateway would do for clients of one dialect in front of this agent."""

    binding: str
    version: str
    verdict: str  # "bridged" | "bridged, partly" | "refused"
    backend: str  # "JSONRPC 1.0 at http://..." or "" when none
    refused: list[Refusal] = field(default_factory=list)
    failing: list[Refusal] = field(default_factory=list)  # the backend itself refuses these
    lost: list[Loss] = field(default_factory=list)


@dataclass
class SeedResult:
    id: str
    result: str  # PASS | DIFFERS | SEED_NA
    why: str


@dataclass
class CardReport:
    url: str
    found: bool = False
    shape: str = ""  # "0.3" | "1.0" | "union" | "grpc 1.0" | "grpc 0.3"
    name: str = ""
    protocol_version: str = ""  # a v0.3 card's one protocolVersion
    capabilities: dict[str, bool] = field(default_factory=dict)
    extensions: list[str] = field(default_factory=list)
    required_extensions: list[str] = field(default_factory=list)
    error: str = ""


@dataclass
class TargetReport:
    name: str  # the URL doctor was given, or the tenant
    target: str
    card: CardReport
    interfaces: list[InterfaceReport] = field(default_factory=list)
    gateway_uses: str = ""  # the interface the gateway picks (or was configured with)
    clients: list[ClientVerdict] = field(default_factory=list)
    seeds: list[SeedResult] = field(default_factory=list)
    servable: bool = False
    problems: list[str] = field(default_factory=list)


@dataclass
class Report:
    targets: list[TargetReport]
    through_gateway: str = ""
    loss_policy: str = "report"
    sent: bool = False  # --send was given

    @property
    def ok(self) -> bool:
        return all(t.servable for t in self.targets)

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA_ID, "ok": self.ok, "through_gateway": self.through_gateway,
                "loss_policy": self.loss_policy, "sent": self.sent,
                "targets": [asdict(t) for t in self.targets]}
