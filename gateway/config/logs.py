"""The `log:` section of the config: level, format and the access line
(docs/observability.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from gateway.config.strict import STRICT

LogLevel = Literal["debug", "info", "warning", "error"]

# Every field an access line can carry, in the order it carries them (docs/observability.md).
ACCESS_FIELDS = (
    "request_id", "client", "method", "path", "tenant", "operation", "client_version",
    "client_binding", "backend_version", "backend_binding", "status", "grpc_code",
    "outcome", "error_code", "bytes_in", "bytes_out", "duration_ms", "trace_id",
    "principal", "auth", "stream_events", "forwarded", "dropped", "error_message")


class AccessLogConfig(BaseModel):
    model_config = STRICT

    enabled: bool = Field(True, description="One line (event `call`) per HTTP request, gRPC "
                          "call and stream (when it ends); false: none")
    sample: float = Field(1.0, ge=0.0, le=1.0, description="Share of successful requests "
                          "logged (0.1: one in ten, drawn at random); a request that failed "
                          "(HTTP status >= 400, a gRPC status other than OK, an A2A error) is "
                          "always logged")
    fields: list[str] | None = Field(None, description="The fields an access line carries "
                                     "(besides event, level, timestamp, worker); null: all "
                                     "of them (docs/observability.md)")
    skip_paths: list[str] = Field(
        default_factory=lambda: ["/healthz", "/readyz", "/metrics"],
        description="HTTP paths whose successful requests are not logged (probes and "
        "scrapes); their failures are")

    @field_validator("fields")
    @classmethod
    def _known(cls, value: list[str] | None) -> list[str] | None:
        unknown = [f for f in value or () if f not in ACCESS_FIELDS]
        if unknown:
            raise ValueError(f"unknown access field(s) {unknown}; known: "
                             f"{', '.join(ACCESS_FIELDS)}")
        return value


OLDER_LEVEL = "Older name of log.level, still read; log.level wins when both are set"


class LogConfig(BaseModel):
    """What the gateway writes on stderr and how (docs/observability.md)."""

    model_config = STRICT

    level: LogLevel = Field("info", description="Lines below this level are not written "
                            "(the top-level `log_level` is an older name for it)")
    format: Literal["json", "console"] = Field(
        "json", description="json: one JSON object per line on stderr (what a log shipper "
        "reads); console: aligned text for a person at a terminal (colors on a TTY only)")
    access: AccessLogConfig = Field(default_factory=AccessLogConfig)

    def take_older_level(self, level: LogLevel | None) -> None:
        """The top-level `log_level` of configs written before `log:`, unless `log.level`
        is set."""
        if level is not None and "level" not in self.model_fields_set:
            self.level = level
