"""The gateway an HTTP app serves, as the app keeps it (typed, so the ingress reads it
without a cast): a config reload swaps `current`; the open streams stay in `streams`."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.pipeline.core import Gateway
from gateway.streams.registry import Streams


@dataclass
class GatewayHolder:
    """The gateway in use; a config reload swaps it without touching open connections."""

    current: Gateway
    streams: Streams = field(default_factory=Streams)
