"""Probing one advertised interface: which dialect really answers there, and which
operations work in it.

Safe by default: every call names a random task id that cannot exist (GetTask, CancelTask,
SubscribeToTask and the push-config calls answer TaskNotFound when the operation is
served), ListTasks reads one page, and the extended card is read when the card offers
it. With a text to send, a real task is made and the calls are repeated on it.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import aiohttp
from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from gateway.doctor.classify import NOT_SERVED, describe
from gateway.doctor.report import ERROR, NA, SKIPPED, WORKS, InterfaceReport, OperationResult
from gateway.doctor.target import Advertised
from gateway.doctor.wire import Outcome, Prober
from translators import operations as ops
from translators.versions import V03, V10

Progress = Callable[[str], None]
WEBHOOK = "http://127.0.0.1:9/a2a-gateway-doctor"  # never called: the probe task is done


def random_id() -> str:
    return f"doctor-{uuid.uuid4().hex}"


def user_message(text: str, task_id: str = "") -> pb.Message:
    msg = pb.Message(message_id=uuid.uuid4().hex, role=pb.ROLE_USER, task_id=task_id)
    msg.parts.add(text=text)
    return msg


def _other_http(binding: str) -> str:
    return {"JSONRPC": "HTTP+JSON", "HTTP+JSON": "JSONRPC"}.get(binding, "")


@dataclass
class Probed:
    """One interface, probed: the report and the prober of the dialect that answered."""

    report: InterfaceReport
    prober: Prober | None = None
    probes: dict[str, Outcome] = field(default_factory=dict)  # "GRPC 0.3" -> GetTask answer
    task_id: str = ""  # the task --send made, if any


def _answered(out: Outcome) -> bool:
    return out.a2a and (out.error is None or (out.error.name not in NOT_SERVED
                        and out.error.name != "VersionNotSupportedError"))


async def detect(adv: Advertised, session: aiohttp.ClientSession,
                 progress: Progress, extensions: list[str] | None = None) -> Probed:
    """Ask GetTask(random id) in each candidate dialect: the advertised binding in both
    versions (advertised first), then, if nothing answered, the other HTTP binding."""
    report = InterfaceReport(adv.url, adv.binding, adv.version)
    probed = Probed(report)
    # The advertised version first (when it is one the gateway speaks), then the other.
    first = adv.version if adv.version in (V10, V03) else V10
    versions = [first, V03 if first == V10 else V10]
    binding0 = adv.binding or "JSONRPC"  # not advertised: try the HTTP bindings
    candidates = [(binding0, v) for v in versions]
    tried_other = False
    probers: list[Prober] = []
    while candidates:
        binding, version = candidates.pop(0)
        prober = Prober(adv.url, binding, version, session, tenant=adv.tenant,
                        extensions=extensions)
        probers.append(prober)
        progress(f"  probing {adv.url} as {binding} {version}")
        out = await prober.call(ops.GET_TASK, pb.GetTaskRequest(id=random_id()))
        probed.probes[prober.dialect_name] = out
        report.reachable = report.reachable or out.reachable
        if _answered(out):
            report.answered.append(prober.dialect_name)
            if out.error is not None and out.error.shape not in ("none", prober.dialect_name):
                report.note += (f"called as {prober.dialect_name}, its error came in the "
                                f"{out.error.shape} shape. ")
        if not out.reachable:
            break  # nothing listens: no other dialect will fare better
        if not candidates and not report.answered and not tried_other and _other_http(binding):
            tried_other = True
            candidates = [(_other_http(binding), v) for v in versions]
    advertised = f"{adv.binding} {adv.version}"
    if not report.reachable:
        report.agreement = "unreachable"
        report.note += "nothing answers at this address. "
    elif not adv.binding:
        report.agreement = "not advertised"
        report.note += "no card lists this address. "
    elif advertised in report.answered:
        report.agreement = "as advertised"
    else:
        report.agreement = "differs"
        seen = ", ".join(report.answered) or "no A2A dialect"
        report.note += f"the card says {advertised}; {seen} answered. "
    chosen = advertised if advertised in report.answered else (
        report.answered[0] if report.answered else "")
    for prober in probers:
        if prober.dialect_name == chosen and probed.prober is None:
            probed.prober = prober
        else:
            await prober.close()
    report.note = report.note.strip()
    return probed


def _unknown_id_result(op: str, out: Outcome) -> OperationResult:
    """An operation called on a task that does not exist: TaskNotFound means it is served."""
    if out.error is None:
        return OperationResult(op, WORKS, "answered (no error for an unknown task)")
    if out.error.name == "TaskNotFoundError":
        return OperationResult(op, WORKS, f"TaskNotFound for an unknown task ({out.error.shape}"
                               f", {out.error.wire_code})", out.error)
    return OperationResult(op, ERROR, describe(out.error), out.error)


def _call_result(op: str, out: Outcome, what: str,
                 accept: tuple[str, ...] = ()) -> OperationResult:
    if out.error is None:
        return OperationResult(op, WORKS, what)
    if out.error.name in accept:
        return OperationResult(op, WORKS, f"{describe(out.error)} (an answer, as expected)",
                               out.error)
    return OperationResult(op, ERROR, describe(out.error), out.error)


async def operations(probed: Probed, send: str | None, extended_card: bool,
                     progress: Progress) -> None:
    """The operation table of the interface's answering dialect."""
    prober = probed.prober
    report = probed.report
    if prober is None:
        report.operations = [OperationResult(op.name, SKIPPED, "the interface does not answer")
                             for op in ops.OPERATIONS]
        return
    progress(f"  operations of {report.url} as {prober.dialect_name}")
    results: dict[str, OperationResult] = {}
    call: Callable[[str, ProtoMessage], Awaitable[Outcome]] = prober.call
    task = ""
    if send is not None:
        out = await call(ops.SEND, pb.SendMessageRequest(message=user_message(send)))
        if out.error is None and isinstance(out.result, pb.SendMessageResponse):
            kind = out.result.WhichOneof("payload") or "nothing"
            task = out.result.task.id if kind == "task" else ""
            state = pb.TaskState.Name(out.result.task.status.state) if task else ""
            results[ops.SEND] = OperationResult(ops.SEND, WORKS, f"answered a {kind} {state}"
                                                .strip())
        else:
            results[ops.SEND] = _call_result(ops.SEND, out, "")
        out = await call(ops.STREAM, pb.SendMessageRequest(message=user_message(send)))
        results[ops.STREAM] = _call_result(ops.STREAM, out, f"{len(out.events)} event(s)")
        if out.error is None and not out.events:
            results[ops.STREAM] = OperationResult(ops.STREAM, ERROR, "the stream ended empty")
    else:
        for name in (ops.SEND, ops.STREAM):
            results[name] = OperationResult(name, SKIPPED, "not sent (use --send TEXT)")
    probed.task_id = task
    tid = task or random_id()

    def on_task(op: str, out: Outcome, what: str, *accept: str) -> OperationResult:
        return _call_result(op, out, what, accept) if task else _unknown_id_result(op, out)

    out = await call(ops.GET_TASK, pb.GetTaskRequest(id=tid))
    results[ops.GET_TASK] = on_task(ops.GET_TASK, out, "the task sent")
    if prober.version == V03:
        results[ops.LIST_TASKS] = OperationResult(ops.LIST_TASKS, NA, "ListTasks does not "
                                                  "exist in A2A v0.3")
    else:
        out = await call(ops.LIST_TASKS, pb.ListTasksRequest(page_size=1))
        results[ops.LIST_TASKS] = _call_result(ops.LIST_TASKS, out, "listed one page")
    out = await call(ops.SUBSCRIBE, pb.SubscribeToTaskRequest(id=tid))
    # A subscription to a finished task is refused, in words that differ per SDK.
    results[ops.SUBSCRIBE] = on_task(ops.SUBSCRIBE, out, f"{len(out.events)} event(s)",
                                     "UnsupportedOperationError", "InvalidParamsError")
    cid = "doctor"
    if task:
        create = pb.TaskPushNotificationConfig(task_id=task, id=cid, url=WEBHOOK)
        out = await call(ops.PUSH_CREATE, create)
        results[ops.PUSH_CREATE] = _call_result(ops.PUSH_CREATE, out, "created")
        if out.error is None and isinstance(out.result, pb.TaskPushNotificationConfig):
            cid = out.result.id or cid
    else:
        results[ops.PUSH_CREATE] = OperationResult(ops.PUSH_CREATE, SKIPPED,
                                                   "needs a task (use --send TEXT)")
    out = await call(ops.PUSH_GET, pb.GetTaskPushNotificationConfigRequest(task_id=tid, id=cid))
    results[ops.PUSH_GET] = on_task(ops.PUSH_GET, out, "read back")
    out = await call(ops.PUSH_LIST, pb.ListTaskPushNotificationConfigsRequest(task_id=tid))
    results[ops.PUSH_LIST] = on_task(ops.PUSH_LIST, out, "listed")
    out = await call(ops.PUSH_DELETE,
                     pb.DeleteTaskPushNotificationConfigRequest(task_id=tid, id=cid))
    results[ops.PUSH_DELETE] = on_task(ops.PUSH_DELETE, out, "deleted")
    if task:
        out = await call(ops.CANCEL, pb.CancelTaskRequest(id=task))
        results[ops.CANCEL] = _call_result(ops.CANCEL, out, "canceled",
                                           ("TaskNotCancelableError",))
    else:
        out = await call(ops.CANCEL, pb.CancelTaskRequest(id=tid))
        results[ops.CANCEL] = _unknown_id_result(ops.CANCEL, out)
    if extended_card:
        out = await call(ops.EXTENDED_CARD, pb.GetExtendedAgentCardRequest())
        results[ops.EXTENDED_CARD] = _call_result(ops.EXTENDED_CARD, out, "read")
    else:
        results[ops.EXTENDED_CARD] = OperationResult(ops.EXTENDED_CARD, SKIPPED,
                                                     "the card does not offer one")
    report.operations = [results[op.name] for op in ops.OPERATIONS]
