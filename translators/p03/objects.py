"""P03 (v0.3 proto messages) ⇄ P10 (v1.0 proto messages) for the protocol's objects.

Pure message-to-message functions (reference §3.1-§3.6, §3.9, §6.3), shared by the v0.3
REST codec (ProtoJSON of these messages) and the v0.3 gRPC codec (their bytes). Most
messages moved field numbers between versions, so everything is copied by name; what one
side cannot express goes into the LossReport and is never dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2

from translators.errors import invalid_params
from translators.loss import CARRY_KEY, LossReport
from translators.p03.common import (
    BytesMode,
    at,
    file_bytes_to_p03,
    file_bytes_to_p10,
)
from translators.vocabulary import DATA_COMPAT_FLAG, IMPLIED_MEDIA_TYPE


# Role and TaskState keep their numbers across versions (reference §3.1); only the JSON
# spelling of 5 differs, which ProtoJSON handles. Copying the number also keeps values
# a newer peer may send.
def role_to_p10(role: v03.Role) -> pb.Role:
    return cast(pb.Role, int(role))


def role_to_p03(role: pb.Role) -> v03.Role:
    return cast(v03.Role, int(role))


def state_to_p10(state: v03.TaskState) -> pb.TaskState:
    return cast(pb.TaskState, int(state))


def state_to_p03(state: pb.TaskState) -> v03.TaskState:
    return cast(v03.TaskState, int(state))


# ---------------------------------------------------------------- Part


def _pop_carried(metadata: struct_pb2.Struct) -> dict[str, object]:
    if CARRY_KEY not in metadata.fields:
        return {}
    carried = metadata.fields[CARRY_KEY]
    del metadata[CARRY_KEY]
    if carried.WhichOneof("kind") != "struct_value":
        return {}
    return dict(carried.struct_value.items())


def part_to_p10(part: v03.Part, path: str, loss: LossReport, *,
                bytes_mode: BytesMode = "auto") -> pb.Part:
    out = pb.Part()
    metadata = struct_pb2.Struct()
    metadata.CopyFrom(part.metadata)
    carried = _pop_carried(metadata)
    kind = part.WhichOneof("part")
    if kind == "text":
        out.text = part.text
    elif kind == "file":
        file = part.file
        which = file.WhichOneof("file")
        if which == "file_with_bytes":
            out.raw = file_bytes_to_p10(file.file_with_bytes, bytes_mode,
                                        at(path, "file.fileWithBytes"))
        elif which == "file_with_uri":
            out.url = file.file_with_uri
        else:
            raise invalid_params(f"{at(path, 'file')} needs fileWithUri or fileWithBytes")
        out.media_type = file.mime_type
        out.filename = file.name
    elif kind == "data":
        flag = metadata.fields.get(DATA_COMPAT_FLAG)
        if flag is not None and flag.WhichOneof("kind") == "bool_value" and flag.bool_value:
            # py's convention for a v1.0 data value that is not an object (reference §3.2).
            del metadata[DATA_COMPAT_FLAG]
            wrapped = part.data.data.fields
            if "value" in wrapped:
                out.data.CopyFrom(wrapped["value"])
            else:
                out.data.null_value = struct_pb2.NULL_VALUE
        else:
            out.data.struct_value.CopyFrom(part.data.data)
    else:
        raise invalid_params(f"{path} has no content (text, file or data)")
    for key, attr in (("mediaType", "media_type"), ("filename", "filename")):
        if isinstance(carried.get(key), str):
            setattr(out, attr, carried[key])
    # Metadata that held only the translator's private keys was not the sender's.
    if part.HasField("metadata") and (metadata.fields or not part.metadata.fields):
        out.metadata.CopyFrom(metadata)
    return out


def part_to_p03(part: pb.Part, path: str, loss: LossReport, *,
                bytes_mode: BytesMode = "double") -> v03.Part:
    out = v03.Part()
    metadata = struct_pb2.Struct()
    metadata.CopyFrom(part.metadata)
    kind = part.WhichOneof("content")
    if kind in ("raw", "url"):
        if kind == "raw":
            out.file.file_with_bytes = file_bytes_to_p03(part.raw, bytes_mode)
        else:
            out.file.file_with_uri = part.url
        out.file.mime_type = part.media_type
        out.file.name = part.filename
    elif kind in ("text", "data"):
        if kind == "text":
            out.text = part.text
        elif part.data.WhichOneof("kind") == "struct_value":
            out.data.data.CopyFrom(part.data.struct_value)
        else:
            # v0.3 data is an object; py wraps anything else and flags it (reference §3.2).
            value = out.data.data.fields["value"]
            value.CopyFrom(part.data)
            if value.WhichOneof("kind") is None:  # an unset Value is JSON null
                value.null_value = struct_pb2.NULL_VALUE
            metadata[DATA_COMPAT_FLAG] = True
        extra = {"mediaType": part.media_type, "filename": part.filename}
        extra = {k: v for k, v in extra.items() if v}
        if extra.get("mediaType") == IMPLIED_MEDIA_TYPE[kind]:
            del extra["mediaType"]
        if extra and loss.carry:
            metadata.fields[CARRY_KEY].struct_value.update(extra)
        else:
            for key in extra:
                loss.drop(at(path, key))
    else:
        raise invalid_params(f"{path} has no content (text, raw, url or data)")
    if part.HasField("metadata") or metadata.fields:
        out.metadata.CopyFrom(metadata)
    return out


def parts_to_p10(parts: Iterable[v03.Part], path: str, loss: LossReport,
                 bytes_mode: BytesMode) -> list[pb.Part]:
    return [part_to_p10(p, f"{path}[{i}]", loss, bytes_mode=bytes_mode)
            for i, p in enumerate(parts)]


def parts_to_p03(parts: Iterable[pb.Part], path: str, loss: LossReport,
                 bytes_mode: BytesMode) -> list[v03.Part]:
    return [part_to_p03(p, f"{path}[{i}]", loss, bytes_mode=bytes_mode)
            for i, p in enumerate(parts)]


# ---------------------------------------------------------------- Message


def message_to_p10(msg: v03.Message, path: str, loss: LossReport, *,
                   bytes_mode: BytesMode = "auto") -> pb.Message:
    out = pb.Message(message_id=msg.message_id, context_id=msg.context_id,
                     task_id=msg.task_id, role=role_to_p10(msg.role),
                     extensions=msg.extensions)
    out.parts.extend(parts_to_p10(msg.content, at(path, "content"), loss, bytes_mode))
    if msg.HasField("metadata"):
        metadata = struct_pb2.Struct()
        metadata.CopyFrom(msg.metadata)
        carried = _pop_carried(metadata)
        refs = carried.get("referenceTaskIds")
        if isinstance(refs, struct_pb2.ListValue):
            out.reference_task_ids.extend(str(r) for r in refs)
        if metadata.fields or not msg.metadata.fields:
            out.metadata.CopyFrom(metadata)
    return out


def message_to_p03(msg: pb.Message, path: str, loss: LossReport, *,
                   bytes_mode: BytesMode = "double") -> v03.Message:
    out = v03.Message(message_id=msg.message_id, context_id=msg.context_id,
                      task_id=msg.task_id, role=role_to_p03(msg.role),
                      extensions=msg.extensions)
    out.content.extend(parts_to_p03(msg.parts, at(path, "parts"), loss, bytes_mode))
    if msg.HasField("metadata"):
        out.metadata.CopyFrom(msg.metadata)
    if msg.reference_task_ids:
        # Neither v0.3 gRPC nor REST has the field (reference §3.3); metadata can carry it.
        if loss.carry:
            carried = out.metadata.fields[CARRY_KEY].struct_value
            carried.update({"referenceTaskIds": list(msg.reference_task_ids)})
        else:
            loss.drop(at(path, "referenceTaskIds"))
    return out


# ---------------------------------------------------------------- Task, status, artifact


def status_to_p10(status: v03.TaskStatus, path: str, loss: LossReport, *,
                  bytes_mode: BytesMode = "auto") -> pb.TaskStatus:
    out = pb.TaskStatus(state=state_to_p10(status.state))
    if status.HasField("update"):  # proto name `update`, JSON name `message` (§3.4)
        out.message.CopyFrom(message_to_p10(status.update, at(path, "message"), loss,
                                            bytes_mode=bytes_mode))
    if status.HasField("timestamp"):
        out.timestamp.CopyFrom(status.timestamp)
    return out


def status_to_p03(status: pb.TaskStatus, path: str, loss: LossReport, *,
                  bytes_mode: BytesMode = "double") -> v03.TaskStatus:
    out = v03.TaskStatus(state=state_to_p03(status.state))
    if status.HasField("message"):
        out.update.CopyFrom(message_to_p03(status.message, at(path, "message"), loss,
                                           bytes_mode=bytes_mode))
    if status.HasField("timestamp"):
        out.timestamp.CopyFrom(status.timestamp)
    return out


def artifact_to_p10(art: v03.Artifact, path: str, loss: LossReport, *,
                    bytes_mode: BytesMode = "auto") -> pb.Artifact:
    # Same names, renumbered fields (reference §3.5): copied by name.
    out = pb.Artifact(artifact_id=art.artifact_id, name=art.name,
                      description=art.description, extensions=art.extensions)
    out.parts.extend(parts_to_p10(art.parts, at(path, "parts"), loss, bytes_mode))
    if art.HasField("metadata"):
        out.metadata.CopyFrom(art.metadata)
    return out


def artifact_to_p03(art: pb.Artifact, path: str, loss: LossReport, *,
                    bytes_mode: BytesMode = "double") -> v03.Artifact:
    out = v03.Artifact(artifact_id=art.artifact_id, name=art.name,
                       description=art.description, extensions=art.extensions)
    out.parts.extend(parts_to_p03(art.parts, at(path, "parts"), loss, bytes_mode))
    if art.HasField("metadata"):
        out.metadata.CopyFrom(art.metadata)
    return out


def task_to_p10(task: v03.Task, path: str, loss: LossReport, *,
                bytes_mode: BytesMode = "auto") -> pb.Task:
    out = pb.Task(id=task.id, context_id=task.context_id)
    if task.HasField("status"):
        out.status.CopyFrom(status_to_p10(task.status, at(path, "status"), loss,
                                          bytes_mode=bytes_mode))
    out.artifacts.extend(artifact_to_p10(a, f"{at(path, 'artifacts')}[{i}]", loss,
                                         bytes_mode=bytes_mode)
                         for i, a in enumerate(task.artifacts))
    out.history.extend(message_to_p10(m, f"{at(path, 'history')}[{i}]", loss,
                                      bytes_mode=bytes_mode)
                       for i, m in enumerate(task.history))
    if task.HasField("metadata"):
        out.metadata.CopyFrom(task.metadata)
    return out


def task_to_p03(task: pb.Task, path: str, loss: LossReport, *,
                bytes_mode: BytesMode = "double") -> v03.Task:
    out = v03.Task(id=task.id, context_id=task.context_id)
    if task.HasField("status"):
        out.status.CopyFrom(status_to_p03(task.status, at(path, "status"), loss,
                                          bytes_mode=bytes_mode))
    out.artifacts.extend(artifact_to_p03(a, f"{at(path, 'artifacts')}[{i}]", loss,
                                         bytes_mode=bytes_mode)
                         for i, a in enumerate(task.artifacts))
    out.history.extend(message_to_p03(m, f"{at(path, 'history')}[{i}]", loss,
                                      bytes_mode=bytes_mode)
                       for i, m in enumerate(task.history))
    if task.HasField("metadata"):
        out.metadata.CopyFrom(task.metadata)
    return out


# ---------------------------------------------------------------- stream events


def status_update_to_p10(ev: v03.TaskStatusUpdateEvent, path: str, loss: LossReport, *,
                         bytes_mode: BytesMode = "auto") -> pb.TaskStatusUpdateEvent:
    # `final` has no v1.0 field: the end of the stream says it (reference §3.6).
    out = pb.TaskStatusUpdateEvent(task_id=ev.task_id, context_id=ev.context_id)
    if ev.HasField("status"):
        out.status.CopyFrom(status_to_p10(ev.status, at(path, "status"), loss,
                                          bytes_mode=bytes_mode))
    if ev.HasField("metadata"):
        out.metadata.CopyFrom(ev.metadata)
    return out


def status_update_to_p03(ev: pb.TaskStatusUpdateEvent, final: bool, path: str,
                         loss: LossReport, *, bytes_mode: BytesMode = "double",
                         ) -> v03.TaskStatusUpdateEvent:
    """``final`` is the stream encoder's call: it sees whether another event follows."""
    out = v03.TaskStatusUpdateEvent(task_id=ev.task_id, context_id=ev.context_id, final=final)
    if ev.HasField("status"):
        out.status.CopyFrom(status_to_p03(ev.status, at(path, "status"), loss,
                                          bytes_mode=bytes_mode))
    if ev.HasField("metadata"):
        out.metadata.CopyFrom(ev.metadata)
    return out


