"""A call as it flows through the gateway: the operation, its canonical request, context."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from google.protobuf.message import Message as ProtoMessage

from translators.loss import LossReport
from translators.operations import Operation


@dataclass
class CallContext:
    client_version: str
    client_binding: str
    tenant: str | None = None
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # Headers to pass to the backend, lowercase names (auth, extensions, request id).
    forward_headers: dict[str, str] = field(default_factory=dict)
    extensions: list[str] = field(default_factory=list)
    deadline: float | None = None  # time.monotonic() value
    loss: LossReport = field(default_factory=LossReport)
    started: float = field(default_factory=time.monotonic)
    # What the backend answered in headers that the client should see (e.g. activated
    # extensions), lowercase names.
    response_headers: dict[str, str] = field(default_factory=dict)
    # The gateway's public HTTP base as this client reached it (cards list it).
    public_base: str | None = None
    backend_version: str | None = None
    # Seconds the backend took (its answer, or a stream's first event), and the reason
    # of an error it caused; both feed the metrics.
    backend_seconds: float | None = None
    backend_error: str | None = None
    backend_binding: str | None = None
    events: int = 0

    def remaining(self, default: float) -> float:
        if self.deadline is None:
            return default
        return max(0.001, min(default, self.deadline - time.monotonic()))


@dataclass
class Call:
    op: Operation
    request: ProtoMessage
    ctx: CallContext
