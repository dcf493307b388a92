"""What a backend's card lets a caller do (reference §8.11, spec §3.3.4).

Checked before the backend is called, so a client learns of an unsupported operation
the same way whatever the backend would have answered.
"""

from __future__ import annotations

from google.protobuf.message import Message as ProtoMessage

from translators import operations as ops
from translators.card_serving import capability, required_extensions
from translators.errors import A2AError, a2a_error
from translators.vocabulary import JSON

_PUSH_OPS = frozenset({ops.PUSH_CREATE, ops.PUSH_GET, ops.PUSH_LIST, ops.PUSH_DELETE})
_STREAM_OPS = frozenset({ops.STREAM, ops.SUBSCRIBE})


def _asks_for_push(op: str, request: ProtoMessage) -> bool:
    if op in _PUSH_OPS:
        return True
    if op in (ops.SEND, ops.STREAM):
        config = getattr(request, "configuration", None)
        return config is not None and config.HasField("task_push_notification_config")
    return False


def precheck(op: str, request: ProtoMessage, card: JSON | None,
             declared_extensions: list[str]) -> A2AError | None:
    """The error the spec prescribes when the card rules the call out, else None. No
    card known means no opinion: the backend decides."""
    if card is None:
        return None
    missing = [uri for uri in required_extensions(card) if uri not in declared_extensions]
    if missing:
        return a2a_error("ExtensionSupportRequiredError",
                         f"the agent requires extension(s) {', '.join(missing)}; declare them "
                         "in A2A-Extensions", extensions=",".join(missing))
    if op in _STREAM_OPS and capability(card, "streaming") is False:
        return a2a_error("UnsupportedOperationError", "the agent does not support streaming")
    if _asks_for_push(op, request) and capability(card, "pushNotifications") is False:
        return a2a_error("PushNotificationNotSupportedError",
                         "the agent does not support push notifications")
    if op == ops.EXTENDED_CARD and capability(card, "extendedAgentCard") is False:
        return a2a_error("UnsupportedOperationError",
                         "the agent does not offer an extended agent card")
    return None
