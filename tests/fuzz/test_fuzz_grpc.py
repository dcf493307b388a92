"""Fuzzing the gRPC ingress: every method of `lf.a2a.v1.A2AService` (v1.0) and
`a2a.v1.A2AService` (v0.3), called with bytes in and bytes out.

Payloads: random bytes; structurally valid requests with random field values (unknown
enum numbers, out-of-range timestamps, hostile ids and tenants); valid requests with
bytes flipped, cut or appended; the other version's request (the two protos share
message names, not field numbers); another method's request; over the size limit.
Metadata: a2a-version (served, not served, odd), x-a2a-tenant, request ids, extensions.

Oracle: a status other than INTERNAL/UNKNOWN/UNAVAILABLE/DEADLINE_EXCEEDED; v1.0 errors
carry a google.rpc.Status with an ErrorInfo in grpc-status-details-bin, v0.3 errors a
"<ErrorName>: " message; successes decode as the method's response; a version the
gateway does not serve (and 1.x on the v0.3 package, README "gRPC") is
VersionNotSupportedError.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.fuzz_checks import Findings, check_grpc_reply
from tests.fuzz.fuzz_documents import GRPC_METHODS, V03, V10, GrpcMethod, protos
from tests.fuzz.fuzz_http import (
    SERVED,
    UNSUPPORTED_VERSIONS,
    VERSION_VALUES,
    declares_1x,
    version_status,
)
from tests.fuzz.fuzz_run import FuzzTarget, GrpcRequest, fuzz_settings, seeded
from tests.fuzz.fuzz_values import MAX_BODY_BYTES, TENANTS

ascii_values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)
ASCII_VERSIONS = [v for v in VERSION_VALUES if v.isascii()]
ASCII_TENANTS = ["", "", "t03", "t10", *(t for t in TENANTS if t.isascii())]


@st.composite
def metadata(draw: st.DrawFn, method: GrpcMethod) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    if draw(st.booleans()):  # mostly the method's own version
        own = st.sampled_from([method.version, ""])
        out.append(("a2a-version", draw(st.one_of(own, own, st.sampled_from(ASCII_VERSIONS)
                                                  | ascii_values))))
    for key, pool in (("x-a2a-tenant", ASCII_TENANTS),
                      ("x-request-id", ["req-1", "", "x" * 200, "a b"]),
                      ("a2a-extensions", ["https://ext.example/a", "a,,b", " "]),
                      ("x-a2a-extensions", ["https://ext.example/a"]),
                      ("authorization", ["Bearer x", ""])):
        if draw(st.booleans()):
            out.append((key, draw(st.sampled_from(pool) | ascii_values)))
    return tuple(out)


@st.composite
def _edited(draw: st.DrawFn, raw: bytes) -> bytes:
    """Bytes flipped, cut, inserted or appended."""
    data = bytearray(raw)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        edit = draw(st.sampled_from(["flip", "cut", "insert", "append"]))
        if edit == "flip" and at < len(data):
            data[at] ^= draw(st.integers(1, 255))
        elif edit == "cut":
            del data[at:]
        elif edit == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            data += draw(st.binary(min_size=1, max_size=16))
    return bytes(data)


def _counterpart(method: GrpcMethod) -> GrpcMethod:
    """The other version's method with the same position in its service, else any."""
    others = [m for m in GRPC_METHODS if m.version != method.version]
    return next((m for m in others if m.request.name == method.request.name), others[0])


@st.composite
def payloads(draw: st.DrawFn, method: GrpcMethod) -> bytes:
    kind = draw(st.sampled_from(["valid"] * 4 + ["edited"] * 2 +
                                ["random", "other version", "other method", "oversize"]))
    if kind == "random":
        return draw(st.binary(max_size=200))
    if kind == "oversize":
        return draw(st.sampled_from([b"\x0a", b"\x12", b"\xff"])) * (MAX_BODY_BYTES + 1)
    source = {"other version": _counterpart(method),
              "other method": draw(st.sampled_from(GRPC_METHODS))}.get(kind, method)
    raw: bytes = draw(protos(source.request, wire=True)).SerializeToString()
    return draw(_edited(raw)) if kind == "edited" else raw


