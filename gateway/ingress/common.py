"""What every HTTP ingress codec reads from a request and writes on a response."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass

from aiohttp import web

from gateway.auth.peer import http_peer_cert
from gateway.auth.principal import CHALLENGE_KEY
from gateway.call import Call, CallContext, ClientFacts, new_request_id
from gateway.http.request import ClientRequest
from gateway.observability import tracing
from gateway.observability.logs.access import CALL_KEY, note_error
from gateway.pipeline.core import Gateway
from gateway.pipeline.holder import GatewayHolder
from translators import versions
from translators.dialects.base import DecodedCall, HttpAnswer
from translators.dialects.contract import ErrorAnswer
from translators.errors import A2AError, a2a_error
from translators.loss import FIRST_ATTEMPT, LossReport

GATEWAY_KEY = web.AppKey("gateway", GatewayHolder)
DROPPED_HEADER = "A2A-Gateway-Dropped"
_REQUEST_ID = re.compile(r"^[\w.:@-]{1,128}$")
# The loss report of a request not decoded yet: nothing lost, nothing to record (only its
# refusal reads it). One for every such request, never written: :func:`bind` puts the
# decoding's own report in its place. A report made per request cost 40% of the
# request's CallContext, and every decoded call threw it away.
UNDECODED = LossReport(attempt=FIRST_ATTEMPT)


def gateway_of(request: ClientRequest) -> Gateway:
    return app_gateway(request.app)


def app_gateway(app: web.Application) -> Gateway:
    """The gateway an HTTP app serves now (a reload swaps it)."""
    return app[GATEWAY_KEY].current


async def read_body(request: web.Request, gateway: Gateway) -> bytes:
    """The request body, refused with PayloadTooLargeError past `max_body_bytes` (before
    reading it when Content-Length says so) and with RequestTimeoutError when it does not
    arrive within `limits.body_timeout`."""
    try:
        return await _read_body(request, gateway)
    except web.RequestPayloadError:
        # A chunk or a Content-Encoding that does not decode: the client's error (it
        # escaped as an InternalError with a traceback). aiohttp's text is not echoed.
        raise a2a_error("InvalidRequestError", "the request body cannot be read: its "
                        "transfer or content encoding does not decode") from None


async def _read_body(request: web.Request, gateway: Gateway) -> bytes:
    limit = gateway.config.max_body_bytes
    try:
        declared = request.content_length
    except ValueError:
        # More digits than int() reads (zero-padded: HTTP allows it, and aiohttp's parser
        # read the body by its value): the bounded read below says how large it is.
        declared = None
    if declared is not None and declared > limit:
        raise _too_large(limit)
    content = request.content
    if content.is_eof():
        # The whole body came with the headers (a small call, the usual case): nothing
        # to wait for, so no timer and no iterator (7-8% of a small call's samples).
        body = content.read_nowait()
        if len(body) > limit:
            raise _too_large(limit)
        return body
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(gateway.config.limits.body_timeout):
            async for chunk in request.content.iter_chunked(64 * 1024):
                size += len(chunk)
                if size > limit:
                    raise _too_large(limit)
                chunks.append(chunk)
    except TimeoutError:
        raise a2a_error("RequestTimeoutError", f"the request body did not arrive within "
                        f"{gateway.config.limits.body_timeout:g} s") from None
    return b"".join(chunks)


def _too_large(limit: int) -> A2AError:
    return a2a_error("PayloadTooLargeError", f"the request body is larger than "
                     f"{limit} bytes (max_body_bytes)", limit=limit)



def declared_version(request: ClientRequest) -> versions.Version:
    """The version a request's A2A-Version names, for answers given before its payload
    said one: 1.0, or else 0.3 (absent means 0.3, spec §3.6.2)."""
    return versions.declared_version(header_version(request))


def header_version(request: ClientRequest) -> str | None:
    """A2A-Version from the header, else the query parameter (spec §3.6.1)."""
    return request.headers.get("A2A-Version") or request.query.get("A2A-Version")


def split_extensions(values: Iterable[str]) -> tuple[str, ...]:
    """Extension URIs from `A2A-Extensions` / `X-A2A-Extensions` values (comma lists)."""
    seen: list[str] = []
    for value in values:
        for uri in value.split(","):
            uri = uri.strip()
            if uri and uri not in seen:
                seen.append(uri)
    return tuple(seen)


def _extensions(request: ClientRequest) -> tuple[str, ...]:
    headers = request.headers
    if "A2A-Extensions" not in headers and "X-A2A-Extensions" not in headers:
        return ()  # most requests name none: two look-ups, no lists
    return split_extensions([*headers.getall("A2A-Extensions", []),
                             *headers.getall("X-A2A-Extensions", [])])


def valid_request_id(value: str | None) -> bool:
    return bool(value) and _REQUEST_ID.match(value or "") is not None


def client_context(request: ClientRequest, gateway: Gateway, binding: str) -> CallContext:
    """What the client's HTTP request says beside its payload (the version comes from the
    payload: :func:`bind` sets it once decoded)."""
    headers = request.headers
    rid = headers.get("X-Request-ID", "")
    authenticates = gateway.auth is not None
    ctx = CallContext(ClientFacts(
        binding, rid if valid_request_id(rid) else new_request_id(),
        {h: headers[h] for h in gateway.config.forward_headers if h in headers},
        _extensions(request),
        # Read only by the extended card: not worked out for every call.
        public_base=lambda: gateway.cards.address.http_base(request),
        credentials=headers if authenticates else {},
        peer_cert=http_peer_cert(request.transport) if authenticates else None,
        resume_from=headers.get("Last-Event-ID")), loss=UNDECODED)
    tracing.take(ctx, headers)
    request[CALL_KEY] = ctx  # for its access line (gateway/observability/logs/access.py)
    return ctx


def bind(ctx: CallContext, decoded: DecodedCall[ErrorAnswer]) -> Call:
    """The call a decoded request makes, in the context it came with."""
    dialect = decoded.dialect
    ctx.client_version = dialect.version
    ctx.extension_header = dialect.extension_header
    ctx.tenant = decoded.tenant
    ctx.loss = decoded.loss
    tracing.decoded(ctx, decoded)
    return Call(decoded.op, decoded.request, ctx, dialect, wire=decoded.wire)


def dialect_headers(ctx: CallContext) -> dict[str, str]:
    """Response headers in the client's dialect: request id, activated extensions, losses."""
    headers = {"X-Request-ID": ctx.facts.request_id}
    echoed = ctx.outcome.response_headers
    extensions = echoed.get("a2a-extensions") or echoed.get("x-a2a-extensions")
    if extensions:
        headers[ctx.extension_header] = extensions
    if ctx.loss.dropped:
        headers[DROPPED_HEADER] = ",".join(ctx.loss.dropped)
    return headers


