"""ProtoJSON at the edges of the canonical model (reference §3.0).

The canonical model is the v1.0 protobuf messages; P10 dicts are their ProtoJSON form.
These two helpers are the only place that converts between them, so leniency on input
(unknown fields ignored, spec §5.7) and the exceptions to default omission live here.
"""

from __future__ import annotations

from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage

from translators.errors import A2AError, a2a_error

M = TypeVar("M", bound=ProtoMessage)

# Fields ProtoJSON would omit at their default but the spec wants present: ListTasksResponse
# fields are all REQUIRED and nextPageToken MUST be present even when empty (§3.0). Only
# the top level: the tasks inside keep default omission (absent artifacts mean "not
# included", §3.1.4).
_ALWAYS_PRESENT: dict[str, dict[str, Any]] = {
    "lf.a2a.v1.ListTasksResponse": {"tasks": [], "nextPageToken": "", "pageSize": 0,
                                    "totalSize": 0},
}


def parse_p10(data: Any, cls: type[M], *, error: str = "InvalidParamsError") -> M:
    """A v1.0 message from its ProtoJSON; bad shapes become ``error`` (InvalidParams on
    requests, InvalidAgentResponse on what a backend sent)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise a2a_error(error, f"expected a JSON object for {cls.DESCRIPTOR.name}")
    try:
        msg: M = json_format.ParseDict(data, cls(), ignore_unknown_fields=True)
        return msg
    except json_format.ParseError as exc:
        raise a2a_error(error, f"{cls.DESCRIPTOR.name}: {exc}") from exc


def dump_p10(msg: ProtoMessage) -> dict[str, Any]:
    out: dict[str, Any] = json_format.MessageToDict(msg)
    for key, default in _ALWAYS_PRESENT.get(msg.DESCRIPTOR.full_name, {}).items():
        out.setdefault(key, list(default) if isinstance(default, list) else default)
    _restore_ints(out)
    return out


def integral(value: Any) -> Any:
    """Struct and Value hold every number as a double, so `{"k": 1}` would come back as
    `{"k": 1.0}`; give integral numbers back their integer form (exact below 2**53)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


# Keys whose values are Struct/Value in the v1.0 proto (Part.data, every metadata,
# AgentExtension.params, AgentCardSignature.header).
_FREE_FORM = frozenset({"data", "metadata", "params", "header"})


def _restore_ints(node: Any) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _FREE_FORM:
                node[key] = integral(value)
            elif isinstance(value, dict | list):
                _restore_ints(value)
    elif isinstance(node, list):
        for item in node:
            _restore_ints(item)


def reclassify(err: A2AError, *, as_name: str = "InvalidAgentResponseError") -> A2AError:
    """A translation failure on something a backend sent is the backend's fault."""
    if err.kind.name in ("InvalidParamsError", "InvalidRequestError"):
        return a2a_error(as_name, f"backend response: {err.message}")
    return err
