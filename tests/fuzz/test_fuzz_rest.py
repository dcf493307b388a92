"""Fuzzing the HTTP+JSON ingress: the v1.0 routes (`/...`, `/{tenant}/...`) and the v0.3
routes (`/v1/...`, `/{tenant}/v1/...`).

Inputs: every route of both tables with clean and hostile path values (%0a, %00, %2F,
dot segments, 300-char ids), tenant prefixes, edited paths (doubled slashes, dot
segments, case, suffixes), random and very long paths; every verb (PUT, PATCH, HEAD,
OPTIONS, TRACE, made-up ones); query strings (historyLength=-1, huge numbers, bad
enums and timestamps, repeated keys, broken escapes); A2A-Version values such as
'1.' + '9' * 5000; bodies near-valid for the route's version (ProtoJSON of the v1.0 or
v0.3 request), random, special, or over max_body_bytes.

Oracle (fuzz_rest_oracle.py): the route's answer in its version, 404/405 in the dialect
the path speaks, 413 over the limit, JSON-RPC for `POST /{tenant}`; everywhere: no 5xx,
no aiohttp text page, no traceback, no hang (fuzz_checks.py).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.fuzz_checks import Findings
from tests.fuzz.fuzz_checks_http import check_rest_reply
from tests.fuzz.fuzz_documents import V03, V10, grpc_method, protojson
from tests.fuzz.fuzz_http import UNSUPPORTED_VERSIONS, bodies, headers, mutated, queries, target
from tests.fuzz.fuzz_rest_oracle import ROUTES, path_dialect, rest_expect
from tests.fuzz.fuzz_rpc_oracle import rpc_expect
from tests.fuzz.fuzz_run import FuzzTarget, HttpRequest, fuzz_settings, seeded
from tests.fuzz.fuzz_values import encode, json_values
from translators import operations as ops
from translators.rest_routes import Route

VERBS = ["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS", "TRACE"]
CLEAN_VALUES = ["task-1", "t", "cfg-1", "abc_DEF.9~"]
HOSTILE_VALUES = ["%0a", "%00", "%0d%0a", "%2F", "%2f", "%2e%2e", "..", ".", "%3A", "%25",
                  "%ff", "%C3%A9", "a%20b", "x" * 300, "%", "%zz", ";a", "%3F", "%23", "%5C",
                  "%u0041", "%09", "~", "%7E", "a@b", "%F0%9F%99%82"]
PREFIXES = ["", "", "/t03", "/t10", "/v1", "/nope", "/%74%30%33", "/t03/t10", "/.", "/..",
            "/", "/t03/", "/T03", "/%2e", "/v1/v1"]
SEGMENTS = ["tasks", "message:send", "message:stream", "v1", "pushNotificationConfigs", "task",
            "extendedAgentCard", "card", "x:cancel", ":subscribe", "t03", "", ".", "..", "%2F",
            "tasks:", "message", "send"]
PATH_EDITS = [
    lambda p: p.replace("/", "//", 1), lambda p: p + "/", lambda p: p + "/..",
    lambda p: p.replace("/", "/./", 1), lambda p: p.upper(), lambda p: p + "%0a",
    lambda p: p.replace(":", "%3A"), lambda p: p + "/x", lambda p: p[:-1] or "/",
    lambda p: "/a/.." + p, lambda p: p + ";x", lambda p: p.replace("tasks", "task"),
    lambda p: p.replace("/v1/", "/V1/"), lambda p: p + "%00",
]


def _fill(route: Route, value: st.SearchStrategy[str], draw: st.DrawFn) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: draw(value), route.template)


def _body_document(route: Route) -> st.SearchStrategy[Any]:
    """A valid body for the route, in its version's ProtoJSON."""
    if not route.body:
        return st.just({}) | json_values
    if route.version == V10:
        return protojson(ops.BY_NAME[route.op].request.DESCRIPTOR)
    request = protojson(grpc_method(V03, route.op).request)
    if route.op == ops.PUSH_CREATE:  # both body shapes are accepted (README)
        request |= protojson(grpc_method(V03, ops.PUSH_GET).response)
    return request


@st.composite
def route_requests(draw: st.DrawFn) -> HttpRequest:
    route = draw(st.sampled_from(ROUTES))
    path = _fill(route, st.sampled_from(CLEAN_VALUES) | st.sampled_from(HOSTILE_VALUES), draw)
    path = draw(st.sampled_from(PREFIXES)).rstrip("/") + path
    shape = draw(st.sampled_from(["route"] * 5 + ["edit", "long"]))
    if shape == "edit":
        path = draw(st.sampled_from(PATH_EDITS))(path)
    elif shape == "long":
        path += "/" + "a" * draw(st.sampled_from([1000, 4000, 7000]))
    verb = route.verb if draw(st.integers(0, 3)) else draw(st.sampled_from(VERBS))
    with_body = route.body or not draw(st.integers(0, 4))
    body = draw(bodies(mutated(_body_document(route)))) if with_body else b""
    return HttpRequest(verb, target(path, draw(queries())), draw(headers(content_type=with_body)),
                       body)


