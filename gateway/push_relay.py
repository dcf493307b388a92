"""The webhook relay: push notifications between clients and backends of different versions.

A v1.0 client expects StreamResponse bodies and `Authorization`; a v0.3 client expects
a bare Task and `X-A2A-Notification-Token`. When the two sides differ (or always, if
configured), the gateway registers its own relay URL with the backend instead of the
client's webhook, and delivers what the backend posts there in the client's version
(push_relay_delivery.py).

The relay URL is ``<base>/_relay/<seal>``: the client's URL, token, authentication,
config id, versions and tenant, sealed with AES-GCM, so the gateway keeps no state and
any replica sharing the keys can deliver. The backend also gets a random relay token
(inside the seal) that it must send back with every notification.

This module: keys and seals, the endpoint backends POST to, and the two pipeline hooks — :meth:`PushRelay.rewrite_request`
(push-config create, and the inline config of SendMessage / SendStreamingMessage) and
:meth:`PushRelay.restore_response` (create, get and list answer with the client's own
URL, token and authentication).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import structlog
from a2a.types import a2a_pb2 as pb
from aiohttp import web
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.config import ConfigError, GatewayConfig, PushRelayConfig
from gateway.push_relay_delivery import COUNTERS, Delivery
from gateway.push_relay_guard import WebhookGuard
from translators import operations as ops
from translators.errors import A2AError
from translators.loss import LossReport
from translators.versions import V03
from translators.webhooks import (
    RelayTarget,
    backend_token_matches,
    body_for_client,
    event_task_id,
    parse_backend_body,
    register_relay,
    restore_client_config,
    target_from_config,
)

if TYPE_CHECKING:
    from gateway.pipeline import Gateway

RELAY_PATH = "/_relay/"
_FORMAT = 1  # first byte of a seal
_AAD = b"a2a-gateway push relay v1"
_KEY_ID_LEN = 4
_NONCE_LEN = 12

# One key per process when none is configured, so a config reload keeps the seals
# this process handed out working.
_generated_key: bytes | None = None


def _log() -> Any:
    # A fresh proxy per line: tests capture with structlog.testing.capture_logs().
    return structlog.get_logger("a2a_gateway.push_relay")


class SealError(Exception):
    """A relay seal that cannot be used; the message says why, never what is inside."""


def decode_key(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text.strip() + "=" * (-len(text.strip()) % 4))
    if len(raw) not in (16, 24, 32):
        raise ValueError("not 16, 24 or 32 bytes")
    return raw


def load_keys(settings: PushRelayConfig,
              environ: Mapping[str, str] | None = None) -> tuple[list[bytes], str]:
    """The relay keys, newest first, and where they came from: the environment variable
    named by `keys_env` (comma-separated) wins over `keys`; with neither, one key is
    made for this process (seals then die with it and replicas cannot share them)."""
    global _generated_key
    environ = os.environ if environ is None else environ
    from_env = [k for k in environ.get(settings.keys_env, "").replace(" ", ",").split(",")
                if k.strip()]
    texts, source = (from_env, f"env {settings.keys_env}") if from_env else (
        settings.keys, "config push_relay.keys")
    if texts:
        try:
            return [decode_key(k) for k in texts], source
        except (binascii.Error, ValueError):
            raise ConfigError(f"{source}: every relay key must be 16, 24 or 32 bytes in "
                              f"base64") from None
    if _generated_key is None:
        _generated_key = AESGCM.generate_key(bit_length=256)
    return [_generated_key], "generated"


class Sealer:
    """AES-GCM seals: seal with the first key, open with any (key rotation)."""

    def __init__(self, keys: list[bytes]) -> None:
        if not keys:
            raise ValueError("at least one key")
        self._keys = [(hashlib.sha256(k).digest()[:_KEY_ID_LEN], AESGCM(k)) for k in keys]

    def seal(self, payload: dict[str, Any]) -> str:
        key_id, aead = self._keys[0]
        nonce = os.urandom(_NONCE_LEN)
        plain = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        blob = bytes([_FORMAT]) + key_id + nonce + aead.encrypt(nonce, plain, _AAD)
        return base64.urlsafe_b64encode(blob).rstrip(b"=").decode("ascii")

    def open(self, sealed: str) -> dict[str, Any]:
        try:
            blob = base64.urlsafe_b64decode(sealed + "=" * (-len(sealed) % 4))
        except (binascii.Error, ValueError):
            raise SealError("the relay URL is malformed") from None
        head = 1 + _KEY_ID_LEN + _NONCE_LEN
        if len(blob) <= head + 16 or blob[0] != _FORMAT:
            raise SealError("the relay URL is malformed")
        key_id, nonce, box = blob[1:1 + _KEY_ID_LEN], blob[1 + _KEY_ID_LEN:head], blob[head:]
        candidates = [aead for kid, aead in self._keys if kid == key_id]
        if not candidates:
            raise SealError("the relay URL was sealed with a key this gateway does not have "
                            "(rotated out, or another gateway's)")
        for aead in candidates:
            try:
                plain = aead.decrypt(nonce, box, _AAD)
            except InvalidTag:
                continue
            try:
                data = json.loads(plain)
            except ValueError:
                break
            if isinstance(data, dict):
                return data
            break
        raise SealError("the relay URL's seal does not verify (tampered with)")


def relay_base(config: GatewayConfig) -> str:
    """Where backends reach the relay: push_relay.public_url, else public_url, else the
    HTTP listener (a wildcard listener is reached on 127.0.0.1)."""
    base = config.push_relay.public_url or config.public_url
    if not base:
        host, _, port = config.listen.http.rpartition(":")
        host = host.strip("[]")
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        base = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    return base.rstrip("/") + RELAY_PATH


def sealed_part(url: str) -> str | None:
    """The seal in a relay URL (``.../_relay/<seal>``), or None for any other URL."""
    try:
        path = urlsplit(url).path
    except ValueError:
        return None
    at = path.rfind(RELAY_PATH)
    if at < 0:
        return None
    sealed = path[at + len(RELAY_PATH):]
    return sealed if sealed and "/" not in sealed else None


class PushRelay:
    """Seals, the pipeline hooks, and the delivery worker of one gateway."""

    def __init__(self, config: GatewayConfig, gateway: Gateway,
                 environ: Mapping[str, str] | None = None) -> None:
        self.settings = config.push_relay
        self.enabled = self.settings.enabled
        keys, source = load_keys(self.settings, environ)
        self.key_source = source
        self.sealer = Sealer(keys)
        self.guard = WebhookGuard(self.settings)
        self.base = relay_base(config)
        self.counters = COUNTERS
        self.delivery = Delivery(self.settings, self.guard, gateway, self.counters)
        if self.enabled:
            if source == "generated":
                _log().warning(
                    "push relay key generated at start: relay URLs stop working when this "
                    "process exits, and replicas cannot deliver each other's; set "
                    f"push_relay.keys or {self.settings.keys_env} to a shared key")
            _log().info("push relay ready", relay_base=self.base, keys=len(keys),
                        key_source=source, always=self.settings.always)

    # ------------------------------------------------------------ seals

    def seal(self, target: RelayTarget) -> str:
        return self.sealer.seal(target.to_payload())

    def open(self, sealed: str, *, check_age: bool) -> RelayTarget:
        data = self.sealer.open(sealed)
        try:
            target = RelayTarget.from_payload(data)
        except ValueError as exc:
            raise SealError(f"the relay URL's payload is not understood ({exc})") from None
        max_age = self.settings.seal_max_age
        if check_age and max_age and time.time() - target.issued_at > max_age:
            raise SealError(f"the relay URL expired (issued {int(time.time()) - target.issued_at}"
                            f" s ago, push_relay.seal_max_age is {max_age:g} s)")
        return target

    # ------------------------------------------------------------ pipeline hooks

    def relays(self, call: Call) -> bool:
        return self.enabled and (self.settings.always
                                 or call.ctx.client_version != call.ctx.backend_version)

    @staticmethod
    def _push_config(call: Call) -> pb.TaskPushNotificationConfig | None:
        request: Any = call.request
        if call.op.name == ops.PUSH_CREATE:
            return request  # type: ignore[no-any-return]
        if call.op.name in (ops.SEND, ops.STREAM) and request.HasField("configuration") \
                and request.configuration.HasField("task_push_notification_config"):
            return request.configuration.task_push_notification_config  # type: ignore[no-any-return]
        return None

    async def rewrite_request(self, call: Call) -> None:
        """Before the backend: put the relay in place of the client's webhook (after the
        SSRF guard has accepted that webhook). Call after the tenant is resolved."""
        cfg = self._push_config(call)
        if cfg is None or not self.relays(call):
            return
        await self.guard.check(cfg.url)
        backend_version = call.ctx.backend_version or ""
        target = target_from_config(
            cfg, client_version=call.ctx.client_version, backend_version=backend_version,
            tenant=call.ctx.tenant or "", relay_token=secrets.token_urlsafe(16),
            issued_at=int(time.time()))
        register_relay(cfg, self.base + self.seal(target), target.relay_token, backend_version)

    def restore_response(self, call: Call, result: ProtoMessage | None) -> ProtoMessage | None:
        """After the backend: push configs pointing at a relay get the client's values."""
        if result is None or call.op.name not in (ops.PUSH_CREATE, ops.PUSH_GET, ops.PUSH_LIST):
            return result
        configs = list(result.configs) if isinstance(  # type: ignore[attr-defined]
            result, pb.ListTaskPushNotificationConfigsResponse) else [result]
        for cfg in configs:
            if isinstance(cfg, pb.TaskPushNotificationConfig):
                self.restore(cfg)
        return result

    def restore(self, cfg: pb.TaskPushNotificationConfig) -> None:
        sealed = sealed_part(cfg.url)
        if sealed is None:
            return
        try:
            target = self.open(sealed, check_age=False)
        except SealError as exc:
            # Another gateway's relay (a chain), or a key rotated out: leave it as it is.
            _log().debug("push config keeps a relay URL this gateway cannot open",
                         reason=str(exc))
            return
        restore_client_config(cfg, target)

    async def close(self) -> None:
        await self.delivery.close()


