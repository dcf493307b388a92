"""The HTTP+JSON (REST) route table of both versions (reference §2, §5, §11.5).

Routes are data: a verb, a path template, the operation, the version, how the body is
used, and which query parameters are read. One small router (gateway/ingress/rest.py)
matches client requests against it, and the REST egress fills the same templates
toward backends, so a route is written exactly once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from translators import operations as ops
from translators.errors import a2a_error, invalid_params
from translators.versions import V03, V10, Version, is_major_1


@dataclass(frozen=True)
class QueryParam:
    name: str  # camelCase as on the wire and in ProtoJSON
    kind: str = "str"  # str | int | bool | enum | timestamp


@dataclass(frozen=True)
class Route:
    verb: str
    template: str  # e.g. "/tasks/{id}:cancel"; path variables name request fields
    op: str
    version: Version
    body: bool = False  # the JSON body is the request (merged with path variables)
    query: tuple[QueryParam, ...] = ()
    # v0.3 requests name resources ("tasks/{id}"); path variable → (field, format)
    names: tuple[tuple[str, str], ...] = ()
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/:]+)", re.escape(self.template))
        # \Z, not $: `$` also matches before a final newline (a trailing %0a).
        object.__setattr__(self, "pattern", re.compile(regex + r"/?\Z"))

    def path_for(self, values: dict[str, str]) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: quote(values.get(m.group(1), ""), safe=""),
                      self.template)


_HISTORY = QueryParam("historyLength", "int")
_PAGING = (QueryParam("pageSize", "int"), QueryParam("pageToken"))
_LIST_TASKS_QUERY = (
    QueryParam("contextId"), QueryParam("status", "enum"), *_PAGING, _HISTORY,
    QueryParam("statusTimestampAfter", "timestamp"), QueryParam("includeArtifacts", "bool"),
)

_TASK_NAME = (("name", "tasks/{id}"),)
_CONFIG_NAME = (("name", "tasks/{taskId}/pushNotificationConfigs/{id}"),)
_PARENT = (("parent", "tasks/{taskId}"),)

V10_ROUTES: tuple[Route, ...] = (
    Route("POST", "/message:send", ops.SEND, V10, body=True),
    Route("POST", "/message:stream", ops.STREAM, V10, body=True),
    Route("GET", "/tasks/{id}:subscribe", ops.SUBSCRIBE, V10),
    Route("POST", "/tasks/{id}:subscribe", ops.SUBSCRIBE, V10),
    Route("POST", "/tasks/{id}:cancel", ops.CANCEL, V10, body=True),
    Route("GET", "/tasks/{taskId}/pushNotificationConfigs/{id}", ops.PUSH_GET, V10),
    Route("DELETE", "/tasks/{taskId}/pushNotificationConfigs/{id}", ops.PUSH_DELETE, V10),
    Route("POST", "/tasks/{taskId}/pushNotificationConfigs", ops.PUSH_CREATE, V10, body=True),
    Route("GET", "/tasks/{taskId}/pushNotificationConfigs", ops.PUSH_LIST, V10, query=_PAGING),
    Route("GET", "/tasks/{id}", ops.GET_TASK, V10, query=(_HISTORY,)),
    Route("GET", "/tasks", ops.LIST_TASKS, V10, query=_LIST_TASKS_QUERY),
    Route("GET", "/extendedAgentCard", ops.EXTENDED_CARD, V10),
)

V03_ROUTES: tuple[Route, ...] = (
    Route("POST", "/v1/message:send", ops.SEND, V03, body=True),
    Route("POST", "/v1/message:stream", ops.STREAM, V03, body=True),
    # proto says GET, the v0.3 spec prose says POST; peers use both (§2).
    Route("GET", "/v1/tasks/{id}:subscribe", ops.SUBSCRIBE, V03, names=_TASK_NAME),
    Route("POST", "/v1/tasks/{id}:subscribe", ops.SUBSCRIBE, V03, names=_TASK_NAME),
    Route("POST", "/v1/tasks/{id}:cancel", ops.CANCEL, V03, body=True, names=_TASK_NAME),
    Route("GET", "/v1/tasks/{taskId}/pushNotificationConfigs/{id}", ops.PUSH_GET, V03,
          names=_CONFIG_NAME),
    Route("DELETE", "/v1/tasks/{taskId}/pushNotificationConfigs/{id}", ops.PUSH_DELETE, V03,
          names=_CONFIG_NAME),
    Route("POST", "/v1/tasks/{taskId}/pushNotificationConfigs", ops.PUSH_CREATE, V03,
          body=True, names=_PARENT),
    # proto@v0.3.0's typo (singular `task`), still accepted inbound.
    Route("POST", "/v1/task/{taskId}/pushNotificationConfigs", ops.PUSH_CREATE, V03,
          body=True, names=_PARENT),
    Route("GET", "/v1/tasks/{taskId}/pushNotificationConfigs", ops.PUSH_LIST, V03,
          query=_PAGING, names=_PARENT),
    Route("GET", "/v1/tasks/{id}", ops.GET_TASK, V03, query=(_HISTORY,), names=_TASK_NAME),
    Route("GET", "/v1/card", ops.EXTENDED_CARD, V03),
)

_TENANT_PREFIX = re.compile(r"\A/(?P<tenant>[^/:]+)(?P<rest>/.*)\Z", re.DOTALL)


@dataclass(frozen=True)
class Match:
    route: Route
    params: dict[str, str]
    tenant: str | None


def _match_in(routes: tuple[Route, ...], verb: str, path: str) -> Match | None:
    for route in routes:
        if route.verb != verb:
            continue
        m = route.pattern.match(path)
        if m:
            return Match(route, m.groupdict(), None)
    return None


def match_route(verb: str, path: str, header_version: str) -> Match | None:
    """The route a request calls. `/v1/...` is v0.3 unless the client declares 1.x, in
    which case `v1` is a v1.0 tenant (reference §1, REST path ambiguity). A tenant
    prefix works for both versions: v0.3 has no tenant field, so `/{tenant}/v1/...` is
    how a v0.3 REST client picks one. A client that declares 1.0 speaks v1.0 only: a
    path v1.0 does not have (`/v1/card`, `/v1/v1/tasks/x`) matches no route and is
    answered 404 in the v1.0 shape, never served by a v0.3 route in the v0.3 shape."""
    prefixed = _TENANT_PREFIX.match(path)
    direct = [(V03_ROUTES, path, None), (V10_ROUTES, path, None)]
    under_tenant = [] if prefixed is None else [
        (V03_ROUTES, prefixed["rest"], prefixed["tenant"]),
        (V10_ROUTES, prefixed["rest"], prefixed["tenant"])]
    if is_major_1(header_version):  # its paths are read as v1.0 paths only
        tries = [direct[1], *under_tenant[1:]]
    elif path.startswith("/v1/"):
        # Without 1.x, `v1` is the v0.3 prefix, never a v1.0 tenant: `GET /v1/tasks` is a
        # v0.3 path that v0.3 does not have, not ListTasks of a tenant named `v1`.
        tries = [*direct, *under_tenant[:1]]
    else:
        tries = [*direct, *under_tenant]
    for routes, rest, tenant in tries:
        if found := _match_in(routes, verb, rest):
            return Match(found.route, found.params, tenant)
    return None


def allowed_verbs(path: str, header_version: str = "") -> set[str]:
    """Verbs some route accepts at this path, read as match_route reads it (for 405)."""
    verbs = {route.verb for route in (*V03_ROUTES, *V10_ROUTES)}
    return {verb for verb in verbs if match_route(verb, path, header_version) is not None}


def route_for(op: str, version: str, verb: str | None = None) -> Route:
    """The route egress uses for an operation (the first listed, or the given verb)."""
    for route in V10_ROUTES if version == V10 else V03_ROUTES:
        if route.op == op and (verb is None or route.verb == verb):
            return route
    if version == V03 and ops.BY_NAME[op].jsonrpc_v03 is None:
        raise ops.not_in_v03(op)
    raise a2a_error("UnsupportedOperationError",
                    f"{op} has no HTTP+JSON route in A2A {version}; the backend speaks {version}")


def query_values(route: Route, query: dict[str, list[str]]) -> dict[str, Any]:
    """Typed ProtoJSON values for the query parameters a route reads. Repeated keys and
    comma-joined values are both accepted (§11.5); the last scalar wins."""
    out: dict[str, Any] = {}
    for param in route.query:
        raw = query.get(param.name) or query.get(_snake(param.name))
        if not raw:
            continue
        value = raw[-1].split(",")[-1].strip()
        out[param.name] = _typed(param, value)
    return out


def _typed(param: QueryParam, value: str) -> Any:
    if param.kind == "int":
        try:
            return int(value)
        except ValueError:
            raise invalid_params(f"query parameter {param.name} must be an integer") from None
    if param.kind == "bool":
        if value.lower() not in ("true", "false", "1", "0"):
            raise invalid_params(f"query parameter {param.name} must be true or false")
        return value.lower() in ("true", "1")
    return value


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def query_string_values(route: Route, request: dict[str, Any]) -> dict[str, str]:
    """The query parameters egress sends for a route, from a ProtoJSON request."""
    out = {}
    for param in route.query:
        if param.name in request:
            value = request[param.name]
            out[param.name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


_V03_PATH = re.compile(r"^(/[^/:]+)?/v1/")


def dialect_of_path(path: str, header_version: str) -> Version:
    """The version a path speaks when no route matched (for the error's shape):
    `/v1/...` and `/{tenant}/v1/...` are v0.3 unless the client declares 1.x."""
    return V03 if not is_major_1(header_version) and _V03_PATH.match(path) else V10


_JSONRPC_TENANT_PATH = re.compile(r"\A/[^/:]+/?\Z")
# The same paths as routes of the HTTP server (aiohttp's {name:regex} templates), so that
# `POST /{tenant}` reaches the JSON-RPC codec without the REST router's detour.
JSONRPC_TENANT_ROUTES = ("/{tenant:[^/:]+}", "/{tenant:[^/:]+}/")


def is_jsonrpc_path(path: str) -> bool:
    """`POST /{tenant}` (no route of either version looks like it) is JSON-RPC with the
    tenant in the path: every served card lists `<base>/{tenant}/` for JSONRPC."""
    return _JSONRPC_TENANT_PATH.match(path) is not None
