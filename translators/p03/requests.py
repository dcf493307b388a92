"""P03 requests and responses ⇄ P10 requests and responses, one row per operation.

Reference §3.7 (SendMessage: blocking/returnImmediately, historyLength 0), §3.8 (result
wrappers), §3.9 (push configs: resource names in v0.3, flat fields in v1.0), §3.10
(metadata v0.3 cannot carry), §6.2/§6.3 (the message types per method). The v1.0
`tenant` never travels to v0.3: it picked the backend, and v0.3 has no tenant (§4.7).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.errors import invalid_params
from translators.loss import LossReport
from translators.p03.card import card_for_v03, card_to_p10
from translators.p03.common import (
    BytesMode,
    parse_push_config_name,
    parse_task_name,
    push_config_name,
    task_name,
)
from translators.p03.objects import (
    message_to_p03,
    message_to_p10,
    send_response_to_p03,
    send_response_to_p10,
    stream_response_to_p03,
    stream_response_to_p10,
    task_to_p03,
    task_to_p10,
)
from translators.p03.push import (
    push_config_to_p03,
    push_config_to_p10,
    task_push_config_to_p03,
    task_push_config_to_p10,
)
from translators.validation import check_history_length

# ---------------------------------------------------------------- SendMessage


def _history_length_to_p03(value: int, field: str) -> int:
    """v1.0 N>0 → N; 0 ("no history") cannot be said to v0.3, where 0 means all: omit
    it and let the answer rules empty the answer (translators/answers.py, §3.7)."""
    check_history_length(value, field)
    return value


def send_configuration_to_p10(conf: v03.SendMessageConfiguration,
                              loss: LossReport) -> pb.SendMessageConfiguration:
    # `blocking` has no presence in the v0.3 proto: unset reads as false, which py@v0.3
    # served non-blocking, so the inversion makes absent mean returnImmediately (§3.7).
    out = pb.SendMessageConfiguration(accepted_output_modes=conf.accepted_output_modes,
                                      return_immediately=not conf.blocking)
    if conf.HasField("push_notification"):
        out.task_push_notification_config.CopyFrom(push_config_to_p10(
            conf.push_notification, "", "configuration.pushNotification", loss))
    # v0.3: 0 means all history, which is v1.0's unset; only N>0 truncates (§3.7).
    check_history_length(conf.history_length, "configuration.historyLength")
    if conf.history_length > 0:
        out.history_length = conf.history_length
    return out


def send_configuration_to_p03(conf: pb.SendMessageConfiguration,
                              loss: LossReport) -> v03.SendMessageConfiguration:
    # Explicit, true included: a v0.3 peer reads a missing flag as non-blocking (§3.7).
    out = v03.SendMessageConfiguration(accepted_output_modes=conf.accepted_output_modes,
                                       blocking=not conf.return_immediately)
    if conf.HasField("task_push_notification_config"):
        tpnc = conf.task_push_notification_config
        if tpnc.task_id:  # the message names the task; v0.3's config has no task field
            loss.drop("configuration.taskPushNotificationConfig.taskId")
        out.push_notification.CopyFrom(push_config_to_p03(tpnc))
    if conf.HasField("history_length"):
        out.history_length = _history_length_to_p03(conf.history_length,
                                                     "configuration.historyLength")
    return out


def send_request_to_p10(req: v03.SendMessageRequest, loss: LossReport,
                        bytes_mode: BytesMode) -> pb.SendMessageRequest:
    if not req.HasField("request"):  # proto name `request`, JSON name `message` (§3.7)
        raise invalid_params("message is required", field="message")
    out = pb.SendMessageRequest(
        message=message_to_p10(req.request, "message", loss, bytes_mode=bytes_mode))
    if req.HasField("configuration"):
        # No configuration at all stays absent: py@v0.3 served that blocking, as v1.0 does.
        out.configuration.CopyFrom(send_configuration_to_p10(req.configuration, loss))
    if req.HasField("metadata"):
        out.metadata.CopyFrom(req.metadata)
    return out


def send_request_to_p03(req: pb.SendMessageRequest, loss: LossReport,
                        bytes_mode: BytesMode) -> v03.SendMessageRequest:
    if not req.HasField("message"):
        raise invalid_params("message is required", field="message")
    out = v03.SendMessageRequest(
        request=message_to_p03(req.message, "message", loss, bytes_mode=bytes_mode))
    # Always sent, so that `blocking` is explicit even when the v1.0 client relied on
    # the v1.0 default.
    out.configuration.CopyFrom(send_configuration_to_p03(req.configuration, loss))
    if req.HasField("metadata"):
        out.metadata.CopyFrom(req.metadata)
    return out


# ---------------------------------------------------------------- task-named requests


def get_task_to_p10(req: v03.GetTaskRequest, loss: LossReport,
                    bytes_mode: BytesMode) -> pb.GetTaskRequest:
    out = pb.GetTaskRequest(id=parse_task_name(req.name, "name"))
    check_history_length(req.history_length, "historyLength")
    if req.history_length > 0:  # v0.3 0 = all = v1.0 unset (§3.7)
        out.history_length = req.history_length
    return out


def get_task_to_p03(req: pb.GetTaskRequest, loss: LossReport,
                    bytes_mode: BytesMode) -> v03.GetTaskRequest:
    out = v03.GetTaskRequest(name=task_name(req.id, "id"))
    if req.HasField("history_length"):
        out.history_length = _history_length_to_p03(req.history_length, "historyLength")
    return out


def cancel_to_p10(req: v03.CancelTaskRequest, loss: LossReport,
                  bytes_mode: BytesMode) -> pb.CancelTaskRequest:
    return pb.CancelTaskRequest(id=parse_task_name(req.name, "name"))


def cancel_to_p03(req: pb.CancelTaskRequest, loss: LossReport,
                  bytes_mode: BytesMode) -> v03.CancelTaskRequest:
    if req.metadata.fields:  # v0.3 CancelTaskRequest is {name} only (§3.10)
        loss.drop("metadata")
    return v03.CancelTaskRequest(name=task_name(req.id, "id"))


def subscribe_to_p10(req: v03.TaskSubscriptionRequest, loss: LossReport,
                     bytes_mode: BytesMode) -> pb.SubscribeToTaskRequest:
    return pb.SubscribeToTaskRequest(id=parse_task_name(req.name, "name"))


def subscribe_to_p03(req: pb.SubscribeToTaskRequest, loss: LossReport,
                     bytes_mode: BytesMode) -> v03.TaskSubscriptionRequest:
    return v03.TaskSubscriptionRequest(name=task_name(req.id, "id"))


# ---------------------------------------------------------------- push configs


def push_create_to_p10(req: v03.CreateTaskPushNotificationConfigRequest, loss: LossReport,
                       bytes_mode: BytesMode) -> pb.TaskPushNotificationConfig:
    # `parent` is the route's task (py lets it override config.name, and so do we).
    task_id = parse_task_name(req.parent, "parent")
    out = push_config_to_p10(req.config.push_notification_config, task_id,
                             "config.pushNotificationConfig", loss)
    name_id = parse_push_config_name(req.config.name, "config.name")[1] \
        if req.config.name else ""
    # No id anywhere: the SDKs' default config id is the task id (§3.9).
    out.id = out.id or req.config_id or name_id or task_id
    return out


def push_create_to_p03(cfg: pb.TaskPushNotificationConfig, loss: LossReport,
                       bytes_mode: BytesMode) -> v03.CreateTaskPushNotificationConfigRequest:
    config = task_push_config_to_p03(cfg, "")
    return v03.CreateTaskPushNotificationConfigRequest(
        parent=task_name(cfg.task_id, "taskId"),
        config_id=config.push_notification_config.id, config=config)


def push_get_to_p10(req: v03.GetTaskPushNotificationConfigRequest, loss: LossReport,
                    bytes_mode: BytesMode) -> pb.GetTaskPushNotificationConfigRequest:
    task_id, config_id = parse_push_config_name(req.name, "name")
    return pb.GetTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)


def push_get_to_p03(req: pb.GetTaskPushNotificationConfigRequest, loss: LossReport,
                    bytes_mode: BytesMode) -> v03.GetTaskPushNotificationConfigRequest:
    return v03.GetTaskPushNotificationConfigRequest(
        name=push_config_name(req.task_id, req.id, "taskId", "id"))


def push_delete_to_p10(req: v03.DeleteTaskPushNotificationConfigRequest, loss: LossReport,
                       bytes_mode: BytesMode) -> pb.DeleteTaskPushNotificationConfigRequest:
    task_id, config_id = parse_push_config_name(req.name, "name")
    return pb.DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)


def push_delete_to_p03(req: pb.DeleteTaskPushNotificationConfigRequest, loss: LossReport,
                       bytes_mode: BytesMode) -> v03.DeleteTaskPushNotificationConfigRequest:
    return v03.DeleteTaskPushNotificationConfigRequest(
        name=push_config_name(req.task_id, req.id, "taskId", "id"))


# The v0.3 list request and response have the same paging fields as v1.0 (§6.3), so
# pageSize, pageToken and nextPageToken all travel; only the task moves into `parent`.
def push_list_to_p10(req: v03.ListTaskPushNotificationConfigRequest, loss: LossReport,
                     bytes_mode: BytesMode) -> pb.ListTaskPushNotificationConfigsRequest:
    return pb.ListTaskPushNotificationConfigsRequest(
        task_id=parse_task_name(req.parent, "parent"), page_size=req.page_size,
        page_token=req.page_token)


def push_list_to_p03(req: pb.ListTaskPushNotificationConfigsRequest, loss: LossReport,
                     bytes_mode: BytesMode) -> v03.ListTaskPushNotificationConfigRequest:
    return v03.ListTaskPushNotificationConfigRequest(
        parent=task_name(req.task_id, "taskId"), page_size=req.page_size,
        page_token=req.page_token)


def push_list_response_to_p10(resp: v03.ListTaskPushNotificationConfigResponse,
                              loss: LossReport, bytes_mode: BytesMode,
                              ) -> pb.ListTaskPushNotificationConfigsResponse:
    return pb.ListTaskPushNotificationConfigsResponse(
        configs=[task_push_config_to_p10(c, f"configs[{i}]", loss)
                 for i, c in enumerate(resp.configs)],
        next_page_token=resp.next_page_token)


def push_list_response_to_p03(resp: pb.ListTaskPushNotificationConfigsResponse,
                              loss: LossReport, bytes_mode: BytesMode,
                              ) -> v03.ListTaskPushNotificationConfigResponse:
    return v03.ListTaskPushNotificationConfigResponse(
        configs=[task_push_config_to_p03(c, f"configs[{i}]") for i, c in enumerate(resp.configs)],
        next_page_token=resp.next_page_token)


# ---------------------------------------------------------------- the table

Translate = Callable[[Any, LossReport, BytesMode], Any]


def _none(_: Any, __: LossReport, ___: BytesMode) -> None:
    return None  # google.protobuf.Empty on both sides


@dataclass(frozen=True)
class P03Rules:
    """One operation in v0.3 proto terms: its v0.3 message types (what a gRPC stub or a
    REST body parses into) and the four translations."""

    request_type: type[ProtoMessage]
    response_type: type[ProtoMessage] | None  # None: google.protobuf.Empty
    request_to_p10: Translate
    request_to_p03: Translate
    response_to_p10: Translate
    response_to_p03: Translate


def _stream_resp_to_p03(r: pb.StreamResponse, loss: LossReport,
                        bytes_mode: BytesMode) -> v03.StreamResponse:
    # `final` is decided by the stream encoder, which sees the next event (§3.6); it
    # calls objects.stream_response_to_p03 with it directly.
    return stream_response_to_p03(r, False, "", loss, bytes_mode=bytes_mode)


def _tpnc_resp(to_p10: bool) -> Translate:
    if to_p10:
        return lambda r, loss, bm: task_push_config_to_p10(r, "", loss)
    return lambda r, loss, bm: task_push_config_to_p03(r, "")


P03_RULES: dict[str, P03Rules] = {
    ops.SEND: P03Rules(v03.SendMessageRequest, v03.SendMessageResponse,
                       send_request_to_p10, send_request_to_p03,
                       send_response_to_p10.rooted, send_response_to_p03.rooted),
    ops.STREAM: P03Rules(v03.SendMessageRequest, v03.StreamResponse,
                         send_request_to_p10, send_request_to_p03,
                         stream_response_to_p10.rooted, _stream_resp_to_p03),
    ops.GET_TASK: P03Rules(v03.GetTaskRequest, v03.Task, get_task_to_p10, get_task_to_p03,
                           task_to_p10.rooted, task_to_p03.rooted),
    ops.CANCEL: P03Rules(v03.CancelTaskRequest, v03.Task, cancel_to_p10, cancel_to_p03,
                         task_to_p10.rooted, task_to_p03.rooted),
    ops.SUBSCRIBE: P03Rules(v03.TaskSubscriptionRequest, v03.StreamResponse,
                            subscribe_to_p10, subscribe_to_p03,
                            stream_response_to_p10.rooted, _stream_resp_to_p03),
    ops.PUSH_CREATE: P03Rules(v03.CreateTaskPushNotificationConfigRequest,
                              v03.TaskPushNotificationConfig,
                              push_create_to_p10, push_create_to_p03,
                              _tpnc_resp(True), _tpnc_resp(False)),
    ops.PUSH_GET: P03Rules(v03.GetTaskPushNotificationConfigRequest,
                           v03.TaskPushNotificationConfig, push_get_to_p10, push_get_to_p03,
                           _tpnc_resp(True), _tpnc_resp(False)),
    ops.PUSH_LIST: P03Rules(v03.ListTaskPushNotificationConfigRequest,
                            v03.ListTaskPushNotificationConfigResponse,
                            push_list_to_p10, push_list_to_p03,
                            push_list_response_to_p10, push_list_response_to_p03),
    ops.PUSH_DELETE: P03Rules(v03.DeleteTaskPushNotificationConfigRequest, None,
                              push_delete_to_p10, push_delete_to_p03, _none, _none),
    ops.EXTENDED_CARD: P03Rules(
        v03.GetAgentCardRequest, v03.AgentCard,
        lambda r, loss, bm: pb.GetExtendedAgentCardRequest(),
        lambda r, loss, bm: v03.GetAgentCardRequest(),
        lambda r, loss, bm: card_to_p10(r, loss),
        lambda r, loss, bm: card_for_v03(r, loss)),
}


def p03_rules(op: str) -> P03Rules:
    """The row for a canonical operation name; ListTasks has no v0.3 form (§5)."""
    rules = P03_RULES.get(op)
    if rules is None:
        if op in ops.BY_NAME:
            raise ops.not_in_v03(op)
        raise KeyError(op)
    return rules


def _checked(msg: Any, cls: type[ProtoMessage] | None, what: str) -> None:
    if cls is not None and not isinstance(msg, cls):
        raise TypeError(f"{what}: expected {cls.DESCRIPTOR.full_name}, "
                        f"got {type(msg).__name__}")


def request_to_p10(op: str, request: ProtoMessage, loss: LossReport, *,
                   bytes_mode: BytesMode = "auto") -> ProtoMessage:
    """A v0.3 client's request (v0.3 message) → the canonical v1.0 request."""
    rules = p03_rules(op)
    _checked(request, rules.request_type, op)
    out: ProtoMessage = rules.request_to_p10(request, loss, bytes_mode)
    return out


