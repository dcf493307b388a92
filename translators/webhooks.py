"""Webhooks (push notifications) across versions: bodies, headers, and the relay target.

Reference §3.9 "Webhook delivery":

| | v0.3 | v1.0 |
|---|---|---|
| body | the full J03 Task (`kind: "task"`) | a P10 StreamResponse (`task`, `message`, `statusUpdate` or `artifactUpdate`) |
| token | `X-A2A-Notification-Token: <token>` | a2a-sdk sends the same header (SDK de-facto) |
| auth | (not built by the SDK) | `Authorization: <scheme> <credentials>` from `authentication` (spec §4.3.3) |
| type | `application/json` (spec@v0.3.0 §9.5) | `application/a2a+json` (spec@v1.0.1 §4.3.3; a2a-sdk sends `application/json`) |

When the gateway relays a webhook it registers its own URL with the backend; that URL
carries a sealed :class:`RelayTarget` (the client's webhook and how to call it). This
module defines that payload's schema and every rule that needs no I/O; sealing,
resolving and sending live in ``gateway/push_relay*.py``.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from a2a.types import a2a_pb2 as pb

from translators.errors import A2AError, a2a_error
from translators.j03.objects import stream_item_to_p10, task_to_j03
from translators.loss import LossReport
from translators.protojson import dump_p10, parse_p10, reclassify
from translators.versions import V03, V10
from translators.vocabulary import JSON

TOKEN_HEADER = "X-A2A-Notification-Token"
# a2a-go's spelling of the same header; accepted from backends, never sent.
TOKEN_HEADER_UNPREFIXED = "A2A-Notification-Token"
# The scheme of the credentials the relay registers with v1.0 backends (which MUST
# send `Authorization` built from them).
RELAY_SCHEME = "Bearer"

CONTENT_TYPE = {V03: "application/json", V10: "application/a2a+json"}

# Version of the sealed payload schema; bump it when the keys below change meaning.
PAYLOAD_VERSION = 1


@dataclass(frozen=True)
class RelayTarget:
    """What the relay URL carries: the client's webhook, its credentials, and context.

    ``authentication`` is ``(scheme, credentials)`` when the client gave one (either may
    be empty). ``task_id`` is empty for configs given inline in SendMessage (the task
    does not exist yet). ``issued_at`` is a Unix time in seconds. ``owner`` is the key of
    the principal who set the config ("" when the call was not authenticated): only
    that caller gets its webhook and credentials back (:func:`shown_config`).
    """

    url: str
    client_version: str
    backend_version: str
    tenant: str
    relay_token: str
    issued_at: int
    token: str = ""
    authentication: tuple[str, str] | None = None
    config_id: str = ""
    task_id: str = ""
    owner: str = ""

    def to_payload(self) -> JSON:
        """The compact JSON that gets sealed (short keys keep the URL short)."""
        out: JSON = {"v": PAYLOAD_VERSION, "u": self.url, "cv": self.client_version,
                     "bv": self.backend_version, "tn": self.tenant, "rt": self.relay_token, "iat": self.issued_at}
        if self.token:
            out["tk"] = self.token
        if self.authentication is not None:
            out["a"] = list(self.authentication)
        if self.config_id:
            out["c"] = self.config_id
        if self.task_id:
            out["t"] = self.task_id
        if self.owner:  # optional: a seal made before owners were sealed has none
            out["o"] = self.owner
        return out

    @classmethod
    def from_payload(cls, data: Any) -> RelayTarget:
        """The inverse of :meth:`to_payload`; ValueError on anything else."""
        if not isinstance(data, dict) or data.get("v") != PAYLOAD_VERSION:
            raise ValueError("unknown relay payload version")
        auth = data.get("a")
        if auth is not None and not (isinstance(auth, list) and len(auth) == 2
                                     and all(isinstance(x, str) for x in auth)):
            raise ValueError("relay payload: bad authentication")
        iat = data.get("iat")
        if not isinstance(iat, int) or isinstance(iat, bool):
            raise ValueError("relay payload: bad issued-at time")
        if data.get("cv") not in (V03, V10) or data.get("bv") not in (V03, V10):
            raise ValueError("relay payload: bad protocol version")
        strings = {}
        for key in ("u", "tn", "rt", "tk", "c", "t", "o"):
            value = data.get(key, "")
            if not isinstance(value, str):
                raise ValueError(f"relay payload: {key} must be a string")
            strings[key] = value
        if not strings["u"] or not strings["rt"]:
            raise ValueError("relay payload: url and relay token are required")
        return cls(url=strings["u"], client_version=data["cv"], backend_version=data["bv"],
                   tenant=strings["tn"],
                   relay_token=strings["rt"], issued_at=iat, token=strings["tk"],
                   authentication=(auth[0], auth[1]) if auth is not None else None,
                   config_id=strings["c"], task_id=strings["t"], owner=strings["o"])


# ---------------------------------------------------------------- configs


def target_from_config(cfg: pb.TaskPushNotificationConfig, *, client_version: str,
                       backend_version: str, tenant: str, relay_token: str,
                       issued_at: int, owner: str = "") -> RelayTarget:
    """The client's push config as a relay target (before the relay replaces it)."""
    auth = None
    if cfg.HasField("authentication"):
        auth = (cfg.authentication.scheme, cfg.authentication.credentials)
    return RelayTarget(url=cfg.url, client_version=client_version,
                       backend_version=backend_version, tenant=tenant,
                       relay_token=relay_token, issued_at=issued_at, token=cfg.token,
                       authentication=auth, config_id=cfg.id, task_id=cfg.task_id,
                       owner=owner)


