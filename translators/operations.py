"""The operation table: the eleven v1.0 operations and their names in every dialect.

Reference §2 and §6.1. The canonical name of an operation is its v1.0 JSON-RPC / gRPC
method name. Per-binding details (REST routes, gRPC paths) live in their own tables and
key on these names.
"""

from __future__ import annotations

from dataclasses import dataclass

from a2a.types import a2a_pb2 as pb
from google.protobuf.message import Message as ProtoMessage

from translators.errors import A2AError, a2a_error


@dataclass(frozen=True)
class Operation:
    name: str  # canonical (v1.0) name
    request: type[ProtoMessage]
    response: type[ProtoMessage] | None  # None: google.protobuf.Empty
    streaming: bool
    jsonrpc_v03: str | None  # None: v0.3 has no such operation
    grpc_v03: str | None


SEND = "SendMessage"
STREAM = "SendStreamingMessage"
GET_TASK = "GetTask"
LIST_TASKS = "ListTasks"
CANCEL = "CancelTask"
SUBSCRIBE = "SubscribeToTask"
PUSH_CREATE = "CreateTaskPushNotificationConfig"
PUSH_GET = "GetTaskPushNotificationConfig"
PUSH_LIST = "ListTaskPushNotificationConfigs"
PUSH_DELETE = "DeleteTaskPushNotificationConfig"
EXTENDED_CARD = "GetExtendedAgentCard"
# What a call's log line and metrics name for a request refused before its operation was
# known (not JSON, no such method or route, a body too large or too slow).
UNKNOWN = "unknown"

OPERATIONS: tuple[Operation, ...] = (
    Operation(SEND, pb.SendMessageRequest, pb.SendMessageResponse, False,
              "message/send", "SendMessage"),
    Operation(STREAM, pb.SendMessageRequest, pb.StreamResponse, True,
              "message/stream", "SendStreamingMessage"),
    Operation(GET_TASK, pb.GetTaskRequest, pb.Task, False, "tasks/get", "GetTask"),
    Operation(LIST_TASKS, pb.ListTasksRequest, pb.ListTasksResponse, False, None, None),
    Operation(CANCEL, pb.CancelTaskRequest, pb.Task, False, "tasks/cancel", "CancelTask"),
    Operation(SUBSCRIBE, pb.SubscribeToTaskRequest, pb.StreamResponse, True,
              "tasks/resubscribe", "TaskSubscription"),
    Operation(PUSH_CREATE, pb.TaskPushNotificationConfig, pb.TaskPushNotificationConfig, False,
              "tasks/pushNotificationConfig/set", "CreateTaskPushNotificationConfig"),
    Operation(PUSH_GET, pb.GetTaskPushNotificationConfigRequest, pb.TaskPushNotificationConfig,
              False, "tasks/pushNotificationConfig/get", "GetTaskPushNotificationConfig"),
    Operation(PUSH_LIST, pb.ListTaskPushNotificationConfigsRequest,
              pb.ListTaskPushNotificationConfigsResponse, False,
              "tasks/pushNotificationConfig/list", "ListTaskPushNotificationConfig"),
    Operation(PUSH_DELETE, pb.DeleteTaskPushNotificationConfigRequest, None, False,
              "tasks/pushNotificationConfig/delete", "DeleteTaskPushNotificationConfig"),
    Operation(EXTENDED_CARD, pb.GetExtendedAgentCardRequest, pb.AgentCard, False,
              "agent/getAuthenticatedExtendedCard", "GetAgentCard"),
)

BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}

# The operations on one task: the request field that names it (proto name, JSON name). A
# message names its task inside itself (`message.taskId`), so SEND and STREAM are not here.
TASK_FIELD: dict[str, tuple[str, str]] = {
    GET_TASK: ("id", "id"), CANCEL: ("id", "id"), SUBSCRIBE: ("id", "id"),
    PUSH_CREATE: ("task_id", "taskId"), PUSH_GET: ("task_id", "taskId"),
    PUSH_LIST: ("task_id", "taskId"), PUSH_DELETE: ("task_id", "taskId")}
BY_JSONRPC_V03: dict[str, Operation] = {op.jsonrpc_v03: op for op in OPERATIONS if op.jsonrpc_v03}


def not_in_v03(name: str) -> A2AError:
    """The refusal of an operation v0.3 has no form for (ListTasks), when the side that
    speaks v0.3 is the backend: the client asked for something the backend cannot do."""
    return a2a_error("UnsupportedOperationError",
                     f"{name} does not exist in A2A v0.3 and the backend speaks v0.3")
