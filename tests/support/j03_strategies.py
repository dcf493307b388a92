"""Hypothesis strategies for v0.3 JSON-RPC (J03) objects, in the spellings real v0.3
peers use (naive and offset timestamps, `kind` discriminators, data-part objects)."""

from __future__ import annotations

from datetime import timedelta, timezone

from hypothesis import strategies as st

from tests.support.p10_strategies import (
    JSON,
    STATES_J03,
    b64,
    ids,
    instants,
    json_objects,
    json_values,
    labels,
    media_types,
    metadata,
    optional,
    texts,
    urls,
)
from translators.j03 import objects as o


@st.composite
def timestamps_j03(draw: st.DrawFn) -> str:
    """The spellings real v0.3 peers use (§3.4): naive, +00:00, Z, other offsets, µs."""
    dt = draw(instants)
    style = draw(st.sampled_from(["naive", "utc", "z", "offset"]))
    if style == "naive":
        return dt.replace(tzinfo=None).isoformat()
    if style == "utc":
        return dt.isoformat()
    if style == "z":
        return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    offset = timezone(timedelta(minutes=draw(st.integers(-12 * 60, 14 * 60))))
    return dt.astimezone(offset).isoformat()


@st.composite
def parts_j03(draw: st.DrawFn) -> JSON:
    kind = draw(st.sampled_from(["text", "bytes", "uri", "both", "data", "compat"]))
    part: JSON
    if kind == "text":
        part = {"kind": "text", "text": draw(texts)}
    elif kind in ("bytes", "uri", "both"):
        file: JSON = {}
        if kind != "uri":
            file["bytes"] = draw(b64)
        if kind != "bytes":
            file["uri"] = draw(urls)
        optional(draw, file, "mimeType", media_types)
        optional(draw, file, "name", ids)
        part = {"kind": "file", "file": file}
    elif kind == "data":
        part = {"kind": "data", "data": draw(json_objects)}
    else:  # py's wrapper for a non-object value (§3.2)
        value = draw(json_values.filter(lambda v: not isinstance(v, dict)))
        part = {"kind": "data", "data": {"value": value},
                "metadata": {**draw(json_objects), o.DATA_COMPAT_FLAG: True}}
        return part
    optional(draw, part, "metadata", metadata)
    return part


@st.composite
def messages_j03(draw: st.DrawFn) -> JSON:
    msg: JSON = {"kind": "message", "messageId": draw(ids),
                 "role": draw(st.sampled_from(["user", "agent"])),
                 "parts": draw(st.lists(parts_j03(), min_size=1, max_size=2))}
    optional(draw, msg, "contextId", ids)
    optional(draw, msg, "taskId", ids)
    optional(draw, msg, "metadata", metadata)
    optional(draw, msg, "extensions", st.lists(urls, min_size=1, max_size=2))
    optional(draw, msg, "referenceTaskIds", st.lists(ids, min_size=1, max_size=2))
    return msg


@st.composite
def statuses_j03(draw: st.DrawFn) -> JSON:
    status: JSON = {"state": draw(st.sampled_from(STATES_J03))}
    optional(draw, status, "message", messages_j03())
    optional(draw, status, "timestamp", timestamps_j03())
    return status


@st.composite
def artifacts_j03(draw: st.DrawFn) -> JSON:
    art: JSON = {"artifactId": draw(ids), "parts": draw(st.lists(parts_j03(), min_size=1,
                                                                 max_size=2))}
    optional(draw, art, "name", labels)
    optional(draw, art, "description", labels)
    optional(draw, art, "metadata", metadata)
    optional(draw, art, "extensions", st.lists(urls, min_size=1, max_size=2))
    return art


@st.composite
def tasks_j03(draw: st.DrawFn) -> JSON:
    task: JSON = {"kind": "task", "id": draw(ids), "contextId": draw(ids),
                  "status": draw(statuses_j03())}
    optional(draw, task, "artifacts", st.lists(artifacts_j03(), min_size=1, max_size=2))
    optional(draw, task, "history", st.lists(messages_j03(), min_size=1, max_size=2))
    optional(draw, task, "metadata", metadata)
    return task


@st.composite
def status_updates_j03(draw: st.DrawFn) -> JSON:
    ev: JSON = {"kind": "status-update", "taskId": draw(ids), "contextId": draw(ids),
                "status": draw(statuses_j03()), "final": draw(st.booleans())}
    optional(draw, ev, "metadata", metadata)
    return ev


@st.composite
def artifact_updates_j03(draw: st.DrawFn) -> JSON:
    ev: JSON = {"kind": "artifact-update", "taskId": draw(ids), "contextId": draw(ids),
                "artifact": draw(artifacts_j03())}
    optional(draw, ev, "append", st.booleans())
    optional(draw, ev, "lastChunk", st.booleans())
    optional(draw, ev, "metadata", metadata)
    return ev


@st.composite
def push_configs_j03(draw: st.DrawFn) -> JSON:
    cfg: JSON = {"url": draw(urls)}
    optional(draw, cfg, "id", ids)
    optional(draw, cfg, "token", ids)
    if draw(st.booleans()):
        auth: JSON = {"schemes": draw(st.lists(st.sampled_from(["Bearer", "Basic", "ApiKey"]),
                                               max_size=3))}
        optional(draw, auth, "credentials", ids)
        cfg["authentication"] = auth
    return cfg


@st.composite
def send_params_j03(draw: st.DrawFn) -> JSON:
    params: JSON = {"message": draw(messages_j03())}
    if draw(st.booleans()):
        conf: JSON = {}
        optional(draw, conf, "acceptedOutputModes", st.lists(media_types, min_size=1, max_size=2))
        optional(draw, conf, "pushNotificationConfig", push_configs_j03())
        optional(draw, conf, "historyLength", st.integers(0, 5))
        optional(draw, conf, "blocking", st.booleans())
        params["configuration"] = conf
    optional(draw, params, "metadata", metadata)
    return params


stream_items_j03 = st.one_of(tasks_j03(), messages_j03(), status_updates_j03(),
                             artifact_updates_j03())