def register_relay(cfg: pb.TaskPushNotificationConfig, relay_url: str, relay_token: str,
                   backend_version: str) -> None:
    """Point a push config at the relay. v0.3 backends send the token header; v1.0
    backends MUST send `Authorization` from `authentication` (and a2a-sdk also sends the
    token header), so they get both. Id, task id and tenant stay as the client gave them,
    so get and delete by the client's own id keep working."""
    cfg.url = relay_url
    cfg.token = relay_token
    if backend_version == V10:
        cfg.authentication.CopyFrom(pb.AuthenticationInfo(scheme=RELAY_SCHEME,
                                                          credentials=relay_token))
    else:
        cfg.ClearField("authentication")


def restore_client_config(cfg: pb.TaskPushNotificationConfig, target: RelayTarget) -> None:
    """Give a config the backend holds (pointing at the relay) the client's own values."""
    cfg.url = target.url
    cfg.token = target.token
    if target.authentication is None:
        cfg.ClearField("authentication")
    else:
        cfg.authentication.CopyFrom(pb.AuthenticationInfo(
            scheme=target.authentication[0], credentials=target.authentication[1]))
    if not cfg.id and target.config_id:
        cfg.id = target.config_id


def shown_config(cfg: pb.TaskPushNotificationConfig, target: RelayTarget | None, *,
                 tenant: str, caller: str,
                 own: pb.TaskPushNotificationConfig | None = None) -> str:
    """What a caller is shown of a push config a backend answered with (create, get,
    list): the one rule, for every dialect (they all render this canonical config).
    Returns what was shown: ``owner`` or ``own`` (credentials kept), else why they were
    removed (``another tenant or task``, ``another principal``, ``no seal``).

    Credentials (``token``, ``authentication.credentials``) are shown only where the
    gateway can vouch that the caller set them, never because the backend echoes them:

    - ``target``, the config's relay seal, opened: made for this tenant and task by
      this ``caller`` (a principal's key, "" unauthenticated) — the client's own URL,
      token and authentication come back;
    - ``own``, a create's own config, not relayed: what this caller just sent;
    - anything else (another principal's seal, another tenant's or task's, a config the
      backend holds without a seal): credentials removed; a relay URL stays the opaque
      relay URL (a webhook's URL can itself be a secret). Removed, not masked: both SDK
      generations take a config without them, and a mask would be a wrong token to
      anyone who sets the config again from what it read.
    """
    if target is not None:
        if target.tenant != tenant or (target.task_id and target.task_id != cfg.task_id):
            shown = "another tenant or task"
        elif target.owner != caller:
            shown = "another principal"
        else:
            restore_client_config(cfg, target)
            return "owner"
    elif own is not None:
        cfg.token = own.token
        if own.HasField("authentication"):
            cfg.authentication.CopyFrom(own.authentication)
        else:
            cfg.ClearField("authentication")
        return "own"
    else:
        shown = "no seal"
    cfg.token = ""
    if cfg.HasField("authentication"):
        cfg.authentication.credentials = ""
        if not cfg.authentication.scheme:  # nothing left to show
            cfg.ClearField("authentication")
    return shown


