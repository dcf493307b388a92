"""The seed interop scenarios I1-I14 (wire reference §6), run against the probed agent.

Each is pass / differs / n.a. with one line of why. Server scenarios are checked with
safe calls on the interfaces that answered; client scenarios (I9, I10, I14) are about a
client's choices, not the agent's, and are n.a. here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from a2a.types import a2a_pb2 as pb

from gateway.doctor.classify import describe
from gateway.doctor.probe import Probed, random_id
from gateway.doctor.report import DIFFERS, PASS, SEED_NA, WORKS, CardReport, SeedResult
from gateway.doctor.wire import Headers, Outcome, Prober
from translators import operations as ops
from translators.dialects.base import EXTENSION_HEADERS
from translators.versions import V10

NATIVE_NOT_FOUND = {"JSONRPC": "-32001", "GRPC": "NOT_FOUND", "HTTP+JSON": "HTTP 404"}
CLIENT_SIDE = "a client-side scenario: it checks a client's choices, not this agent's"


def _answering(probed: list[Probed]) -> list[Prober]:
    return [p.prober for p in probed if p.prober is not None]


def _summary(results: list[tuple[str, bool, str]], what: str) -> tuple[str, str]:
    if not results:
        return SEED_NA, what
    bad = [f"{name}: {why}" for name, ok, why in results if not ok]
    if bad:
        return DIFFERS, "; ".join(bad)
    return PASS, "; ".join(f"{name}: {why}" for name, _, why in results)


def _get(prober: Prober, headers: Headers | None = None) -> Awaitable[Outcome]:
    return prober.call(ops.GET_TASK, pb.GetTaskRequest(id=random_id()), headers=headers)


async def i2(probers: list[Prober], probed: list[Probed]) -> SeedResult:
    results = []
    for p in probed:
        if p.prober is None:
            continue
        out = p.probes.get(p.prober.dialect_name)
        err = out.error if out else None
        name = f"{p.prober.dialect_name} {p.report.url}"
        if err is None:
            results.append((name, False, "no error for an unknown task"))
            continue
        native = err.wire_code == NATIVE_NOT_FOUND[p.prober.binding]
        info = err.shape.endswith("1.0")
        # ErrorInfo is a v1.0 rule: a v0.3 interface passes with its native code alone.
        v03 = p.prober.version != V10
        ok = err.name == "TaskNotFoundError" and native and (info or v03)
        why = f"{err.name} {err.wire_code}" + (
            ", ErrorInfo TASK_NOT_FOUND" if info else
            ", no ErrorInfo (v0.3 form; v0.3 defines none)" if v03 else ", no ErrorInfo")
        results.append((name, ok, why))
    result, why = _summary(results, "no interface answered")
    return SeedResult("I2", result, why)


async def _version_seed(seed: str, probers: list[Prober], header: str | None,
                        expect_refusal: bool) -> SeedResult:
    results = []
    for prober in probers:
        if prober.version != V10:
            continue
        out = await _get(prober, {"a2a-version": header})
        refused = out.error is not None and out.error.name == "VersionNotSupportedError"
        shown = describe(out.error) if out.error else "answered"
        results.append((prober.dialect_name, refused == expect_refusal, shown))
    result, why = _summary(results, "no v1.0 interface answered")
    return SeedResult(seed, result, why)


async def i4(probers: list[Prober]) -> SeedResult:
    first = await _version_seed("I4", probers, "1.0", False)
    second = await _version_seed("I4", probers, "9.9", True)
    if SEED_NA in (first.result, second.result):
        return first
    if first.result == second.result == PASS:
        return SeedResult("I4", PASS, f"1.0 → {first.why} | 9.9 → {second.why}")
    parts = [f"{v} → {s.why}" for v, s in (("1.0", first), ("9.9", second))
             if s.result != PASS]
    return SeedResult("I4", DIFFERS, " | ".join(parts))


async def i5(probers: list[Prober]) -> SeedResult:
    seed = await _version_seed("I5", probers, "1.0.1", False)
    if seed.result == SEED_NA:
        return seed
    # The spec leaves 1.0.1 undefined: the result is recorded, not judged.
    return SeedResult("I5", PASS, f"recorded (undefined by the spec): {seed.why}")


def i6(probed: list[Probed]) -> SeedResult:
    v10 = [p for p in probed if p.prober is not None and p.prober.version == V10]
    if not v10:
        return SeedResult("I6", SEED_NA, "no v1.0 interface answered")
    # Every probe sends the header lowercase (HTTP) / as gRPC metadata (always lowercase).
    names = ", ".join(p.prober.dialect_name for p in v10 if p.prober is not None)
    return SeedResult("I6", PASS, f"a2a-version sent lowercase was honoured on {names}")


async def i7(probers: list[Prober], card: CardReport) -> SeedResult:
    """Two URIs declared: the agent echoes what it activated; a required extension left
    out: ExtensionSupportRequiredError."""
    if not card.extensions:
        return SeedResult("I7", SEED_NA, "the card declares no extensions")
    results = []
    for prober in probers:
        names = EXTENSION_HEADERS[prober.version]
        two = ",".join([*card.extensions, "https://a2a-gateway.doctor/unknown"])
        out = await _get(prober, dict.fromkeys(names, two))
        echoed = {k: v for k, v in out.headers.items() if k in names}
        why = f"echoed {echoed}" if echoed else "no extension header echoed"
        ok = bool(echoed) and (out.error is None or out.error.name == "TaskNotFoundError")
        if card.required_extensions:
            out = await _get(prober, dict.fromkeys(names))
            refused = out.error is not None and out.error.name == "ExtensionSupportRequiredError"
            ok = ok and refused
            why += "; without the required one: " + (describe(out.error) if out.error
                                                     else "answered")
        results.append((prober.dialect_name, ok, why))
    result, why = _summary(results, "no interface answered")
    return SeedResult("I7", result, why)


def _sent(probed: list[Probed], op: str) -> list[tuple[str, str, str]]:
    out = []
    for p in probed:
        if p.prober is None:
            continue
        for r in p.report.operations:
            if r.operation == op:
                out.append((p.prober.dialect_name, r.status, r.detail))
    return out


def i1(probed: list[Probed], sent: bool) -> SeedResult:
    if not sent:
        return SeedResult("I1", SEED_NA, "needs a real message (--send TEXT)")
    answers = _sent(probed, ops.SEND)
    details = {detail for _, status, detail in answers if status == WORKS}
    if len(answers) < 2:
        return SeedResult("I1", SEED_NA, "fewer than two interfaces answered")
    ok = len(details) == 1 and all(status == WORKS for _, status, _ in answers)
    why = "; ".join(f"{name}: {detail}" for name, _, detail in answers)
    return SeedResult("I1", PASS if ok else DIFFERS, why)


def i11(probed: list[Probed], sent: bool) -> SeedResult:
    if not sent:
        return SeedResult("I11", SEED_NA, "needs a real stream (--send TEXT)")
    streams = [s for s in _sent(probed, ops.STREAM) if not s[0].startswith("GRPC")]
    if not streams:
        return SeedResult("I11", SEED_NA, "no JSON-RPC or HTTP+JSON interface answered")
    results = [(name, status == WORKS, detail + (" (lines parsed as JSON-RPC responses)"
                if name.startswith("JSONRPC") else " (bare StreamResponse lines)"))
               for name, status, detail in streams]
    result, why = _summary(results, "")
    return SeedResult("I11", result, why)


async def i12(probers: list[Prober]) -> SeedResult:
    rest = [p for p in probers if p.binding == "HTTP+JSON" and p.version == V10]
    if not rest:
        return SeedResult("I12", SEED_NA, "no v1.0 HTTP+JSON interface answered")
    results = []
    for prober in rest:
        request = pb.ListTasksRequest(context_id=random_id(), page_size=10,
                                      status=pb.TASK_STATE_WORKING)
        out = await prober.call(ops.LIST_TASKS, request)
        if out.error is not None:
            results.append((prober.dialect_name, False, describe(out.error)))
            continue
        tasks = len(out.result.tasks) if isinstance(out.result, pb.ListTasksResponse) else -1
        results.append((prober.dialect_name, tasks == 0,
                        f"{tasks} task(s) for a random contextId"))
    result, why = _summary(results, "")
    return SeedResult("I12", result, why)


async def i13(probers: list[Prober]) -> SeedResult:
    rpc = [p for p in probers if p.binding == "JSONRPC"]
    if not rpc:
        return SeedResult("I13", SEED_NA, "checked on JSON-RPC interfaces; none answered")
    results = []
    for prober in rpc:
        out = await prober.call(ops.GET_TASK, pb.GetTaskRequest(id=random_id()),
                                extra_param={"doctorUnknownField": 1})
        ignored = out.error is not None and out.error.name == "TaskNotFoundError"
        results.append((prober.dialect_name, ignored, "the field was ignored" if ignored else
                        f"refused: {describe(out.error)}" if out.error else "answered"))
    result, why = _summary(results, "")
    return SeedResult("I13", result, why)


async def run_seeds(probed: list[Probed], card: CardReport, sent: bool,
                    progress: Callable[[str], None], tenanted: bool = False) -> list[SeedResult]:
    progress("  seed scenarios I1-I14")
    probers = _answering(probed)
    v10 = [p for p in probers if p.version == V10]
    return [
        i1(probed, sent),
        await i2(probers, probed),
        await _version_seed("I3", v10, None, True),
        await i4(v10),
        await i5(v10),
        i6(probed),
        await i7(probers, card),
        SeedResult("I8", SEED_NA, "not checked yet: an interface declares a tenant"
                   if tenanted else "no interface declares a tenant"),
        SeedResult("I9", SEED_NA, CLIENT_SIDE),
        SeedResult("I10", SEED_NA, CLIENT_SIDE),
        i11(probed, sent),
        await i12(probers),
        await i13(probers),
        SeedResult("I14", SEED_NA, CLIENT_SIDE),
    ]
