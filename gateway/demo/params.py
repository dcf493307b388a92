"""Validation of v0.3 JSON-RPC params into small typed values.

Everything a client sends passes through here first, so the rest of the agent can
index dicts without guarding against wrong types. Every failure is -32602.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from gateway.demo.wire import JSON, invalid_params


@dataclass(frozen=True)
class SendParams:
    message: JSON
    blocking: bool
    history_length: int | None
    push_config: JSON | None


@dataclass(frozen=True)
class TaskQuery:
    task_id: str
    history_length: int | None


@dataclass(frozen=True)
class PushConfigRef:
    task_id: str
    config_id: str


@dataclass(frozen=True)
class PushConfigSet:
    task_id: str
    config: JSON


def _object(value: Any, where: str) -> JSON:
    if not isinstance(value, dict):
        raise invalid_params(f"{where} must be an object")
    return value


def _string(obj: JSON, key: str, where: str, *, required: bool) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise invalid_params(f"{where}.{key} must be a non-empty string")
    return value


def _required_string(obj: JSON, key: str, where: str) -> str:
    value = _string(obj, key, where, required=True)
    assert value is not None  # _string raised otherwise
    return value


def _history_length(obj: JSON, where: str) -> int | None:
    value = obj.get("historyLength")
    if value is None:
        return None
    # bool is an int subclass; `true` is not a length.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid_params(f"{where}.historyLength must be a non-negative integer")
    # v0.3 treats 0 as "no limit", so it is the same as leaving it out.
    return value or None


def _check_part(part: Any, where: str) -> None:
    part = _object(part, where)
    kind = part.get("kind")
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise invalid_params(f"{where}.text must be a string")
    elif kind == "file":
        file = _object(part.get("file"), f"{where}.file")
        if not isinstance(file.get("bytes"), str) and not isinstance(file.get("uri"), str):
            raise invalid_params(f"{where}.file needs a 'bytes' or 'uri' string")
    elif kind == "data":
        _object(part.get("data"), f"{where}.data")
    else:
        raise invalid_params(f"{where}.kind must be 'text', 'file' or 'data'")


def _message(value: Any) -> JSON:
    message = _object(value, "message")
    if message.get("kind", "message") != "message":
        raise invalid_params("message.kind must be 'message'")
    _required_string(message, "messageId", "message")
    if message.get("role") not in ("user", "agent"):
        raise invalid_params("message.role must be 'user' or 'agent'")
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        raise invalid_params("message.parts must be a non-empty array")
    for index, part in enumerate(parts):
        _check_part(part, f"message.parts[{index}]")
    _string(message, "taskId", "message", required=False)
    _string(message, "contextId", "message", required=False)
    # Copy so later edits (ids we fill in) never alias the request body.
    normalised = copy.deepcopy(message)
    normalised["kind"] = "message"
    return normalised


def push_config(value: Any, where: str) -> JSON:
    config = _object(value, where)
    _required_string(config, "url", where)
    _string(config, "id", where, required=False)
    _string(config, "token", where, required=False)
    if config.get("authentication") is not None:
        _object(config["authentication"], f"{where}.authentication")
    return copy.deepcopy(config)


def send_params(params: Any) -> SendParams:
    params = _object(params, "params")
    message = _message(params.get("message"))
    config = params.get("configuration")
    if config is None:
        return SendParams(message, blocking=True, history_length=None, push_config=None)
    config = _object(config, "configuration")
    blocking = config.get("blocking")
    if blocking is not None and not isinstance(blocking, bool):
        raise invalid_params("configuration.blocking must be a boolean")
    inline = config.get("pushNotificationConfig")
    return SendParams(
        message,
        # Missing means blocking, as in py@v0.3.26 (the J03 schema gives no default).
        blocking=blocking is not False,
        history_length=_history_length(config, "configuration"),
        push_config=None
        if inline is None
        else push_config(inline, "configuration.pushNotificationConfig"),
    )


def task_id(params: Any) -> str:
    return _required_string(_object(params, "params"), "id", "params")


def task_query(params: Any) -> TaskQuery:
    params = _object(params, "params")
    return TaskQuery(_required_string(params, "id", "params"), _history_length(params, "params"))


def push_config_ref(params: Any) -> PushConfigRef:
    params = _object(params, "params")
    task = _required_string(params, "id", "params")
    # A config set without an id is stored under the task id, so that is the default here too.
    config = _string(params, "pushNotificationConfigId", "params", required=False)
    return PushConfigRef(task, config or task)


def push_config_set(params: Any) -> PushConfigSet:
    params = _object(params, "params")
    task = _required_string(params, "taskId", "params")
    config = push_config(params.get("pushNotificationConfig"), "params.pushNotificationConfig")
    return PushConfigSet(task, config)