def artifact_update_to_p10(ev: v03.TaskArtifactUpdateEvent, path: str, loss: LossReport, *,
                           bytes_mode: BytesMode = "auto") -> pb.TaskArtifactUpdateEvent:
    out = pb.TaskArtifactUpdateEvent(task_id=ev.task_id, context_id=ev.context_id,
                                     append=ev.append, last_chunk=ev.last_chunk)
    if ev.HasField("artifact"):
        out.artifact.CopyFrom(artifact_to_p10(ev.artifact, at(path, "artifact"), loss,
                                              bytes_mode=bytes_mode))
    if ev.HasField("metadata"):
        out.metadata.CopyFrom(ev.metadata)
    return out


def artifact_update_to_p03(ev: pb.TaskArtifactUpdateEvent, path: str, loss: LossReport, *,
                           bytes_mode: BytesMode = "double") -> v03.TaskArtifactUpdateEvent:
    out = v03.TaskArtifactUpdateEvent(task_id=ev.task_id, context_id=ev.context_id,
                                      append=ev.append, last_chunk=ev.last_chunk)
    if ev.HasField("artifact"):
        out.artifact.CopyFrom(artifact_to_p03(ev.artifact, at(path, "artifact"), loss,
                                              bytes_mode=bytes_mode))
    if ev.HasField("metadata"):
        out.metadata.CopyFrom(ev.metadata)
    return out


