"""P03 (v0.3 proto messages) ⇄ P10 (v1.0 proto messages) for the protocol's objects.

Pure message-to-message functions (reference §3.1-§3.6, §3.9, §6.3), shared by the v0.3
REST codec (ProtoJSON of these messages) and the v0.3 gRPC codec (their bytes). Most
messages moved field numbers between versions but kept their names, so they are copied by
name (translators/p03/mirror.py) from the rules below, which say what differs; what one
side cannot express goes into the LossReport and is never dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2

from translators.errors import invalid_params
from translators.loss import CARRY_KEY, LossReport
from translators.p03.common import BytesMode, at, file_bytes_to_p03, file_bytes_to_p10
from translators.p03.mirror import Fill, Mirrors, Rule, fill_plan
from translators.vocabulary import DATA_COMPAT_FLAG, IMPLIED_MEDIA_TYPE

# ---------------------------------------------------------------- Part


def _pop_carried(metadata: struct_pb2.Struct) -> dict[str, object]:
    if CARRY_KEY not in metadata.fields:
        return {}
    carried = metadata.fields[CARRY_KEY]
    del metadata[CARRY_KEY]
    if carried.WhichOneof("kind") != "struct_value":
        return {}
    return dict(carried.struct_value.items())


# A part is restructured whole (reference §3.2): v0.3 `file{bytes|uri, mimeType, name}`
# and `data{data}` against v1.0's `raw|url|text|data` with `mediaType` and `filename`.
def _fill_part_p10(part: v03.Part, out: pb.Part, path: str, loss: LossReport,
                   bytes_mode: BytesMode) -> None:
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


def _fill_part_p03(part: pb.Part, out: v03.Part, path: str, loss: LossReport,
                   bytes_mode: BytesMode) -> None:
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


def part_to_p10(part: v03.Part, path: str, loss: LossReport, *,
                bytes_mode: BytesMode = "auto") -> pb.Part:
    out = pb.Part()
    _fill_part_p10(part, out, path, loss, bytes_mode)
    return out


def part_to_p03(part: pb.Part, path: str, loss: LossReport, *,
                bytes_mode: BytesMode = "double") -> v03.Part:
    out = v03.Part()
    _fill_part_p03(part, out, path, loss, bytes_mode)
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


def _message_metadata_to_p10(value: struct_pb2.Struct, out: pb.Message, path: str,
                             loss: LossReport, bytes_mode: BytesMode) -> None:
    metadata = struct_pb2.Struct()
    metadata.CopyFrom(value)
    refs = _pop_carried(metadata).get("referenceTaskIds")
    if isinstance(refs, struct_pb2.ListValue):
        out.reference_task_ids.extend(str(r) for r in refs)
    if metadata.fields or not value.fields:
        out.metadata.CopyFrom(metadata)


def _reference_task_ids_to_p03(value: Any, out: v03.Message, path: str, loss: LossReport,
                               bytes_mode: BytesMode) -> None:
    # Neither v0.3 gRPC nor REST has the field (reference §3.3); metadata can carry it.
    # (metadata, field 6, is copied before this field, 8.)
    if loss.carry:
        out.metadata.fields[CARRY_KEY].struct_value.update({"referenceTaskIds": list(value)})
    else:
        loss.drop(path)


# ---------------------------------------------------------------- the rules
# Not listed, hence copied by name both ways: ids, `extensions`, `metadata`, timestamps,
# artifacts and history, append/lastChunk; Artifact, Task and TaskArtifactUpdateEvent
# differ only in field numbers (§3.5) and need no rule. Role and TaskState kept their
# numbers (§3.1), so they are copied as numbers, which also keeps values a newer peer
# may send.
RULES = [
    Rule(v03.Message, pb.Message, renames={"content": "parts"},
         to_p10={"metadata": _message_metadata_to_p10},
         to_p03={"reference_task_ids": _reference_task_ids_to_p03}),
    Rule(v03.TaskStatus, pb.TaskStatus, renames={"update": "message"}),  # JSON `message`
    # `final` has no v1.0 field: the end of the stream says it (§3.6); the v0.3 encoder
    # sets it (stream_response_to_p03).
    Rule(v03.TaskStatusUpdateEvent, pb.TaskStatusUpdateEvent, unsaid_p03=frozenset({"final"})),
    Rule(v03.StreamResponse, pb.StreamResponse, renames={"msg": "message"}),  # JSON `message`
    Rule(v03.SendMessageResponse, pb.SendMessageResponse, renames={"msg": "message"}),
]
# Whole messages filled by hand, by source type (both directions).
FILLS: dict[Any, Fill] = {v03.Part: _fill_part_p10, pb.Part: _fill_part_p03}
MIRRORS = Mirrors(RULES, FILLS)

message_to_p10, message_to_p03 = MIRRORS.pair(v03.Message, pb.Message)
artifact_to_p10, artifact_to_p03 = MIRRORS.pair(v03.Artifact, pb.Artifact)
task_to_p10, task_to_p03 = MIRRORS.pair(v03.Task, pb.Task)
send_response_to_p10, send_response_to_p03 = MIRRORS.pair(
    v03.SendMessageResponse, pb.SendMessageResponse, "payload", "has neither task nor message")
stream_response_to_p10, _STREAM_TO_P03 = MIRRORS.pair(
    v03.StreamResponse, pb.StreamResponse, "payload", "is empty")


def stream_response_to_p03(resp: pb.StreamResponse, final: bool, path: str, loss: LossReport,
                           *, bytes_mode: BytesMode = "double") -> v03.StreamResponse:
    """``final`` is the stream encoder's call: it sees whether another event follows.
    (Runs per event: it fills from the plan itself rather than calling the Convert.)"""
    kind = resp.WhichOneof("payload")
    if kind is None:
        raise invalid_params(f"{path or 'StreamResponse'} is empty")
    out = v03.StreamResponse()
    fill_plan(_STREAM_TO_P03.plan, resp, out, path, loss, bytes_mode)
    if kind == "status_update":
        out.status_update.final = final
    return out
