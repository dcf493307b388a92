"""A call as it flows through the gateway: the operation, its canonical request, the
client's facts (set once by the ingress, never written after), what the stages decide on
its way (who called, the backend's headers, the loss report, the trace) and the outcome
(written as the call goes, read once by its one exit: the log line, the metrics, the
span)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.protobuf.message import Message as ProtoMessage

from translators.dialects.base import WireRequest
from translators.dialects.contract import Dialect
from translators.loss import FIRST_ATTEMPT, LossReport
from translators.operations import Operation

if TYPE_CHECKING:  # OpenTelemetry is imported only when tracing is on
    from opentelemetry.trace import Span


# The connection's verified client certificate: ssl's dict (HTTP) or its PEM (gRPC).
PeerCert = Mapping[str, Any] | bytes | None


def new_request_id() -> str:
    """128 random bits in hex, like a uuid4's hex form. An id to follow a call by, not a
    secret: the process's Mersenne Twister (seeded from the OS, reseeded in a forked
    child), without a system call per call as os.urandom makes. to_bytes().hex() writes
    the same 32 digits as format(..., "032x") in half the time."""
    return random.getrandbits(128).to_bytes(16, "big").hex()


@dataclass(frozen=True)
class Principal:
    """Who called, as the admission stage found it (gateway/auth)."""

    name: str
    method: str  # "api_key" | "jwt" | "mtls"
    scopes: frozenset[str] = frozenset()
    # Tenants this principal may call; None: any tenant whose auth accepted it.
    tenants: frozenset[str] | None = None
    claims: Mapping[str, object] = field(default_factory=dict, compare=False, repr=False)

    @property
    def key(self) -> str:
        """Identifies the principal across methods (rate-limit and concurrency keys)."""
        return f"{self.method}:{self.name}"


@dataclass(slots=True)
class CallTrace:
    """One call's trace: the client's trace headers and, when tracing is on, its spans."""

    carrier: dict[str, str]
    server: Span | None = None
    client: Span | None = None


@dataclass(slots=True)
class CallOutcome:
    tenant: str | None = None  # the configured tenant the call reached (metrics label)
    backend_version: str | None = None
    backend_binding: str | None = None
    # Seconds the backend took (its answer, or a stream's first event), and the reason
    # of an error it caused; both feed the metrics.
    backend_seconds: float | None = None
    backend_error: str | None = None
    # What the backend answered in headers that the client should see (e.g. activated
    # extensions), lowercase names.
    response_headers: dict[str, str] = field(default_factory=dict)
    events: int = 0
    forwarded: bool = False  # passed through as sent (same dialect on both sides)
    # The agent of the tenant's migration that serves the call ("primary", "candidate@"
    # and its address's digest: gateway/migration/agents.py; None: no migration follows
    # it by the task index, which records it with its tasks).
    agent: str | None = None
    # A stream read on into the journal after its client left: the backend's error that
    # ended it (nobody is told; the migration counts it against its agent).
    held_error: Exception | None = None


@dataclass(slots=True)  # not frozen: one per call (see WireRequest, dialects/contract.py)
class ClientFacts:
    """What the client's request said beside its payload, and when it came: set once by
    the ingress, read by every stage and never written after (what the stages decide is
    on CallContext)."""

    binding: str  # the client's binding; "webhook-relay" for the gateway's own calls
    request_id: str = field(default_factory=new_request_id)
    # Headers to pass to the backend, lowercase names (forward_headers, request id).
    forward_headers: Mapping[str, str] = field(default_factory=dict)
    extensions: tuple[str, ...] = ()
    deadline: float | None = None  # time.monotonic() value
    # The gateway's public HTTP base as this client reached it (cards list it).
    public_base: Callable[[], str] | None = None
    started: float = field(default_factory=time.monotonic)
    # What authentication reads (gateway/auth): the request's headers or gRPC metadata,
    # and the verified client certificate of the connection, if any.
    credentials: Mapping[str, Any] = field(default_factory=dict)
    peer_cert: PeerCert = None
    # The gateway's own call (the relay reading a task): no caller to authenticate.
    internal: bool = False
    # The SSE id a reconnecting client names (its `Last-Event-ID` header): where in its
    # task's journal its stream resumes (gateway/streams/journal.py).
    resume_from: str | None = None


@dataclass(slots=True)
class CallContext:
    """One call's state: the client's facts (frozen), what decoding its payload said,
    and what the stages decide and the call's end reports."""

    facts: ClientFacts
    client_version: str = ""  # what the payload spoke (set when it is decoded)
    # How the client's version names the extensions header (echoed extensions).
    extension_header: str = "A2A-Extensions"
    tenant: str | None = None  # the payload's tenant, then the configured one it reached
    # A call the gateway makes itself decoded nothing: its first translation is a backend's.
    loss: LossReport = field(default_factory=lambda: LossReport(attempt=FIRST_ATTEMPT))
    outcome: CallOutcome = field(default_factory=CallOutcome)
    trace: CallTrace | None = None  # the client's trace context, the call's spans
    principal: Principal | None = None  # who called, once admitted
    # Headers the backend gets: the forwarded ones and, once admitted, the credentials
    # the tenant's backend auth adds (gateway/auth/backend_creds.py).
    backend_headers: Mapping[str, str] = field(default_factory=dict)
    # The names of those that carry the gateway's own credential for the tenant's backend
    # (`backend_auth: replace`): never sent to another agent (a migration's candidate).
    gateway_credential: frozenset[str] = frozenset()
    # Gives the caller's slot back (max_streams_per_principal) when a stream is read on
    # after its client left (gateway/streams/driver.py): the caller is gone.
    on_leaving: Callable[[], None] | None = None
    # What its access line says (gateway/observability/logs/access.py): the operation,
    # once known, and the error it ended with (also a refusal before the operation was
    # known).
    operation: str | None = None
    error: BaseException | None = None
    finished: bool = False  # observe.finish ran: the call is counted, logged and traced
    # Its access line is written: once per call (a stream read on after its client left
    # has it written as the client leaves, not when the handler ends).
    logged: bool = False

    def __post_init__(self) -> None:
        if not self.backend_headers:
            self.backend_headers = self.facts.forward_headers

    def headers_for_another_agent(self) -> Mapping[str, str]:
        """:attr:`backend_headers` as an agent that is not the tenant's backend gets them
        (a migration's candidate, its shadow copies): without the gateway's credential
        for the tenant's backend, which is no other agent's to see."""
        shown = self.gateway_credential
        headers = self.backend_headers
        return {k: v for k, v in headers.items() if k not in shown} if shown else headers

    def remaining(self, default: float) -> float:
        deadline = self.facts.deadline
        if deadline is None:
            return default
        return max(0.001, min(default, deadline - time.monotonic()))


@dataclass(slots=True)
class Call:
    op: Operation
    request: ProtoMessage
    ctx: CallContext
    # The client's dialect (None for the gateway's own calls: the relay reading a task).
    dialect: Dialect | None = None
    # The backend's card (P10 JSON), when its pre-checks apply: the backend's dialect
    # refuses what it rules out before anything is sent.
    backend_card: dict[str, Any] | None = None
    # What the client sent, for a backend of the same dialect (translators.dialects.base).
    wire: WireRequest | None = None