# ---------------------------------------------------------------- response wrappers


def stream_response_to_p10(resp: v03.StreamResponse, path: str, loss: LossReport, *,
                           bytes_mode: BytesMode = "auto") -> pb.StreamResponse:
    kind = resp.WhichOneof("payload")
    if kind == "task":
        return pb.StreamResponse(task=task_to_p10(resp.task, at(path, "task"), loss,
                                                  bytes_mode=bytes_mode))
    if kind == "msg":  # proto name `msg`, JSON name `message` (§3.8)
        return pb.StreamResponse(message=message_to_p10(resp.msg, at(path, "message"), loss,
                                                        bytes_mode=bytes_mode))
    if kind == "status_update":
        return pb.StreamResponse(status_update=status_update_to_p10(
            resp.status_update, at(path, "statusUpdate"), loss, bytes_mode=bytes_mode))
    if kind == "artifact_update":
        return pb.StreamResponse(artifact_update=artifact_update_to_p10(
            resp.artifact_update, at(path, "artifactUpdate"), loss, bytes_mode=bytes_mode))
    raise invalid_params(f"{path or 'StreamResponse'} is empty")


def stream_response_to_p03(resp: pb.StreamResponse, final: bool, path: str, loss: LossReport,
                           *, bytes_mode: BytesMode = "double") -> v03.StreamResponse:
    kind = resp.WhichOneof("payload")
    if kind == "task":
        return v03.StreamResponse(task=task_to_p03(resp.task, at(path, "task"), loss,
                                                   bytes_mode=bytes_mode))
    if kind == "message":
        return v03.StreamResponse(msg=message_to_p03(resp.message, at(path, "message"), loss,
                                                     bytes_mode=bytes_mode))
    if kind == "status_update":
        return v03.StreamResponse(status_update=status_update_to_p03(
            resp.status_update, final, at(path, "statusUpdate"), loss, bytes_mode=bytes_mode))
    if kind == "artifact_update":
        return v03.StreamResponse(artifact_update=artifact_update_to_p03(
            resp.artifact_update, at(path, "artifactUpdate"), loss, bytes_mode=bytes_mode))
    raise invalid_params(f"{path or 'StreamResponse'} is empty")


