"""J03 (v0.3 JSON-RPC JSON) ⇄ P10 (v1.0 ProtoJSON) for the protocol's objects.

Pure dict-to-dict functions (reference §3.1-§3.6, §3.9). Everything one side cannot
express goes into the LossReport; nothing is dropped silently.
"""

from __future__ import annotations

from typing import Any

from translators.errors import invalid_params
from translators.j03.common import (
    copy_keys,
    iso_to_p10,
    lookup,
    need_dict,
    need_list,
    need_str,
)
from translators.loss import CARRY_KEY, LossReport
from translators.vocabulary import DATA_COMPAT_FLAG, IMPLIED_MEDIA_TYPE, JSON

# Reference §3.1: numbering is shared, spellings are not.
STATE_J03_TO_P10 = {
    "unknown": "TASK_STATE_UNSPECIFIED",
    "submitted": "TASK_STATE_SUBMITTED",
    "working": "TASK_STATE_WORKING",
    "completed": "TASK_STATE_COMPLETED",
    "failed": "TASK_STATE_FAILED",
    "canceled": "TASK_STATE_CANCELED",
    "input-required": "TASK_STATE_INPUT_REQUIRED",
    "rejected": "TASK_STATE_REJECTED",
    "auth-required": "TASK_STATE_AUTH_REQUIRED",
}
STATE_P10_TO_J03 = {v: k for k, v in STATE_J03_TO_P10.items()}
ROLE_J03_TO_P10 = {"user": "ROLE_USER", "agent": "ROLE_AGENT"}
ROLE_P10_TO_J03 = {v: k for k, v in ROLE_J03_TO_P10.items()}


# ---------------------------------------------------------------- Part


def part_to_p10(part: Any, path: str, loss: LossReport) -> JSON:
    part = need_dict(part, path)
    kind = part.get("kind")
    out: JSON = {}
    metadata = dict(part["metadata"]) if isinstance(part.get("metadata"), dict) else None
    if kind == "text":
        out["text"] = need_str(part.get("text"), f"{path}.text")
    elif kind == "file":
        file = need_dict(part.get("file"), f"{path}.file")
        if "bytes" in file:
            out["raw"] = need_str(file["bytes"], f"{path}.file.bytes")
            if "uri" in file:
                loss.drop(f"{path}.file.uri")
        elif "uri" in file:
            out["url"] = need_str(file["uri"], f"{path}.file.uri")
        else:
            raise invalid_params(f"{path}.file needs 'bytes' or 'uri'")
        if file.get("mimeType"):
            out["mediaType"] = file["mimeType"]
        if file.get("name"):
            out["filename"] = file["name"]
    elif kind == "data":
        data = part.get("data")
        if metadata and metadata.get(DATA_COMPAT_FLAG) is True and isinstance(data, dict):
            data = data.get("value")
            del metadata[DATA_COMPAT_FLAG]
        elif not isinstance(data, dict):
            raise invalid_params(f"{path}.data must be an object")
        out["data"] = data
    else:
        raise invalid_params(f"{path}.kind must be text, file or data")
    if metadata is not None:
        carried = metadata.pop(CARRY_KEY, None)
        if isinstance(carried, dict):
            copy_keys(carried, out, "mediaType", "filename")
        if metadata:
            out["metadata"] = metadata
    return out


def part_to_j03(part: JSON, path: str, loss: LossReport) -> JSON:
    metadata = dict(part.get("metadata") or {})
    out: JSON
    if "text" in part or "data" in part:
        if "text" in part:
            out = {"kind": "text", "text": part["text"]}
        else:
            data = part["data"]
            if not isinstance(data, dict):
                data = {"value": data}
                metadata[DATA_COMPAT_FLAG] = True
            out = {"kind": "data", "data": data}
        # v0.3 puts mediaType/filename on files only; the type each kind implies is no loss.
        extra = {k: part[k] for k in ("mediaType", "filename") if k in part}
        if extra.get("mediaType") == IMPLIED_MEDIA_TYPE["text" if "text" in part else "data"]:
            del extra["mediaType"]
        if extra and loss.carry:
            metadata[CARRY_KEY] = extra
        else:
            for key in extra:
                loss.drop(f"{path}.{key}")
    elif "raw" in part or "url" in part:
        file: JSON = {"bytes": part["raw"]} if "raw" in part else {"uri": part["url"]}
        if "mediaType" in part:
            file["mimeType"] = part["mediaType"]
        if "filename" in part:
            file["name"] = part["filename"]
        out = {"kind": "file", "file": file}
    else:
        raise invalid_params(f"{path} has no content")
    if metadata:
        out["metadata"] = metadata
    return out


