"""`push_relay.queue:` in the gateway config: the durable delivery queue's bounds
(docs/push-relay.md, "Delivery guarantees")."""

from __future__ import annotations

from pydantic import BaseModel, Field

from gateway.config.strict import STRICT


class RelayBreakerConfig(BaseModel):
    """The circuit breaker each process keeps per destination (docs/push-relay.md,
    "Destinations")."""

    model_config = STRICT

    failures: int = Field(5, ge=0, description="Retryable failures in a row (timeouts, "
                          "connection errors, 408/425/429, 5xx) that open a destination's "
                          "circuit (0: no breaker)")
    cool_down: float = Field(30.0, gt=0, description="Seconds an open circuit stays open; "
                             "its due deliveries wait without spending an attempt, then "
                             "one probe goes")


class RelayQueueConfig(BaseModel):
    """Where relayed notifications wait for their delivery, and for how long."""

    model_config = STRICT

    max_per_tenant: int = Field(10_000, gt=0, description="Deliveries waiting per tenant at "
                                "most; past it a backend's notification is refused (503 + "
                                "Retry-After: the agent retries)")
    max_body: int = Field(1024 * 1024, gt=0, description="Bytes of one notification's body "
                          "at most (413 past it)")
    max_backoff: float = Field(3600.0, gt=0, description="Seconds between two attempts at "
                               "most (the backoff doubles up to it; a Retry-After too)")
    jitter: float = Field(0.2, ge=0, le=1, description="Each backoff is moved by up to this "
                          "fraction either way, so receivers that come back are not hit "
                          "all at once")
    lease: float = Field(60.0, gt=0, description="Seconds a process holds a delivery it "
                         "claimed; one that dies holding it leaves it to others after this "
                         "(must exceed push_relay.timeout)")
    poll: float = Field(1.0, gt=0, description="Seconds between two looks at the queue for "
                        "deliveries other processes queued or that came due")
    dead_letter_ttl: float = Field(3 * 24 * 3600.0, gt=0, description="Seconds a delivery "
                                   "that exhausted its attempts is kept for `a2a-gateway "
                                   "relay` (list, show, replay, drop)")
    concurrency: int = Field(64, gt=0, description="Deliveries one process makes at once "
                             "(each (config, task) one at a time, in order)")
    # Also the delivery connection pool's per-host limit (at most its 256 in all), so an
    # attempt's timeout never runs while it waits for a pooled connection.
    per_destination: int = Field(16, gt=0, le=256, description="Deliveries one process "
                                 "makes at once to one destination (scheme, host and "
                                 "port); the others wait, no attempt spent")
    breaker: RelayBreakerConfig = Field(default_factory=RelayBreakerConfig)
