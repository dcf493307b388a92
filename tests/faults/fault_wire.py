"""The six dialects and the valid wire shapes each one speaks, from one table.

Three shape families cover the six dialects (wire reference §3.8):

- J03: v0.3 JSON-RPC JSON, objects told apart by `kind`;
- P03: the v0.3 proto (`a2a.v1`): ProtoJSON on REST, bytes on gRPC;
- P10: the v1.0 proto (`lf.a2a.v1`): ProtoJSON on JSON-RPC and REST, bytes on gRPC.

Backends answer with these shapes; clients send their requests with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import socket
import struct
from dataclasses import dataclass
from typing import Any, Literal

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03pb
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage

Binding = Literal["JSONRPC", "HTTP+JSON", "GRPC"]
Version = Literal["0.3", "1.0"]
Family = Literal["J03", "P03", "P10"]
# What a valid stream item carries: a status update, or a whole Message.
EventKind = Literal["working", "completed", "message"]

_SHORT = {"JSONRPC": "jsonrpc", "HTTP+JSON": "rest", "GRPC": "grpc"}
GRPC_SERVICES = {"1.0": "lf.a2a.v1.A2AService", "0.3": "a2a.v1.A2AService"}
STREAM_METHODS = frozenset({"message/stream", "tasks/resubscribe", "SendStreamingMessage",
                            "SubscribeToTask"})


@dataclass(frozen=True)
class Dialect:
    binding: Binding
    version: Version

    @property
    def name(self) -> str:
        """`jsonrpc-0.3`, `rest-1.0`, `grpc-1.0`, ..."""
        return f"{_SHORT[self.binding]}-{self.version}"

    @property
    def slug(self) -> str:
        """The name without punctuation, usable in a tenant name or a URL path."""
        return self.name.replace("-", "").replace(".", "")

    @property
    def family(self) -> Family:
        if self.version == "1.0":
            return "P10"
        return "J03" if self.binding == "JSONRPC" else "P03"

    def __str__(self) -> str:
        return self.name


BINDINGS: tuple[Binding, ...] = ("JSONRPC", "HTTP+JSON", "GRPC")
VERSIONS: tuple[Version, ...] = ("0.3", "1.0")
DIALECTS: tuple[Dialect, ...] = tuple(Dialect(b, v) for b in BINDINGS for v in VERSIONS)
HTTP_BINDINGS: frozenset[str] = frozenset({"JSONRPC", "HTTP+JSON"})
ALL_BINDINGS: frozenset[str] = frozenset(BINDINGS)


# ---------------------------------------------------------------- the three families

def _j03_message(text: str, role: str) -> dict[str, Any]:
    return {"kind": "message", "messageId": "m1", "role": role,
            "parts": [{"kind": "text", "text": text}]}


def _j03_status(state: str) -> dict[str, Any]:
    return {"kind": "status-update", "taskId": "t", "contextId": "c",
            "status": {"state": state}, "final": state == "completed"}


def _p10_message(text: str, role: str) -> pb.Message:
    return pb.Message(message_id="m1", role=pb.ROLE_AGENT if role == "agent" else pb.ROLE_USER,
                      parts=[pb.Part(text=text)])


def _p03_message(text: str, role: str) -> v03pb.Message:
    return v03pb.Message(message_id="m1",
                         role=v03pb.ROLE_AGENT if role == "agent" else v03pb.ROLE_USER,
                         content=[v03pb.Part(text=text)])


def _p10_item(what: EventKind, text: str) -> pb.StreamResponse:
    if what == "message":
        return pb.StreamResponse(message=_p10_message(text, "agent"))
    state = pb.TASK_STATE_COMPLETED if what == "completed" else pb.TASK_STATE_WORKING
    return pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
        task_id="t", context_id="c", status=pb.TaskStatus(state=state)))


def _p03_item(what: EventKind, text: str) -> v03pb.StreamResponse:
    if what == "message":
        return v03pb.StreamResponse(msg=_p03_message(text, "agent"))
    state = v03pb.TASK_STATE_COMPLETED if what == "completed" else v03pb.TASK_STATE_WORKING
    return v03pb.StreamResponse(status_update=v03pb.TaskStatusUpdateEvent(
        task_id="t", context_id="c", status=v03pb.TaskStatus(state=state),
        final=what == "completed"))


def stream_item(family: Family, what: EventKind, text: str = "x") -> dict[str, Any] | ProtoMessage:
    """One valid stream event of a backend of this family."""
    if family == "J03":
        return _j03_message(text, "agent") if what == "message" else _j03_status(what)
    return _p10_item(what, text) if family == "P10" else _p03_item(what, text)


def unary_answer(family: Family, text: str = "x") -> dict[str, Any] | ProtoMessage:
    """A valid SendMessage answer (a Message) of a backend of this family."""
    if family == "J03":
        return _j03_message(text, "agent")
    if family == "P10":
        return pb.SendMessageResponse(message=_p10_message(text, "agent"))
    return v03pb.SendMessageResponse(msg=_p03_message(text, "agent"))


def send_request(dialect: Dialect, tenant: str = "") -> dict[str, Any] | ProtoMessage:
    """A client's SendMessage / SendStreamingMessage request (params or body) in its
    dialect; `tenant` only goes into the v1.0 proto (the HTTP callers put it in the path,
    the v0.3 gRPC caller in metadata)."""
    if dialect.family == "J03":
        return {"message": _j03_message("hi", "user")}
    if dialect.family == "P10":
        return pb.SendMessageRequest(tenant=tenant, message=_p10_message("hi", "user"))
    return v03pb.SendMessageRequest(request=_p03_message("hi", "user"),
                                    configuration=v03pb.SendMessageConfiguration(blocking=True))


def as_json(value: dict[str, Any] | ProtoMessage) -> dict[str, Any]:
    return value if isinstance(value, dict) else json_format.MessageToDict(value)


def as_bytes(value: dict[str, Any] | ProtoMessage) -> bytes:
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":")).encode()
    return bytes(value.SerializeToString())


@functools.cache
def encoded_answer(family: Family, text: str, proto: bool) -> bytes:
    """unary_answer on the wire: JSON, or proto bytes (cached: the 1 MiB ones are built
    once, so a fault backend answers as fast as a real one would)."""
    value = unary_answer(family, text)
    return as_bytes(value if proto else as_json(value))


@functools.cache
def encoded_item(family: Family, what: EventKind, text: str, proto: bool) -> bytes:
    """stream_item on the wire: JSON, or proto bytes (cached)."""
    value = stream_item(family, what, text)
    return as_bytes(value if proto else as_json(value))


# ---------------------------------------------------------------- cutting a connection

SETTLE = 0.05  # seconds the peer gets to read what was sent before a reset discards it


def tcp_reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), not a clean FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
