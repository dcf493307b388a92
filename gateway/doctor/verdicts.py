"""What the gateway would do, for each of the six client dialects, in front of this agent.

Nothing here is a rule of its own: the backend interface is the one the gateway's config
or its discovery (translators.card_serving.pick_interface) picks; refusals are those the
backend's dialect raises before sending (operations v0.3 lacks, the card's capability
pre-checks); lost fields are the loss report of a rich sample request encoded by the
backend's dialect, under the configured loss policy (none when the pipeline would
forward the call untranslated), plus what a rich answer loses on its way back
(answers.py); and operations the probe found broken at the backend are listed as
failing there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.config.models import BackendConfig, DiscoveryConfig
from gateway.doctor.answers import answer_losses
from gateway.doctor.report import ERROR, ClientVerdict, Loss, OperationResult, Refusal
from gateway.doctor.samples import client_ops, sample
from gateway.doctor.target import Advertised
from translators import operations as ops
from translators.card_serving import pick_interface
from translators.dialects import dialect_for
from translators.dialects.base import check_backend_card, forwardable
from translators.dialects.contract import Dialect
from translators.errors import A2AError
from translators.loss import LossPolicy, LossReport
from translators.versions import V03, V10

CLIENT_DIALECTS = [(b, v) for v in (V10, V03) for b in ("JSONRPC", "HTTP+JSON", "GRPC")]
_EFFECT = {LossPolicy.REPORT: "reported", LossPolicy.REJECT: "rejected",
           LossPolicy.CARRY: "carried where a carrier exists, else reported"}


@dataclass(frozen=True)
class BackendChoice:
    """The interface the gateway calls for a tenant, and how it came to it."""

    interface: Advertised | None
    how: str  # "configured" | "discovered from the card" | why there is none
    tenant: str | None = None
    pass_through: bool = True  # same-dialect unary calls are forwarded untranslated
    # ListTasks toward a v0.3 backend is answered from the gateway's task index (on by
    # default: state.tasks.record).
    task_index: bool = True


def gateway_choice(config: BackendConfig | None,
                   card_p10: dict[str, Any] | None) -> BackendChoice:
    """The configured interface, else what discovery picks from the card (the config's
    discovery preferences, or the defaults when doctor was given a bare URL)."""
    if config is not None and config.url is not None and config.version is not None:
        return BackendChoice(Advertised(config.url, config.binding, config.version),
                             "configured", config.tenant, config.pass_through)
    if card_p10 is None:
        return BackendChoice(None, "its card could not be read")
    d = config.discovery if config is not None else DiscoveryConfig()
    tenant = config.tenant if config is not None else None
    pass_through = config.pass_through if config is not None else True
    picked = pick_interface(card_p10, prefer_version=d.prefer_version,
                            bindings=tuple(d.bindings))
    if picked is None:
        return BackendChoice(None, f"its card lists no interface the gateway can call with "
                             f"bindings {', '.join(d.bindings)}")
    return BackendChoice(Advertised(str(picked["url"]), str(picked["protocolBinding"]),
                                    str(picked["protocolVersion"])), "discovered from the card",
                         picked.get("tenant") or tenant, pass_through)


def dialect_of(binding: str, version: str) -> Dialect:
    """The gateway's codec object for a dialect (the same objects its ingress and egress
    use, so that "same dialect on both sides" is an identity, as in the pipeline)."""
    return dialect_for(binding, version)


def verdict(client: tuple[str, str], choice: BackendChoice, card_p10: dict[str, Any] | None,
            policy: LossPolicy, precheck: bool,
            backend_ops: list[OperationResult]) -> ClientVerdict:
    binding, version = client
    backend = choice.interface
    if backend is None:
        return ClientVerdict(binding, version, "refused", "",
                             refused=[Refusal("*", f"no backend interface: {choice.how}")])
    out = ClientVerdict(binding, version, "bridged",
                        f"{backend.binding} {backend.version} at {backend.url}")
    card = card_p10 if precheck else None
    broken = {r.operation: r for r in backend_ops if r.status == ERROR}
    for op in client_ops(version):
        if op.name == ops.LIST_TASKS and backend.version == V03 and choice.task_index:
            continue  # the tasks that went through the gateway (README "State")
        loss = LossReport(policy=policy)
        try:
            request = sample(op, binding, version, loss)
            forwarded = choice.pass_through and forwardable(
                op, request, dialect_of(binding, version),
                dialect_of(backend.binding, backend.version), choice.tenant)
            if forwarded:
                # Forwarded as it came (the pipeline's fast path): nothing is lost.
                loss = LossReport(policy=policy)
                check_backend_card(op, request, card, ())
            else:
                # The backend dialect's encoding: raises what the gateway would refuse.
                dialect_of(backend.binding, backend.version).backend(
                    op, request, loss, choice.tenant, card)
        except A2AError as err:
            if policy is LossPolicy.REJECT and err.name == "InvalidParamsError" and loss.request:
                out.lost.append(Loss(op.name, list(loss.request), _EFFECT[policy]))
            else:
                out.refused.append(Refusal(op.name, f"{err.name}: {err.message}"))
            continue
        if loss.request:
            out.lost.append(Loss(op.name, list(loss.request), _EFFECT[policy]))
        if not forwarded:
            dropped = answer_losses(op.name, request,
                                    dialect_of(backend.binding, backend.version),
                                    dialect_of(binding, version))
            if dropped:
                out.lost.append(Loss(op.name, dropped, "reported, in the answer"))
        if op.name in broken:
            out.failing.append(Refusal(op.name, broken[op.name].detail))
    if out.refused or out.failing or any(x.effect == "rejected" for x in out.lost):
        out.verdict = "bridged, partly"
    return out


def all_verdicts(choice: BackendChoice, card_p10: dict[str, Any] | None, policy: LossPolicy,
                 precheck: bool, backend_ops: list[OperationResult]) -> list[ClientVerdict]:
    return [verdict(c, choice, card_p10, policy, precheck, backend_ops)
            for c in CLIENT_DIALECTS]