def parts_to_p10(parts: Any, path: str, loss: LossReport) -> list[JSON]:
    return [part_to_p10(p, f"{path}[{i}]", loss) for i, p in enumerate(need_list(parts, path))]


def parts_to_j03(parts: list[JSON], path: str, loss: LossReport) -> list[JSON]:
    return [part_to_j03(p, f"{path}[{i}]", loss) for i, p in enumerate(parts)]


# ---------------------------------------------------------------- Message

_MESSAGE_SHARED = ("messageId", "contextId", "taskId", "metadata", "extensions", "referenceTaskIds")


def message_to_p10(msg: Any, path: str, loss: LossReport) -> JSON:
    msg = need_dict(msg, path)
    role = lookup(ROLE_J03_TO_P10, msg.get("role"))
    if role is None:
        raise invalid_params(f"{path}.role must be 'user' or 'agent'")
    out: JSON = {"role": role}
    copy_keys(msg, out, *_MESSAGE_SHARED)
    out["parts"] = parts_to_p10(msg.get("parts"), f"{path}.parts", loss)
    return out


def message_to_j03(msg: JSON, path: str, loss: LossReport) -> JSON:
    role = lookup(ROLE_P10_TO_J03, msg.get("role"))
    if role is None:  # J03 requires one, and making one up would change who spoke
        raise invalid_params(f"{path}.role is missing or unknown")
    out: JSON = {"kind": "message", "role": role}
    copy_keys(msg, out, *_MESSAGE_SHARED)
    out.setdefault("messageId", "")
    out["parts"] = parts_to_j03(msg.get("parts", []), f"{path}.parts", loss)
    return out


# ---------------------------------------------------------------- Task, status, artifact


def status_to_p10(status: Any, path: str, loss: LossReport) -> JSON:
    status = need_dict(status, path)
    state = lookup(STATE_J03_TO_P10, status.get("state"))
    if state is None:
        raise invalid_params(f"{path}.state {status.get('state')!r} is not a v0.3 task state")
    out: JSON = {"state": state}
    if status.get("message") is not None:
        out["message"] = message_to_p10(status["message"], f"{path}.message", loss)
    if status.get("timestamp"):
        out["timestamp"] = iso_to_p10(status["timestamp"], f"{path}.timestamp")
    return out


def status_to_j03(status: JSON, path: str, loss: LossReport) -> JSON:
    out: JSON = {"state": STATE_P10_TO_J03.get(status.get("state", ""), "unknown")}
    if "message" in status:
        out["message"] = message_to_j03(status["message"], f"{path}.message", loss)
    if "timestamp" in status:
        # ProtoJSON timestamps are ISO 8601 in UTC with `Z` already, which v0.3 accepts.
        out["timestamp"] = status["timestamp"]
    return out


_ARTIFACT_SHARED = ("artifactId", "name", "description", "metadata", "extensions")


def artifact_to_p10(art: Any, path: str, loss: LossReport) -> JSON:
    art = need_dict(art, path)
    out: JSON = {}
    copy_keys(art, out, *_ARTIFACT_SHARED)
    out["parts"] = parts_to_p10(art.get("parts"), f"{path}.parts", loss)
    return out


def artifact_to_j03(art: JSON, path: str, loss: LossReport) -> JSON:
    out: JSON = {}
    copy_keys(art, out, *_ARTIFACT_SHARED)
    out.setdefault("artifactId", "")
    out["parts"] = parts_to_j03(art.get("parts", []), f"{path}.parts", loss)
    return out