@st.composite
def random_requests(draw: st.DrawFn) -> HttpRequest:
    segments = draw(st.lists(st.sampled_from(SEGMENTS) | st.sampled_from(HOSTILE_VALUES)
                             | st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E,
                                                     exclude_characters="?#%/"), max_size=6),
                             max_size=5))
    path = "/" + "/".join(segments)
    body = draw(bodies(mutated(json_values))) if draw(st.booleans()) else b""
    return HttpRequest(draw(st.sampled_from(VERBS)), target(path, draw(queries())),
                       draw(headers()), body)


V10_JSON = (("Content-Type", "application/json"), ("A2A-Version", "1.0"))
V03_JSON = (("Content-Type", "application/json"),)
SEND = b'{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}'
# The inputs that broke a property before (the known defects), checked on every run.
SEEDS = (
    HttpRequest("PUT", "/message:send", V10_JSON, SEND),
    HttpRequest("PATCH", "/v1/message:send", V03_JSON, b"{}"),
    HttpRequest("GET", "/tasks/a%0ab", (), b""),
    HttpRequest("GET", "/t03/tasks/a%0ab", (), b""),
    HttpRequest("GET", "/extendedAgentCard%0a", V10_JSON, b""),
    HttpRequest("POST", "/message:send%0a", V10_JSON, SEND),
    HttpRequest("GET", "/tasks/../tasks/x", (), b""),
    HttpRequest("POST", "/message:send", V10_JSON, b" " * 70_000 + SEND),
    HttpRequest("POST", "/v1/message:send", V03_JSON, b" " * 70_000 + b"{}"),
    HttpRequest("POST", "/message:send", V10_JSON, b'{"message":"\\udfff"}'),
    HttpRequest("POST", "/tasks/x:cancel", V10_JSON, b'{"metadata":"\\udfff"}'),
    HttpRequest("POST", "/v1/tasks/x/pushNotificationConfigs", V03_JSON, b'{"config":"\\udfff"}'),
    HttpRequest("GET", "/tasks/x", (("A2A-Version", "1." + "9" * 5000),), b""),
    HttpRequest("GET", "/v1/nothing", (("A2A-Version", "1.5"),), b""),
)


def check(fuzz: FuzzTarget, req: HttpRequest) -> None:
    reply = fuzz.http(req)
    findings = Findings()
    expect = rest_expect(req, rpc_expect(req))
    if isinstance(reply, str):
        findings.add("no-answer", reply)
    elif expect is None:  # a card, probe or relay path: only the universal properties
        if reply.status >= 500:
            findings.add("server-error", f"HTTP {reply.status}: {reply.body[:200]!r}")
    else:
        check_rest_reply(reply, expect, req.verb == "HEAD", findings)
    fuzz.finish(findings, req, reply)


# ---------------------------------------------------------------- tests


async def test_rest_routes_of_both_versions(fuzz: FuzzTarget) -> None:
    @fuzz_settings("rest", 0.6)
    @given(req=route_requests())
    @seeded(SEEDS)
    def prop(req: HttpRequest) -> None:
        check(fuzz, req)

    await fuzz.run(prop)


async def test_rest_random_paths_and_verbs(fuzz: FuzzTarget) -> None:
    @fuzz_settings("rest", 0.3)
    @given(req=random_requests())
    def prop(req: HttpRequest) -> None:
        check(fuzz, req)

    await fuzz.run(prop)


@st.composite
def unsupported_version_requests(draw: st.DrawFn) -> HttpRequest:
    """A clean request of a route with a version the gateway does not serve. `/v1/...`
    paths are left out with 1.x values: there `v1` may be read as a v1.0 tenant."""
    version = draw(st.sampled_from(UNSUPPORTED_VERSIONS))
    routes = [r for r in ROUTES if r.version == V10 or path_dialect("/v1/", version) == V03]
    route = draw(st.sampled_from(routes))
    path = draw(st.sampled_from(["", "/t03", "/t10"])) + _fill(
        route, st.sampled_from(CLEAN_VALUES), draw)
    body = encode(draw(_body_document(route))).encode("utf-8", "surrogatepass") \
        if route.body else b""
    via_query = draw(st.booleans()) and len(version) < 100
    query = f"?A2A-Version={quote(version)}" if via_query else ""
    hdrs = (("Content-Type", "application/json"),) + (
        () if via_query else (("A2A-Version", version),))
    return HttpRequest(route.verb, path + query, hdrs, body)


async def test_rest_versions_not_served_are_refused(fuzz: FuzzTarget) -> None:
    @fuzz_settings("rest", 0.1)
    @given(req=unsupported_version_requests())
    def prop(req: HttpRequest) -> None:
        check(fuzz, req)

    await fuzz.run(prop)