def send_response_to_p10(resp: v03.SendMessageResponse, path: str, loss: LossReport, *,
                         bytes_mode: BytesMode = "auto") -> pb.SendMessageResponse:
    kind = resp.WhichOneof("payload")
    if kind == "task":
        return pb.SendMessageResponse(task=task_to_p10(resp.task, at(path, "task"), loss,
                                                       bytes_mode=bytes_mode))
    if kind == "msg":
        return pb.SendMessageResponse(message=message_to_p10(
            resp.msg, at(path, "message"), loss, bytes_mode=bytes_mode))
    raise invalid_params(f"{path or 'SendMessageResponse'} has neither task nor message")


def send_response_to_p03(resp: pb.SendMessageResponse, path: str, loss: LossReport, *,
                         bytes_mode: BytesMode = "double") -> v03.SendMessageResponse:
    kind = resp.WhichOneof("payload")
    if kind == "task":
        return v03.SendMessageResponse(task=task_to_p03(resp.task, at(path, "task"), loss,
                                                        bytes_mode=bytes_mode))
    if kind == "message":
        return v03.SendMessageResponse(msg=message_to_p03(
            resp.message, at(path, "message"), loss, bytes_mode=bytes_mode))
    raise invalid_params(f"{path or 'SendMessageResponse'} has neither task nor message")