@dataclass(slots=True)  # not frozen: one per call (see WireRequest, dialects/contract.py)
class Reply:
    """An answer a dialect rendered, with the headers that go with it on HTTP: what
    aiohttp's route turns into a response (:func:`as_response`) and the fast lane writes
    itself (ingress/fast_lane.py)."""

    answer: HttpAnswer
    headers: dict[str, str]

    @property
    def closes(self) -> bool:
        """An answer about the transport itself (a body too large or too slow) closes
        the connection."""
        return self.answer.status in (408, 413)


def as_response(reply: Reply) -> web.Response:
    answer = reply.answer
    response = web.Response(body=answer.body, status=answer.status,
                            headers={**reply.headers, **answer.headers},
                            content_type=answer.content_type)
    if reply.closes:
        response.force_close()
    return response


def http_answer(answer: HttpAnswer, headers: dict[str, str] | None = None) -> web.Response:
    """An answer a dialect rendered, with the dialect headers."""
    return as_response(Reply(answer, headers or {}))


def refusal(answer: HttpAnswer, err: A2AError, ctx: CallContext | None) -> Reply:
    """The answer to a refused request: the dialect's rendering, the dialect headers and,
    when the error says when to retry, Retry-After."""
    headers = dialect_headers(ctx) if ctx is not None else {}
    if ctx is not None and ctx.error is None:
        note_error(ctx, err)  # also a refusal before the operation was known (bad JSON)
    retry_after = err.metadata.get("retry_after")
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    challenge = err.metadata.get(CHALLENGE_KEY)
    if challenge is not None:
        headers["WWW-Authenticate"] = challenge
    return Reply(answer, headers)


def refused(answer: HttpAnswer, err: A2AError, ctx: CallContext | None) -> web.Response:
    return as_response(refusal(answer, err, ctx))
