"""Fuzzing the JSON-RPC ingress of both versions: `POST /` and `POST /{tenant}`.

Inputs: near-valid envelopes of every method of both versions (params built valid,
then mutated: wrong types, missing and extra fields, hostile numbers and strings), ids
of every JSON type, batches, random JSON and bytes, bodies deeper than any recursive
parser, bodies over the size limit, odd content types and A2A-Version values.

Oracle (fuzz_rpc_oracle.py): a JSON-RPC 2.0 response in the caller's dialect with the
request's id; where the README names the error, that one. Everywhere: no 5xx, no
InternalError, no traceback, no hang (fuzz_checks.py).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.fuzz_checks import Findings
from tests.fuzz.fuzz_checks_http import check_rpc_reply
from tests.fuzz.fuzz_documents import RPC_METHODS, V10
from tests.fuzz.fuzz_http import (
    UNSUPPORTED_VERSIONS,
    bodies,
    headers,
    mutated,
    queries,
    raw_ids,
    target,
)
from tests.fuzz.fuzz_rpc_oracle import rpc_expect
from tests.fuzz.fuzz_run import FuzzTarget, HttpRequest, fuzz_settings, seeded
from tests.fuzz.fuzz_values import JSON, encode, tenants

TENANT_PATHS = ["/", "/t03", "/t10", "/v1", "/nope", "/t03/", "/T03"]


@st.composite
def envelopes(draw: st.DrawFn, ids: st.SearchStrategy[Any] = raw_ids) -> JSON:
    """A valid request of a random method of either version."""
    method = draw(st.sampled_from(RPC_METHODS))
    envelope: JSON = {"jsonrpc": "2.0", "id": draw(ids), "method": method.name}
    params = draw(method.params)
    if params is not None:
        if method.version == V10 and draw(st.booleans()):
            params = {**params, "tenant": draw(tenants)}
        envelope["params"] = params
    return envelope


documents = st.one_of(*[mutated(envelopes())] * 5, st.lists(envelopes(), max_size=3))


@st.composite
def rpc_requests(draw: st.DrawFn) -> HttpRequest:
    query = draw(queries()) if draw(st.integers(0, 3)) == 0 else ""
    return HttpRequest("POST", target(draw(st.sampled_from(TENANT_PATHS)), query),
                       draw(headers()), draw(bodies(documents)))


def _rpc(method: str, params: str, version: str = "") -> HttpRequest:
    headers = (("Content-Type", "application/json"),) + (
        (("A2A-Version", version),) if version else ())
    body = f'{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}'
    return HttpRequest("POST", "/", headers, body.encode())


def _v03_message(role: str = '"user"') -> str:
    return f'{{"kind":"message","messageId":"m","role":{role},"parts":[{{"kind":"text","text":"x"}}]}}'


V03_MESSAGE = _v03_message()
V10_MESSAGE = '{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}'
# The inputs that broke a property before (the known defects), checked on every run.
SEEDS = (
    HttpRequest("POST", "/", (), b"[" * 100_000),
    HttpRequest("POST", "/", (), b"[" * 60_000),
    _rpc("SendMessage", f'{{"message":{V10_MESSAGE}}}', "1." + "9" * 5000),
    _rpc("message/send", f'{{"message":{_v03_message("[]")}}}'),
    _rpc("message/send", f'{{"message":{V03_MESSAGE},"metadata":{{"a":Infinity}}}}'),
    _rpc("message/send", f'{{"message":{V03_MESSAGE},"metadata":{{"a":1e400}}}}'),
    HttpRequest("POST", "/", (), b'{"jsonrpc":"2.0","id":{},"method":"tasks/get","params":{}}'),
    HttpRequest("POST", "/", (), b'{"jsonrpc":"2.0","id":[1],"method":"GetTask","params":{}}'),
    _rpc("SendMessage", '{"message":"\\udfff"}', "1.0"),
    _rpc("SendMessage", f'{{"message":{V10_MESSAGE},"\\udfff":1}}', "1.0"),
    _rpc("SendStreamingMessage", '{"message":{"messageId":"m","role":"ROLE_USER","parts":"\\ud800"}}'),
    HttpRequest("POST", "/", (), b'{"jsonrpc":"2.0","id":"\\udfff","method":"tasks/get","params":{}}'),
    HttpRequest("POST", "/", (), b'{"jsonrpc":"2.0","id":1,"method":"\\udfff","params":{}}'),
    # Issue 27: a lone surrogate in a Struct key was an InternalError with a traceback.
    _rpc("CancelTask", '{"id":"t","metadata":{"a\\udc00b":1}}', "1.0"),
    _rpc("CancelTask", '{"id":"t","metadata":{"a":["\\ud800"]}}'),
)


def check(fuzz: FuzzTarget, req: HttpRequest) -> None:
    reply = fuzz.http(req)
    findings = Findings()
    if isinstance(reply, str):
        findings.add("no-answer", reply)
    else:
        check_rpc_reply(reply, rpc_expect(req), findings)
    fuzz.finish(findings, req, reply)


# ---------------------------------------------------------------- tests


async def test_jsonrpc_any_input_is_answered_in_the_callers_dialect(fuzz: FuzzTarget) -> None:
    @fuzz_settings("jsonrpc", 0.85)
    @given(req=rpc_requests())
    @seeded(SEEDS)
    def prop(req: HttpRequest) -> None:
        check(fuzz, req)

    await fuzz.run(prop)


@st.composite
def unsupported_version_requests(draw: st.DrawFn) -> HttpRequest:
    envelope = draw(envelopes(st.integers(0, 100)))
    version = draw(st.sampled_from(UNSUPPORTED_VERSIONS))
    via_query = draw(st.booleans()) and version.isascii() and len(version) < 100
    path = draw(st.sampled_from(TENANT_PATHS[:4])) + (f"?A2A-Version={quote(version)}"
                                                       if via_query else "")
    hdrs = (("Content-Type", "application/json"),) + (
        () if via_query else (("A2A-Version", version),))
    return HttpRequest("POST", path, hdrs, encode(envelope).encode("utf-8", "surrogatepass"))


async def test_jsonrpc_versions_not_served_are_refused(fuzz: FuzzTarget) -> None:
    @fuzz_settings("jsonrpc", 0.15)
    @given(req=unsupported_version_requests())
    # The long budget found it: an id that is not text, refused -32600 before the version.
    @seeded((HttpRequest("POST", "/t03", (("A2A-Version", "9" * 20 + ".0"),), b'{"jsonrpc":'
                         b'"2.0","id":"\\ud800","method":"tasks/get","params":{"id":"x"}}'),))
    def prop(req: HttpRequest) -> None:
        check(fuzz, req)

    await fuzz.run(prop)
