"""The demo agent on the A2A v1.0 JSON-RPC wire (`--protocol 1.0`).

The agent has one engine and one set of methods, on J03 values (gateway.demo.methods).
This module is only an edge around them, and it translates with the gateway's own
dialects, the same code the gateway runs for a v1.0 client in front of a v0.3 backend:

    v1.0 request --JSONRPC_V10.decode_call--> canonical (protobuf) request
                 --JSONRPC_V03.encode_params--> J03 params --> the demo's v0.3 method
    J03 result   --JSONRPC_V03.decode_result--> canonical answer --client codec--> v1.0

So a v1.0 client gets what a v0.3 client gets, by meaning — the same texts, artifacts
and states — only on the v1.0 wire: PascalCase methods, `{"task": ...}` results,
`TASK_STATE_COMPLETED`, `statusUpdate` stream events, ErrorInfo in errors. What v0.3
has no method for is answered here: ListTasks (gateway.demo.listing), the extended card
(a v1.0 card), and SubscribeToTask on a finished task, which v1.0 refuses (spec §3.1.6).

Like the a2a-sdk 1.x servers, the agent reads `A2A-Version` (header, or the query
parameter) and serves 1.0 only: a request without it is a v0.3 request (spec §3.6.2)
and is refused with VersionNotSupportedError, as is a v0.3 method name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from a2a.types import a2a_pb2 as pb
from aiohttp import web
from google.protobuf.message import Message as ProtoMessage

from gateway.demo.card import as_v10, extended_card, public_card
from gateway.demo.engine import Subscription
from gateway.demo.listing import list_tasks
from gateway.demo.methods import STREAMING, UNARY, Context, base_url, context
from gateway.demo.streams import serve_events
from gateway.demo.wire import JSON, TERMINAL_STATES, RpcError, ends_stream
from translators import operations as ops
from translators.dialects.base import DecodedCall
from translators.dialects.contract import HttpAnswer, Refusal
from translators.dialects.jsonrpc import JSONRPC_V03, JsonRpcClient, decode_call
from translators.errors import A2AError, a2a_error, error_from_jsonrpc
from translators.loss import LossReport
from translators.protojson import parse_p10
from translators.versions import V03, V10, VersionRules
from translators.webhooks import CONTENT_TYPE, TOKEN_HEADER, parse_backend_body, snapshot_body

logger = logging.getLogger(__name__)

# The one version served; a missing A2A-Version means 0.3, so it is refused (strict, as
# the a2a-sdk 1.x servers are: the gateway always sends the header to v1.0 backends).
RULES = VersionRules(supported=(V10,))

Call = DecodedCall[HttpAnswer]


def _version_of(request: web.Request) -> str | None:
    return request.headers.get("A2A-Version") or request.query.get("A2A-Version")


def _http(answer: HttpAnswer) -> web.Response:
    return web.Response(status=answer.status, body=answer.body, headers=answer.headers,
                        content_type=answer.content_type)


def _rpc_error(error: RpcError) -> A2AError:
    """A v0.3 method's JSON-RPC error, classified the way the gateway reads a backend's."""
    return error_from_jsonrpc(error.to_json())


def _internal(op: ops.Operation) -> A2AError:
    # The cause goes to the log; the client gets a JSON-RPC error, never an HTML 500.
    logger.exception("demo agent failed on %s", op.name)
    return a2a_error("InternalError", "Internal error")


# --- unary ---------------------------------------------------------------------


async def _through_v03(ctx: Context, op: ops.Operation, request: ProtoMessage,
                       loss: LossReport) -> ProtoMessage | None:
    """A v1.0 call served by the demo's v0.3 method, translated both ways."""
    params = JSONRPC_V03.encode_params(op, request, loss)
    try:
        result = await UNARY[JSONRPC_V03.method(op)](ctx, params)
    except RpcError as error:
        raise _rpc_error(error) from None
    return JSONRPC_V03.decode_result(op, result, loss, request)


async def _get_task(ctx: Context, request: pb.GetTaskRequest) -> pb.Task:
    task = await _through_v03(ctx, ops.BY_NAME[ops.GET_TASK], request, LossReport())
    assert isinstance(task, pb.Task)
    return task


