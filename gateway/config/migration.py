"""`tenants.<name>.migration:` — a legacy agent and its successor behind one tenant
(docs/migration.md): the candidate backend, the mode, the canary's share, what shadowing
mirrors and how answers are compared, and when the canary is rolled back by itself."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from gateway.config.backend import BackendConfig, _Model
from translators.answer_diff import parse_pattern

MigrationMode = Literal["off", "shadow", "canary", "cutover"]


def _mode(value: Any) -> Any:
    # YAML 1.1 reads a bare `off` as the boolean false: `mode: off` means the mode.
    return "off" if value is False else value

# The operations a shadow copy makes by default: it changes nothing at the agent.
READ_ONLY = ("GetTask",)
# What may be mirrored at all: push configs never are (the candidate would post to the
# client's webhook), nor cancels or subscriptions (their effect or length is the
# primary's); ListTasks is answered from the task index in migration mode.
MIRRORABLE = (*READ_ONLY, "GetExtendedAgentCard", "SendMessage", "SendStreamingMessage")


class CanaryConfig(_Model):
    share: float = Field(0.1, ge=0, le=1, description="Share of new conversations the "
                         "candidate gets in `canary` mode (0..1), chosen by a stable hash "
                         "of tenant + contextId (the caller's principal when there is no "
                         "context yet)")
    fall_back: bool = Field(True, description="A new conversation whose candidate refuses "
                            "the connection (nothing sent) goes to the primary instead")


class CompareConfig(_Model):
    text: Literal["exact", "normalized", "similarity"] = Field(
        "normalized", description="How text parts compare: `exact`, `normalized` (case and "
        "whitespace ignored), `similarity` (at least `similarity` alike)")
    similarity: float = Field(0.9, ge=0, le=1, description="With text `similarity`: the "
                              "least ratio (difflib) that counts as the same text")
    ignore: list[str] = Field(default_factory=list, description="Paths never compared, e.g. "
                              "`artifacts[*].parts[*].data.generatedAt`, `metadata`")
    latency_ratio: float | None = Field(None, gt=1, description="Report a `latency` "
                                        "difference when the candidate took more than this "
                                        "many times the primary's time (null: never)")

    @field_validator("ignore")
    @classmethod
    def _paths(cls, ignore: list[str]) -> list[str]:
        # Read as the comparison reads them, so that a bad one is refused here, with its
        # YAML path, not when the gateway builds the tenant (serve, a reload).
        for pattern in ignore:
            parse_pattern(pattern)
        return ignore


class ShadowConfig(_Model):
    share: float = Field(1.0, ge=0, le=1, description="Share of the primary's eligible "
                         "calls copied to the candidate (a stable hash of the request id)")
    with_canary: bool = Field(False, description="Also shadow in `canary` mode (the calls "
                              "the primary answers)")
    operations: list[str] = Field(default_factory=lambda: list(READ_ONLY),
                                  description="Operations copied: the read-only ones by "
                                  "default; add SendMessage / SendStreamingMessage only for a "
                                  "candidate that is a sandbox (it will act on them); with "
                                  "them, a copy names the candidate's own twin of the task or "
                                  "conversation, and none is made for a task without one")
    max_concurrent: int = Field(16, gt=0, le=10_000, description="Shadow copies in flight at "
                                "once; more are skipped and counted, never queued behind "
                                "the client")
    timeout: float = Field(30.0, gt=0, le=3600, description="Seconds a shadow copy may take "
                           "(a stream: in all; at most an hour)")
    max_events: int = Field(1000, gt=0, description="Events of a shadow stream read at most")
    max_bytes: int = Field(4 * 1024 * 1024, gt=0, description="Bytes of a shadow stream's "
                           "events kept at most, the primary's (a stream past it is not "
                           "copied: counted as skipped) and the copy's (read no further)")
    aa: bool = Field(False, description="A/A: also copy each shadowed call to the primary "
                     "itself, to measure the noise; a kind of difference is reported only "
                     "when the candidate differs more often than the primary from itself")
    compare: CompareConfig = Field(default_factory=CompareConfig)

    @model_validator(mode="after")
    def _operations(self) -> ShadowConfig:
        for op in self.operations:
            if op not in MIRRORABLE:
                raise ValueError(f"shadow.operations: {op!r} cannot be mirrored (one of "
                                 f"{', '.join(MIRRORABLE)}); push configs, cancels and "
                                 "subscriptions never are")
        return self


class RollbackConfig(_Model):
    enabled: bool = Field(True, description="Drop the canary's share to 0 by itself when a "
                          "threshold is passed")
    window: float = Field(60.0, gt=0, le=86400, description="Seconds of the candidate's "
                          "calls the rates are taken over (at most a day)")
    min_calls: int = Field(20, gt=0, description="Calls the window must hold before a rate "
                           "counts")
    max_error_rate: float = Field(0.2, ge=0, le=1, description="Candidate errors (the agent's "
                                  "or reaching it) per call")
    max_timeout_rate: float = Field(0.2, ge=0, le=1, description="Candidate timeouts per call")
    max_diff_rate: float = Field(1.0, ge=0, le=1, description="Shadow comparisons that "
                                 "disagree (above the noise) per comparison (1: never)")


class MigrationConfig(_Model):
    candidate: BackendConfig = Field(description="The successor agent (any of the six "
                                     "dialects), configured as a backend is")
    mode: MigrationMode = Field("shadow", description="`off`: the primary only; `shadow`: the "
                                "primary answers, copies go to the candidate and are "
                                "compared; `canary`: a share of new conversations goes to "
                                "the candidate; `cutover`: every new conversation does")
    _m = field_validator("mode", mode="before")(_mode)
    canary: CanaryConfig = Field(default_factory=CanaryConfig)
    shadow: ShadowConfig = Field(default_factory=ShadowConfig)
    rollback: RollbackConfig = Field(default_factory=RollbackConfig)
    keep: int = Field(50, gt=0, le=1000, description="Disagreements and events the report "
                      "keeps per tenant")
    owner_ttl: float = Field(7 * 24 * 3600.0, gt=0, le=366 * 24 * 3600.0,
                             description="Seconds the gateway remembers which agent owns a "
                             "conversation or a task (at most a year)")
