"""Hypothesis strategies for v1.0 (P10) objects, shared by the J03 and P03 round trips.

Timestamps are whole milliseconds (v1.0's precision, spec §5.6.1), metadata keys are
lowercase letters (they cannot collide with `data_part_compat` or the carry key).
"""

from __future__ import annotations

import base64
import string
from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st

from translators.j03 import objects as o

JSON = dict[str, Any]

IMPLIED_MEDIA_TYPE = {"text": "text/plain", "data": "application/json"}

# ====================================================================== strategies: leaves

ids = st.text(alphabet=string.ascii_letters + string.digits + "-_.", min_size=1, max_size=8)
texts = st.text(max_size=12)
# J03 optional strings: "" is the proto default, which ProtoJSON omits (absent ≡ "").
labels = st.text(min_size=1, max_size=12)
# Letters only: cannot collide with `data_part_compat`, the carry key, or `timestamp`.
meta_keys = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6)
json_scalars = (st.none() | st.booleans() | st.integers(-(2**53), 2**53)
                | st.floats(allow_nan=False, allow_infinity=False) | texts)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(meta_keys, inner, max_size=3),
    max_leaves=4)
json_objects = st.dictionaries(meta_keys, json_values, max_size=3)
metadata = st.dictionaries(meta_keys, json_values, min_size=1, max_size=2)
media_types = st.sampled_from(["text/plain", "application/json", "image/png", "text/markdown",
                               "application/pdf"])
b64 = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())
urls = ids.map(lambda s: f"https://x.example/{s}")
# Timestamps span the proto's whole range (years 1-9999), at the millisecond precision
# v1.0 asks for (spec §5.6.1); the J03 side adds offsets, so it keeps a day clear.
instants = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                        timezones=st.just(UTC))
STATES_P10 = list(o.STATE_P10_TO_J03)
STATES_J03 = list(o.STATE_J03_TO_P10)


def ms(dt: datetime) -> datetime:
    return dt.replace(microsecond=dt.microsecond // 1000 * 1000)


def optional(draw: st.DrawFn, out: JSON, key: str, strategy: st.SearchStrategy[Any]) -> None:
    if draw(st.booleans()):
        out[key] = draw(strategy)


# ====================================================================== strategies: P10


@st.composite
def parts_p10(draw: st.DrawFn) -> JSON:
    kind = draw(st.sampled_from(["text", "raw", "url", "data"]))
    value = {"text": texts, "raw": b64, "url": urls, "data": json_values}[kind]
    part: JSON = {kind: draw(value)}
    optional(draw, part, "mediaType", media_types)
    optional(draw, part, "filename", ids)
    optional(draw, part, "metadata", metadata)
    return part


@st.composite
def messages_p10(draw: st.DrawFn) -> JSON:
    msg: JSON = {"messageId": draw(ids), "role": draw(st.sampled_from(["ROLE_USER", "ROLE_AGENT"])),
                 "parts": draw(st.lists(parts_p10(), min_size=1, max_size=2))}
    optional(draw, msg, "contextId", ids)
    optional(draw, msg, "taskId", ids)
    optional(draw, msg, "metadata", metadata)
    optional(draw, msg, "extensions", st.lists(urls, min_size=1, max_size=2))
    optional(draw, msg, "referenceTaskIds", st.lists(ids, min_size=1, max_size=2))
    return msg


@st.composite
def statuses_p10(draw: st.DrawFn) -> JSON:
    status: JSON = {"state": draw(st.sampled_from(STATES_P10))}
    optional(draw, status, "message", messages_p10())
    optional(draw, status, "timestamp", instants.map(
        lambda d: ms(d).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"))
    return status


@st.composite
def artifacts_p10(draw: st.DrawFn) -> JSON:
    art: JSON = {"artifactId": draw(ids), "parts": draw(st.lists(parts_p10(), min_size=1,
                                                                 max_size=2))}
    optional(draw, art, "name", texts)
    optional(draw, art, "description", texts)
    optional(draw, art, "metadata", metadata)
    optional(draw, art, "extensions", st.lists(urls, min_size=1, max_size=2))
    return art


@st.composite
def tasks_p10(draw: st.DrawFn) -> JSON:
    task: JSON = {"id": draw(ids), "status": draw(statuses_p10())}
    optional(draw, task, "contextId", ids)
    optional(draw, task, "artifacts", st.lists(artifacts_p10(), min_size=1, max_size=2))
    optional(draw, task, "history", st.lists(messages_p10(), min_size=1, max_size=2))
    optional(draw, task, "metadata", metadata)
    return task


@st.composite
def status_updates_p10(draw: st.DrawFn) -> JSON:
    ev: JSON = {"taskId": draw(ids), "contextId": draw(ids), "status": draw(statuses_p10())}
    optional(draw, ev, "metadata", metadata)
    return ev


@st.composite
def artifact_updates_p10(draw: st.DrawFn) -> JSON:
    ev: JSON = {"taskId": draw(ids), "contextId": draw(ids), "artifact": draw(artifacts_p10()),
                "append": draw(st.booleans()), "lastChunk": draw(st.booleans())}
    optional(draw, ev, "metadata", metadata)
    return ev


stream_responses_p10 = st.one_of(
    tasks_p10().map(lambda t: {"task": t}),
    messages_p10().map(lambda m: {"message": m}),
    status_updates_p10().map(lambda e: {"statusUpdate": e}),
    artifact_updates_p10().map(lambda e: {"artifactUpdate": e}),
)


@st.composite
def push_configs_p10(draw: st.DrawFn, with_task: bool = True, extras: bool = False) -> JSON:
    """A flat v1.0 push config. In SendMessage's configuration (``with_task=False``) the
    task id stays empty (§3.7); ``extras`` adds what v0.3 cannot carry (a tenant, a task
    id there anyway)."""
    cfg: JSON = {"url": draw(urls)}
    if with_task:
        cfg["taskId"] = draw(ids)
    elif extras:
        optional(draw, cfg, "taskId", ids)
    optional(draw, cfg, "id", ids)
    optional(draw, cfg, "token", ids)
    if extras:
        optional(draw, cfg, "tenant", ids)
    if draw(st.booleans()):
        auth: JSON = {}
        optional(draw, auth, "scheme", st.sampled_from(["Bearer", "Basic", "ApiKey"]))
        optional(draw, auth, "credentials", ids)
        cfg["authentication"] = auth
    return cfg


@st.composite
def send_requests_p10(draw: st.DrawFn, extras: bool = False) -> JSON:
    req: JSON = {"message": draw(messages_p10())}
    if extras:
        optional(draw, req, "tenant", ids)
    if draw(st.booleans()):
        conf: JSON = {}
        optional(draw, conf, "acceptedOutputModes", st.lists(media_types, min_size=1, max_size=2))
        optional(draw, conf, "taskPushNotificationConfig",
                 push_configs_p10(with_task=False, extras=extras))
        optional(draw, conf, "historyLength", st.integers(0, 5))
        optional(draw, conf, "returnImmediately", st.booleans())
        req["configuration"] = conf
    optional(draw, req, "metadata", metadata)
    return req