# ---------------------------------------------------------------- headers


def backend_token_matches(headers: Mapping[str, str], relay_token: str) -> bool:
    """Whether a backend's webhook POST carries the relay token: in the token header
    (either spelling) or as `Authorization: Bearer <token>`. Constant-time compare."""
    lowered = {k.lower(): v for k, v in headers.items()}
    expected = relay_token.encode()
    candidates = [lowered.get(TOKEN_HEADER.lower(), ""),
                  lowered.get(TOKEN_HEADER_UNPREFIXED.lower(), "")]
    scheme, _, credentials = lowered.get("authorization", "").partition(" ")
    if scheme.lower() == RELAY_SCHEME.lower():
        candidates.append(credentials.strip())
    return any(hmac.compare_digest(c.encode(), expected) for c in candidates if c)


def delivery_headers(target: RelayTarget) -> dict[str, str]:
    """Headers for the POST to the client's webhook, the way its version expects.

    Both versions get the token header (the only one v0.3 defines, and the one a2a-sdk
    v1.x receivers read) and `Authorization: <scheme> <credentials>` when the client gave
    both (what the v1.0 spec requires; for a v0.3 client it is what its
    `authentication` asked for)."""
    headers = {"Content-Type": CONTENT_TYPE[target.client_version]}
    if target.token:
        headers[TOKEN_HEADER] = target.token
    if target.authentication is not None:
        scheme, credentials = target.authentication
        if scheme and credentials:
            headers["Authorization"] = f"{scheme} {credentials}"
    return headers


# ---------------------------------------------------------------- bodies


def parse_backend_body(body: Any, backend_version: str, loss: LossReport) -> pb.StreamResponse:
    """What a backend POSTed to the relay, as a canonical StreamResponse. A v0.3 body is
    a J03 Task (a v0.3 agent might send any `kind`; all four are understood). Shape
    errors are InvalidAgentResponseError."""
    try:
        if backend_version == V03:
            body = stream_item_to_p10(body, "body", loss)
        event = parse_p10(body, pb.StreamResponse, error="InvalidAgentResponseError")
    except A2AError as err:
        raise reclassify(err) from None
    if event.WhichOneof("payload") is None:
        raise a2a_error("InvalidAgentResponseError", "webhook body is none of task, message, "
                        "statusUpdate, artifactUpdate")
    return event


def event_task_id(event: pb.StreamResponse) -> str:
    kind = event.WhichOneof("payload")
    if kind == "task":
        return str(event.task.id)
    if kind == "message":
        return str(event.message.task_id)
    if kind == "status_update":
        return str(event.status_update.task_id)
    if kind == "artifact_update":
        return str(event.artifact_update.task_id)
    return ""


def body_for_client(event: pb.StreamResponse, raw: Any, backend_version: str,
                    client_version: str, loss: LossReport) -> JSON | None:
    """The webhook body for the client: the backend's own body when both speak the same
    version; else the translation. None when a v0.3 client needs the Task snapshot a
    v1.0 event (status, artifact, message) implies: fetch it, then :func:`snapshot_body`."""
    if backend_version == client_version and isinstance(raw, dict):
        return raw
    loss.answering = True
    if client_version == V10:
        return dump_p10(event)
    if event.HasField("task"):
        return task_to_j03(dump_p10(event.task), "body", loss)
    return None


def snapshot_body(task: pb.Task, client_version: str, loss: LossReport) -> JSON:
    loss.answering = True
    if client_version == V10:
        return dump_p10(pb.StreamResponse(task=task))
    return task_to_j03(dump_p10(task), "body", loss)


def implied_task(event: pb.StreamResponse) -> pb.Task:
    """The Task a v1.0 event says exists, when the backend cannot be asked for it: the
    ids and what the event carries (status, the artifact, or the message as history)."""
    kind = event.WhichOneof("payload")
    if kind == "task":
        return event.task
    task = pb.Task(id=event_task_id(event))
    if kind == "status_update":
        task.context_id = event.status_update.context_id
        task.status.CopyFrom(event.status_update.status)
    elif kind == "artifact_update":
        task.context_id = event.artifact_update.context_id
        task.artifacts.append(event.artifact_update.artifact)
    elif kind == "message":
        task.context_id = event.message.context_id
        task.history.append(event.message)
    return task
