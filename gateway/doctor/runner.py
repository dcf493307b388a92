"""`a2a-gateway doctor`: probe an agent (or every tenant's backend of a config, or the
same through a running gateway) and build the report."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

from gateway.cards.backend import default_card_url
from gateway.config.models import BackendConfig, GatewayConfig
from gateway.doctor.probe import Probed, detect, operations
from gateway.doctor.report import Report, TargetReport
from gateway.doctor.seeds import run_seeds
from gateway.doctor.target import (
    Advertised,
    Found,
    advertised_interfaces,
    fetch_grpc_card,
    fetch_http_card,
    is_grpc_target,
)
from gateway.doctor.verdicts import all_verdicts, gateway_choice
from translators.loss import LossPolicy

Progress = Callable[[str], None]


def stderr_progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def silent(_: str) -> None:
    return None


@dataclass
class Options:
    send: str | None = None
    loss_policy: LossPolicy = LossPolicy.REPORT
    progress: Progress = stderr_progress


async def _card(target: str, config: BackendConfig | None,
                session: aiohttp.ClientSession) -> Found:
    if config is not None:
        card_url = default_card_url(config)
        if card_url is not None:
            return await fetch_http_card(card_url, session)
        assert config.url is not None
        return await fetch_grpc_card(config.url, session)
    if is_grpc_target(target):
        return await fetch_grpc_card(target, session)
    return await fetch_http_card(target, session)


def _interfaces(target: str, found: Found, config: BackendConfig | None,
                tenant_hint: str = "") -> list[Advertised]:
    listed = advertised_interfaces(found)
    if tenant_hint:
        # Through a gateway: a v0.3 gRPC entry cannot name its tenant (v0.3 has no such
        # field); the prober sends it in x-a2a-tenant metadata instead.
        listed = [Advertised(a.url, a.binding, a.version, a.tenant or tenant_hint)
                  if a.binding == "GRPC" else a for a in listed]
    if config is not None and config.url is not None and config.version is not None:
        configured = Advertised(config.url, config.binding, config.version, config.tenant or "")
        if not any((a.url.rstrip("/"), a.binding) == (config.url.rstrip("/"), config.binding)
                   for a in listed):
            listed.append(configured)
    if not listed and not found.report.found:
        # No card: probe the address itself, binding and version unknown.
        grpc = is_grpc_target(target)
        listed.append(Advertised(target.removeprefix("grpc://"), "GRPC" if grpc else "", ""))
    return listed


def _same(url: str, binding: str, used: Advertised) -> bool:
    return url.rstrip("/") == used.url.rstrip("/") and binding == used.binding


def _alternatives(probed: list[Probed], used: Advertised | None) -> list[str]:
    """Interfaces that did answer, which a backend configured by url could use."""
    out = []
    for p in probed:
        for dialect in p.report.answered:
            binding, _, version = dialect.partition(" ")
            if used is not None and _same(p.report.url, binding, used) and \
                    version == used.version:
                continue
            out.append(f"{dialect} answers at {p.report.url}: a tenant configured with "
                       f"url {p.report.url}, version {version!r}, binding {binding} "
                       f"would reach it")
    return out


async def doctor_target(name: str, target: str, session: aiohttp.ClientSession, opts: Options,
                        config: BackendConfig | None = None, precheck: bool = True,
                        tenant_hint: str = "") -> TargetReport:
    opts.progress(f"doctor: {name}: reading the card")
    found = await _card(target, config, session)
    report = TargetReport(name, target, found.report)
    if not found.report.found:
        report.problems.append(f"no agent card: {found.report.error}")
    probed: list[Probed] = []
    interfaces = _interfaces(target, found, config, tenant_hint)
    extended = bool(found.report.capabilities.get("extendedAgentCard"))
    try:
        for adv in interfaces:
            one = await detect(adv, session, opts.progress,
                               found.report.required_extensions)
            await operations(one, opts.send, extended, opts.progress)
            probed.append(one)
            if one.report.agreement in ("differs", "unreachable"):
                what = f"{adv.binding} {adv.version}".strip() or "the address"
                report.problems.append(f"{what} at {adv.url}: {one.report.note}")
        report.interfaces = [p.report for p in probed]
        card_p10 = found.parsed.p10 if found.parsed is not None else None
        choice = gateway_choice(config, card_p10)
        used = choice.interface
        backend_ops = []
        if used is None:
            report.problems.append(f"the gateway has no interface to call: {choice.how}")
        else:
            report.gateway_uses = f"{used.binding} {used.version} at {used.url} ({choice.how})"
            match = next((p for p in probed
                          if _same(p.report.url, p.report.advertised_binding, used)), None)
            dialect = f"{used.binding} {used.version}"
            if match is None or dialect not in match.report.answered:
                seen = ", ".join(match.report.answered) if match else "not probed"
                report.problems.append(f"the interface the gateway would call ({dialect} at "
                                       f"{used.url}) does not answer as {dialect} "
                                       f"({seen or 'nothing answered'})")
            else:
                report.servable = True
                backend_ops = match.report.operations
        if not report.servable:
            report.problems += _alternatives(probed, used)
        report.clients = all_verdicts(choice, card_p10, opts.loss_policy, precheck,
                                      backend_ops)
        if not report.servable:
            for verdict in report.clients:
                verdict.verdict = "refused"
        report.seeds = await run_seeds(probed, found.report, opts.send is not None,
                                       opts.progress, tenanted=any(a.tenant for a in interfaces))
    finally:
        for one in probed:
            if one.prober is not None:
                await one.prober.close()
    return report


async def doctor(target: str | None, opts: Options, config: GatewayConfig | None = None,
                 through_gateway: str | None = None) -> Report:
    """Probe ``target``; or every tenant of ``config``; directly or through a gateway."""
    if config is not None:
        opts.loss_policy = config.loss_policy
    report = Report([], through_gateway or "", opts.loss_policy.value, opts.send is not None)
    async with aiohttp.ClientSession() as session:
        if config is None:
            assert target is not None or through_gateway is not None
            where = through_gateway or target or ""
            report.targets.append(await doctor_target(where, where, session, opts))
            return report
        for name, tenant in config.tenants.items():
            if through_gateway:
                url = f"{through_gateway.rstrip('/')}/{name}"
                report.targets.append(await doctor_target(name, url, session, opts,
                                                          tenant_hint=name))
            else:
                backend = tenant.backend
                report.targets.append(await doctor_target(
                    name, backend.url or backend.card or "", session, opts, backend,
                    backend.precheck))
    return report
