"""Small shared pieces of the P03 translator: file bytes, resource names.

"P03" here means the v0.3 protobuf messages (package a2a.v1), whichever encoding carried
them: gRPC bytes, or their ProtoJSON in v0.3 REST bodies. Loss paths use the v1.0
ProtoJSON (camelCase) names, like the J03 translator's.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Literal

from translators.errors import invalid_params

# How `FilePart.file_with_bytes` holds the content (reference §3.2, double-base64 warning):
#   "double" - the v0.3 SDKs' convention: the proto bytes are the base64 *text* of it;
#   "raw"    - a spec-pure peer: the proto bytes are the content;
#   "auto"   - decoding only: base64 text is decoded once more, anything else is content.
# Decoding defaults to "auto", encoding to "double" (what the SDK peers expect); encoding
# treats "auto" as "double".
BytesMode = Literal["auto", "raw", "double"]

_STRICT_B64 = re.compile(rb"\A(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\Z")


def at(path: str, name: str) -> str:
    """`path.name`, or `name` at the root."""
    return f"{path}.{name}" if path else name


def file_bytes_to_p10(data: bytes, mode: BytesMode, path: str) -> bytes:
    """The file content inside a v0.3 `file_with_bytes`."""
    if mode == "raw":
        return data
    if mode == "auto":
        # Only text in the strict standard alphabet with correct padding counts as the SDK
        # convention; anything else (binary, URL-safe, unpadded) must be the content itself.
        if data and _STRICT_B64.match(data):
            return base64.b64decode(data)
        return data
    # "double": the peer is known to follow the SDKs, so be as lenient as ProtoJSON bytes
    # are (reference §3.0): standard or URL-safe alphabet, padded or not.
    text = data.strip().replace(b"-", b"+").replace(b"_", b"/")
    try:
        return base64.b64decode(text + b"=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise invalid_params(f"{path} is not base64 text, as bytes mode 'double' requires") from exc


def file_bytes_to_p03(content: bytes, mode: BytesMode) -> bytes:
    """What goes into a v0.3 `file_with_bytes` for ``content``."""
    if mode == "raw":
        return content
    return base64.b64encode(content)


# ---------------------------------------------------------------- resource names
# Reference §3.9: v0.3 names the task and the config in resource names; v1.0 uses fields.

_TASK_NAME = re.compile(r"\Atasks/([^/]+)\Z")
_PUSH_CONFIG_NAME = re.compile(r"\Atasks/([^/]+)/pushNotificationConfigs/([^/]+)\Z")


def task_name(task_id: str, field: str) -> str:
    if not task_id or "/" in task_id:
        raise invalid_params(f"{field} must be a non-empty task id without '/' to name a "
                             f"v0.3 task resource, got {task_id!r}", field=field)
    return f"tasks/{task_id}"


def push_config_name(task_id: str, config_id: str, task_field: str, config_field: str) -> str:
    if not config_id or "/" in config_id:
        raise invalid_params(f"{config_field} must be a non-empty config id without '/' to "
                             f"name a v0.3 push config resource, got {config_id!r}",
                             field=config_field)
    return f"{task_name(task_id, task_field)}/pushNotificationConfigs/{config_id}"


def parse_task_name(name: str, field: str) -> str:
    """The task id in `tasks/{id}`."""
    match = _TASK_NAME.match(name)
    if match is None:
        raise invalid_params(f"{field} must look like 'tasks/{{id}}', got {name!r}", field=field)
    return match.group(1)


def parse_push_config_name(name: str, field: str) -> tuple[str, str]:
    """(task id, config id) in `tasks/{t}/pushNotificationConfigs/{c}`."""
    match = _PUSH_CONFIG_NAME.match(name)
    if match is None:
        raise invalid_params(
            f"{field} must look like 'tasks/{{taskId}}/pushNotificationConfigs/{{configId}}', "
            f"got {name!r}", field=field)
    return match.group(1), match.group(2)