@st.composite
def grpc_requests(draw: st.DrawFn) -> GrpcRequest:
    method = draw(st.sampled_from(GRPC_METHODS))
    return GrpcRequest(method, draw(payloads(method)), draw(metadata(method)))


def expectation(req: GrpcRequest) -> tuple[str | None, frozenset[str]]:
    """The error the README names (VersionNotSupportedError for a version not served, and
    for 1.x on the v0.3 package), and the dialects an error may take: a 1.x caller of the
    v0.3 package is a v1.0.0-rc peer, which may be answered the v1.0 way."""
    version = next((v for k, v in req.metadata if k == "a2a-version"), None)
    status = version_status(version)
    rc_peer = req.method.version == V03 and declares_1x(version)
    refused = status == "unsupported" or (rc_peer and status in SERVED)
    dialects = frozenset(SERVED) if rc_peer else frozenset({req.method.version})
    return ("VersionNotSupportedError" if refused else None), dialects


def _method(version: str, name: str) -> GrpcMethod:
    return next(m for m in GRPC_METHODS if m.version == version and m.name == name)


V10_GET, V03_GET = _method(V10, "GetTask"), _method(V03, "GetTask")
# The inputs that broke a property before (the known defects), checked on every run.
SEEDS = (
    GrpcRequest(V03_GET, b"\n\x07tasks/x", (("a2a-version", "1." + "9" * 5000),)),
    GrpcRequest(V10_GET, b"\x12\x01x", (("x-a2a-tenant", "x" * 5000),)),
    GrpcRequest(V10_GET, b"\n\x01y\x12\x01x", (("x-a2a-tenant", "x" * 5000),)),
    GrpcRequest(V10_GET, b"\xff" * (MAX_BODY_BYTES + 1), ()),
    GrpcRequest(V03_GET, b"\xff" * (MAX_BODY_BYTES + 1), ()),
    GrpcRequest(V10_GET, b"\n\xff", ()),
    GrpcRequest(V10_GET, b"\n\x01x\x12\x04\xff\xff\xff\xff", ()),
)


def check(fuzz: FuzzTarget, req: GrpcRequest, strict: bool) -> None:
    """``strict``: hold the answer to the error the README names (for valid payloads;
    otherwise a bad payload may be refused first)."""
    reply = fuzz.grpc(req)
    findings = Findings()
    expected, dialects = expectation(req)
    if isinstance(reply, str):
        findings.add("no-answer", reply)
    else:
        check_grpc_reply(reply, req.method, findings, expected if strict else None, dialects)
    fuzz.finish(findings, req, reply)


# ---------------------------------------------------------------- tests


async def test_grpc_any_payload_of_both_services(fuzz: FuzzTarget) -> None:
    @fuzz_settings("grpc", 0.85)
    @given(req=grpc_requests())
    @seeded(SEEDS)
    def prop(req: GrpcRequest) -> None:
        check(fuzz, req, strict=False)

    await fuzz.run(prop)


@st.composite
def unsupported_version_requests(draw: st.DrawFn) -> GrpcRequest:
    method = draw(st.sampled_from(GRPC_METHODS))
    pool = UNSUPPORTED_VERSIONS + (["1.0", "1.0.1", "1.5"] if method.version == V03 else [])
    version = draw(st.sampled_from([v for v in pool if v.isascii()]))
    payload = draw(protos(method.request)).SerializeToString()
    return GrpcRequest(method, payload, (("a2a-version", version),))


async def test_grpc_versions_not_served_are_refused(fuzz: FuzzTarget) -> None:
    @fuzz_settings("grpc", 0.15)
    @given(req=unsupported_version_requests())
    def prop(req: GrpcRequest) -> None:
        check(fuzz, req, strict=True)

    await fuzz.run(prop)