def request_to_p03(op: str, request: ProtoMessage, loss: LossReport, *,
                   bytes_mode: BytesMode = "double") -> ProtoMessage:
    """The canonical v1.0 request → the v0.3 message for a v0.3 backend."""
    rules = p03_rules(op)
    _checked(request, ops.BY_NAME[op].request, op)
    out: ProtoMessage = rules.request_to_p03(request, loss, bytes_mode)
    return out


def response_to_p10(op: str, response: ProtoMessage | None, loss: LossReport, *,
                    bytes_mode: BytesMode = "auto") -> ProtoMessage | None:
    """A v0.3 backend's answer → the canonical v1.0 answer (None for Empty). Shape errors
    come out as InvalidParams: callers reclassify them (protojson.reclassify)."""
    rules = p03_rules(op)
    loss.answering = True
    if rules.response_type is None:
        return None
    _checked(response, rules.response_type, op)
    out: ProtoMessage = rules.response_to_p10(response, loss, bytes_mode)
    return out


def response_to_p03(op: str, response: ProtoMessage | None, loss: LossReport, *,
                    bytes_mode: BytesMode = "double") -> ProtoMessage | None:
    """The canonical v1.0 answer → the v0.3 message for a v0.3 client (None for Empty)."""
    rules = p03_rules(op)
    loss.answering = True
    if rules.response_type is None:
        return None
    _checked(response, ops.BY_NAME[op].response, op)
    out: ProtoMessage = rules.response_to_p03(response, loss, bytes_mode)
    return out