def task_to_p10(task: Any, path: str, loss: LossReport) -> JSON:
    task = need_dict(task, path)
    out: JSON = {"id": need_str(task.get("id"), f"{path}.id")}
    copy_keys(task, out, "contextId", "metadata")
    out["status"] = status_to_p10(task.get("status"), f"{path}.status", loss)
    if task.get("artifacts"):
        out["artifacts"] = [artifact_to_p10(a, f"{path}.artifacts[{i}]", loss)
                            for i, a in enumerate(need_list(task["artifacts"], f"{path}.artifacts"))]
    if task.get("history"):
        out["history"] = [message_to_p10(m, f"{path}.history[{i}]", loss)
                          for i, m in enumerate(need_list(task["history"], f"{path}.history"))]
    return out


def task_to_j03(task: JSON, path: str, loss: LossReport) -> JSON:
    # contextId is required in J03 though optional in the v1.0 proto (§3.4).
    out: JSON = {"kind": "task", "id": task.get("id", ""), "contextId": task.get("contextId", "")}
    out["status"] = status_to_j03(task.get("status", {}), f"{path}.status", loss)
    if "artifacts" in task:
        out["artifacts"] = [artifact_to_j03(a, f"{path}.artifacts[{i}]", loss)
                            for i, a in enumerate(task["artifacts"])]
    if "history" in task:
        out["history"] = [message_to_j03(m, f"{path}.history[{i}]", loss)
                          for i, m in enumerate(task["history"])]
    copy_keys(task, out, "metadata")
    return out


# ---------------------------------------------------------------- Stream events


def status_update_to_p10(ev: JSON, path: str, loss: LossReport) -> JSON:
    # `final` has no v1.0 field: the end of the stream says it (§3.6).
    out: JSON = {"taskId": ev.get("taskId", ""), "contextId": ev.get("contextId", "")}
    out["status"] = status_to_p10(ev.get("status"), f"{path}.status", loss)
    copy_keys(ev, out, "metadata")
    return out


def status_update_to_j03(ev: JSON, final: bool, path: str, loss: LossReport) -> JSON:
    out: JSON = {"kind": "status-update", "taskId": ev.get("taskId", ""),
                 "contextId": ev.get("contextId", "")}
    out["status"] = status_to_j03(ev.get("status", {}), f"{path}.status", loss)
    out["final"] = final
    copy_keys(ev, out, "metadata")
    return out


def artifact_update_to_p10(ev: JSON, path: str, loss: LossReport) -> JSON:
    out: JSON = {"taskId": ev.get("taskId", ""), "contextId": ev.get("contextId", "")}
    out["artifact"] = artifact_to_p10(ev.get("artifact"), f"{path}.artifact", loss)
    copy_keys(ev, out, "append", "lastChunk", "metadata")
    return out


def artifact_update_to_j03(ev: JSON, path: str, loss: LossReport) -> JSON:
    out: JSON = {"kind": "artifact-update", "taskId": ev.get("taskId", ""),
                 "contextId": ev.get("contextId", "")}
    out["artifact"] = artifact_to_j03(ev.get("artifact", {}), f"{path}.artifact", loss)
    copy_keys(ev, out, "append", "lastChunk", "metadata")
    return out


def stream_item_to_p10(item: Any, path: str, loss: LossReport) -> JSON:
    """A v0.3 result told apart by `kind` → a v1.0 StreamResponse."""
    item = need_dict(item, path)
    kind = item.get("kind")
    if kind == "task":
        return {"task": task_to_p10(item, path, loss)}
    if kind == "message":
        return {"message": message_to_p10(item, path, loss)}
    if kind == "status-update":
        return {"statusUpdate": status_update_to_p10(item, path, loss)}
    if kind == "artifact-update":
        return {"artifactUpdate": artifact_update_to_p10(item, path, loss)}
    raise invalid_params(f"{path}.kind {kind!r} is not a v0.3 stream event")


def stream_response_to_j03(resp: JSON, final: bool, path: str, loss: LossReport) -> JSON:
    if "task" in resp:
        return task_to_j03(resp["task"], path, loss)
    if "message" in resp:
        return message_to_j03(resp["message"], path, loss)
    if "statusUpdate" in resp:
        return status_update_to_j03(resp["statusUpdate"], final, path, loss)
    if "artifactUpdate" in resp:
        return artifact_update_to_j03(resp["artifactUpdate"], path, loss)
    raise invalid_params(f"{path} is an empty StreamResponse")