async def answer_unary(ctx: Context, call: Call) -> ProtoMessage | None:
    """The canonical answer to a unary v1.0 call (A2AError when it fails)."""
    if call.op.name == ops.EXTENDED_CARD:
        return parse_p10(as_v10(extended_card(ctx.base_url)), pb.AgentCard)
    if call.op.name == ops.LIST_TASKS:
        assert isinstance(call.request, pb.ListTasksRequest)
        return await list_tasks(ctx.engine.records(), call.request,
                                lambda get: _get_task(ctx, get))
    return await _through_v03(ctx, call.op, call.request, call.loss)


# --- streams -------------------------------------------------------------------


def open_stream(ctx: Context, call: Call) -> Subscription:
    """The events of a streaming v1.0 call, as the demo's v0.3 method makes them (J03)."""
    op = call.op
    if op.name == ops.SUBSCRIBE:
        assert isinstance(call.request, pb.SubscribeToTaskRequest)
        try:
            state = ctx.engine.get(call.request.id).state
        except RpcError as error:
            raise _rpc_error(error) from None
        if state in TERMINAL_STATES:
            # v0.3 answered a finished task's snapshot; v1.0 refuses (spec §3.1.6).
            raise a2a_error("UnsupportedOperationError",
                            f"task {call.request.id} is {state}: there is nothing to "
                            "subscribe to")
    params = JSONRPC_V03.encode_params(op, call.request, call.loss)
    try:
        return STREAMING[JSONRPC_V03.method(op)](ctx, params)
    except RpcError as error:
        raise _rpc_error(error) from None


def _event_writer(call: Call, codec: JsonRpcClient) -> Callable[[JSON], bytes]:
    def frame(event: JSON) -> bytes:
        try:
            item = JSONRPC_V03.decode_event(event, call.loss, call.request)
        except A2AError as err:
            # A bug of ours (an event the translator cannot read): said in the stream.
            logger.error("demo agent event not translatable: %s", err.message)
            return codec.error_frame(err)
        return codec.event_frame(item, ends_stream(event), call.loss)

    return frame


# --- HTTP ----------------------------------------------------------------------


async def handle_rpc(request: web.Request) -> web.StreamResponse:
    try:
        call = decode_call(await request.read(), _version_of(request), None, RULES)
    except Refusal as no:
        answer = no.answer()
        assert isinstance(answer, HttpAnswer)
        return _http(answer)
    codec = call.codec
    assert isinstance(codec, JsonRpcClient)
    ctx = context(request)
    try:
        if call.op.streaming:
            events = open_stream(ctx, call)
        else:
            result = await answer_unary(ctx, call)
    except A2AError as err:
        # Before the first event too: a JSON answer, not SSE (reference §3.8).
        return _http(codec.refusal(err))
    except Exception:
        return _http(codec.refusal(_internal(call.op)))
    if call.op.streaming:
        return await serve_events(request, events, _event_writer(call, codec))
    return web.Response(body=codec.answer(result, call.loss), content_type="application/json")


async def handle_card(request: web.Request) -> web.Response:
    return web.json_response(as_v10(public_card(base_url(request))))


def render_push(config: JSON, task: JSON) -> tuple[JSON, dict[str, str]]:
    """A push notification the v1.0 way (spec@v1.0.1 §4.3.3): a StreamResponse holding
    the Task, `application/a2a+json`, and `Authorization: <scheme> <credentials>` built
    from the config's authentication; the token header as a2a-sdk 1.x sends it too."""
    loss = LossReport()
    event = parse_backend_body(task, V03, loss)
    body = snapshot_body(event.task, V10, loss)
    headers = {"Content-Type": CONTENT_TYPE[V10]}
    if config.get("token"):
        headers[TOKEN_HEADER] = config["token"]
    auth = config.get("authentication") or {}
    schemes, credentials = auth.get("schemes") or [], auth.get("credentials")
    if schemes and credentials:
        headers["Authorization"] = f"{schemes[0]} {credentials}"
    return body, headers