# ---------------------------------------------------------------- the endpoint


def _refusal(status: int, code: str, message: str) -> web.Response:
    # Shaped like a google.rpc.Status error body, as v1.0 REST errors are.
    return web.json_response({"error": {"code": status, "status": code, "message": message}},
                             status=status)


async def handle(request: web.Request) -> web.Response:
    """`POST /_relay/{sealed}`: a backend's push notification for a relayed config."""
    from gateway.ingress.common import gateway_of  # the ingress imports the pipeline

    relay = gateway_of(request).relay
    if not relay.enabled:
        return _refusal(404, "NOT_FOUND", "the push relay is disabled")
    sealed = request.match_info["sealed"]
    try:
        target = relay.open(sealed, check_age=True)
    except SealError as exc:
        relay.counters.bump("refused")
        _log().warning("push relay refused a notification", reason=str(exc))
        return _refusal(403, "PERMISSION_DENIED", f"push relay: {exc}")
    if not backend_token_matches(request.headers, target.relay_token):
        relay.counters.bump("refused")
        _log().warning("push relay refused a notification", tenant=target.tenant,
                       reason="relay token missing or wrong")
        return _refusal(403, "PERMISSION_DENIED", "push relay: the notification does not "
                        "carry the token registered with this relay URL")
    loss = LossReport()
    try:
        raw = json.loads(await request.read())
        event = parse_backend_body(raw, target.backend_version, loss)
    except ValueError:
        return _refusal(400, "INVALID_ARGUMENT", "push relay: the body is not JSON")
    except A2AError as err:
        return _refusal(400, "INVALID_ARGUMENT", f"push relay: {err.message}")
    task_id = event_task_id(event)
    if target.task_id and task_id and task_id != target.task_id:
        relay.counters.bump("refused")
        return _refusal(403, "PERMISSION_DENIED", "push relay: the notification is for "
                        "another task than the one this relay URL was registered for")
    relay.counters.bump("accepted")
    try:
        body = body_for_client(event, raw, target.backend_version, target.client_version, loss)
    except A2AError as err:  # answered 202: the backend did its part; we log and count
        relay.delivery.report_failure(target, task_id, 0, f"untranslatable body: {err.message}",
                                      loss)
        return web.json_response({}, status=202)
    if body is None and not task_id and target.client_version == V03:
        relay.delivery.report_failure(target, task_id, 0, "a message outside any task has "
                                      "no v0.3 webhook form (v0.3 webhooks carry a Task)", loss)
        return web.json_response({}, status=202)
    relay.delivery.submit(sealed, target, event, body, loss)
    return web.json_response({}, status=202)

