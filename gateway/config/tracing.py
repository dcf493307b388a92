"""The `tracing` section of the configuration (gateway/observability/tracing.py does the
tracing)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from gateway.config.strict import STRICT


class TracingConfig(BaseModel):
    """OpenTelemetry tracing: spans per call, exported over OTLP."""

    model_config = STRICT

    exporter: Literal["none", "otlp-grpc", "otlp-http", "console", "memory"] = Field(
        "none", description="Where spans go: `none` (tracing off; traceparent/tracestate "
        "are still passed on to the backend as the client sent them), OTLP over gRPC or "
        "HTTP, stdout (`console`) or an in-process list (`memory`, for tests)")
    endpoint: str | None = Field(None, description="OTLP endpoint: host:port or "
                                 "http(s)://host:port for otlp-grpc (default "
                                 "localhost:4317); a URL for otlp-http (/v1/traces is "
                                 "added when it has no path; default "
                                 "http://localhost:4318/v1/traces)")
    service_name: str = Field("a2a-gateway", description="service.name of the spans")
    sample_ratio: float = Field(1.0, ge=0, le=1, description="Share of new traces sampled; "
                                "a call whose client sent a trace context follows its "
                                "sampled flag (parent-based)")
    headers: dict[str, str] = Field(default_factory=dict, description="Headers sent to the "
                                    "OTLP endpoint (e.g. an API key)")
