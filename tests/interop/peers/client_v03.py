"""A2A protocol v0.3 test client built on the official a2a-sdk 0.3.26 client.

    .venvs/sdk03/bin/python tests/interop/peers/client_v03.py \
        --url URL --transport JSONRPC|HTTP+JSON|GRPC --scenario NAME|all [--webhook URL]

The agent card is built locally from --url/--transport (never fetched). Prints
exactly one JSON object on stdout; see README.md for the shapes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, cast
from uuid import uuid4

import grpc
import httpx
from _client_common import (
    PUSH_CREDENTIALS,
    PUSH_SCHEME,
    PUSH_TOKEN,
    Unsupported,
    client_args,
    error_dict,
    file_part,
    plain,
    push_config,
    role_label,
    run_client,
    state_label,
)
from a2a.client import ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor
from a2a.client.base_client import BaseClient
from a2a.client.errors import A2AClientHTTPError, A2AClientJSONRPCError
from a2a.grpc import a2a_pb2, a2a_pb2_grpc
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    DataPart,
    DeleteTaskPushNotificationConfigParams,
    DeleteTaskPushNotificationConfigRequest,
    FilePart,
    FileWithBytes,
    GetTaskPushNotificationConfigParams,
    JSONRPCErrorResponse,
    ListTaskPushNotificationConfigParams,
    ListTaskPushNotificationConfigRequest,
    Message,
    MessageSendConfiguration,
    Part,
    PushNotificationAuthenticationInfo,
    PushNotificationConfig,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TaskStatusUpdateEvent,
    TextPart,
)
from a2a.utils.proto_utils import FromProto
from google.protobuf import json_format

_NO_LIST_TASKS = "v0.3 has no ListTasks (no such method in the v0.3 JSON schema or proto)"


def _texts(parts: list[Part]) -> list[str]:
    return [p.root.text for p in parts if isinstance(p.root, TextPart)]


def _first_text(message: Message | None) -> str | None:
    texts = _texts(message.parts) if message else []
    return texts[0] if texts else None


def _part(part: Part) -> dict[str, Any]:
    root = part.root
    if isinstance(root, TextPart):
        return {"text": root.text}
    if isinstance(root, DataPart):
        return {"data": plain(root.data)}
    if isinstance(root, FilePart):
        file = root.file
        if isinstance(file, FileWithBytes):
            return file_part(base64.b64decode(file.bytes), file.mime_type, file.name)
        return {"fileUri": file.uri, "mimeType": file.mime_type, "name": file.name}
    return {"unknown": part.model_dump(mode="json")}


def _task(task: Task) -> dict[str, Any]:
    return {
        "kind": "task",
        "id": task.id,
        "contextId": task.context_id,
        "state": state_label(task.status.state.value),
        "statusText": _first_text(task.status.message),
        "artifacts": [
            {"artifactId": a.artifact_id, "name": a.name, "parts": [_part(p) for p in a.parts]}
            for a in task.artifacts or []
        ],
        "historyTexts": [_first_text(m) for m in task.history or []],
    }


def _result(result: Task | Message) -> dict[str, Any]:
    if isinstance(result, Task):
        return _task(result)
    return {"kind": "message", "role": role_label(result.role.value), "text": _first_text(result)}


def _event(item: tuple[Task, Any] | Message) -> dict[str, Any]:
    if isinstance(item, Message):
        return {"type": "message", "text": _first_text(item)}
    task, update = item
    if isinstance(update, TaskStatusUpdateEvent):
        return {
            "type": "status",
            "state": state_label(update.status.state.value),
            "final": update.final,
        }
    if isinstance(update, TaskArtifactUpdateEvent):
        return {
            "type": "artifact",
            "artifactId": update.artifact.artifact_id,
            "text": "".join(_texts(update.artifact.parts)),
            "append": bool(update.append),
            "lastChunk": bool(update.last_chunk),
        }
    return {"type": "task", "state": state_label(task.status.state.value)}


def _push(config: TaskPushNotificationConfig) -> dict[str, Any]:
    inner = config.push_notification_config
    auth = inner.authentication
    return push_config(
        config.task_id,
        inner.id,
        inner.url,
        inner.token,
        auth.schemes[0] if auth and auth.schemes else None,
        auth.credentials if auth else None,
    )


def describe_error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, A2AClientJSONRPCError):
        return error_dict(exc, exc.error.code, exc.error.message)
    if isinstance(exc, A2AClientHTTPError):
        return error_dict(exc, None, exc.message)
    if isinstance(exc, grpc.aio.AioRpcError):
        return error_dict(exc, None, exc.details())
    return error_dict(exc, None, str(exc))


class _CallMetadata:
    """Adds metadata to every call: `x-a2a-tenant`, credentials (the 0.3.26 gRPC client
    has no per-call metadata and does not run the SDK's auth interceptors)."""

    def __init__(self, pairs: dict[str, str]) -> None:
        self._pairs = pairs

    def _details(self, details: Any) -> Any:
        metadata = grpc.aio.Metadata(*(details.metadata or ()))
        for key, value in self._pairs.items():
            metadata.add(key, value)
        return details._replace(metadata=metadata)


# grpc.aio files an interceptor under the FIRST interceptor kind it is an instance of,
# so one class serving both kinds would never see the streaming calls: one per kind.
class _MetadataUnary(_CallMetadata, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details), request)


class _MetadataStream(_CallMetadata, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details), request)


class V03Peer:
    """PeerClient implemented with the a2a-sdk 0.3.26 Client."""

    def __init__(self, url: str, transport: str, tenant: str | None = None,
                 auth: Any = None) -> None:
        self.url = url
        self.transport = transport
        self.tenant = tenant
        self.auth = auth  # _auth_probe.PeerAuth: a credential and the gateway's card
        self.push_list_delete_via = "raw"
        self._unary = self._client(streaming=False)
        self._streaming = self._client(streaming=True)

    def _client(self, *, streaming: bool) -> BaseClient:
        card = AgentCard(
            name="remote",
            description="locally built card",
            url=self.url,
            preferred_transport=self.transport,
            version="0",
            capabilities=AgentCapabilities(streaming=True, push_notifications=True),
            supports_authenticated_extended_card=True,
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            skills=[],
        )
        interceptors: list[Any] = []
        headers: dict[str, str] = {}
        if self.auth is not None:
            # JSON-RPC: the SDK's AuthInterceptor, driven by the gateway card's schemes.
            # REST and gRPC in 0.3.26 run no interceptor: the credential goes in the
            # httpx client's headers / the channel's metadata, as that SDK expects.
            served = AgentCard.model_validate(self.auth.card)
            card.security, card.security_schemes = served.security, served.security_schemes
            interceptors = [AuthInterceptor(self.auth.credential_service())]
            if self.transport == "HTTP+JSON":
                headers = self.auth.headers
        config = ClientConfig(
            streaming=streaming,
            supported_transports=[self.transport],
            httpx_client=httpx.AsyncClient(timeout=30, headers=headers),
            grpc_channel_factory=self._channel,
        )
        # create() is typed as the abstract Client, which lacks close() and the
        # per-call `configuration` argument that BaseClient (what it returns) has.
        return cast("BaseClient", ClientFactory(config).create(card, interceptors=interceptors))

    def _channel(self, target: str) -> grpc.aio.Channel:
        # v0.3 requests have no tenant field: name it in metadata (no effect without one).
        pairs = {"x-a2a-tenant": self.tenant} if self.tenant else {}
        if self.auth is not None:
            pairs.update(self.auth.headers)
        interceptors: list[Any] | None = None
        if pairs:
            interceptors = [_MetadataUnary(pairs), _MetadataStream(pairs)]
        return grpc.aio.insecure_channel(target, interceptors=interceptors)

    async def __aenter__(self) -> V03Peer:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for client in (self._unary, self._streaming):
            with contextlib.suppress(Exception):
                await client.close()

    @staticmethod
    def _message(text: str, task_id: str | None = None, context_id: str | None = None) -> Message:
        return Message(
            role=Role.user,
            message_id=uuid4().hex,
            parts=[Part(root=TextPart(text=text))],
            task_id=task_id,
            context_id=context_id,
        )

    async def send(
        self,
        text: str,
        *,
        blocking: bool = True,
        task_id: str | None = None,
        context_id: str | None = None,
    ) -> dict[str, Any]:
        last: tuple[Task, Any] | Message | None = None
        async for item in self._unary.send_message(
            self._message(text, task_id, context_id),
            configuration=MessageSendConfiguration(blocking=blocking),
        ):
            last = item
        if last is None:
            raise RuntimeError("no response")
        return _result(last if isinstance(last, Message) else last[0])

    async def stream(self, text: str) -> list[dict[str, Any]]:
        return [_event(item) async for item in self._streaming.send_message(self._message(text))]

    async def get_task(self, task_id: str, history_length: int | None = None) -> dict[str, Any]:
        return _task(
            await self._unary.get_task(TaskQueryParams(id=task_id, history_length=history_length))
        )

    async def cancel_task(self, task_id: str) -> dict[str, Any]:
        return _task(await self._unary.cancel_task(TaskIdParams(id=task_id)))

    async def create_push(self, task_id: str, config_id: str, url: str) -> dict[str, Any]:
        config = PushNotificationConfig(
            id=config_id,
            url=url,
            token=PUSH_TOKEN,
            authentication=PushNotificationAuthenticationInfo(
                schemes=[PUSH_SCHEME], credentials=PUSH_CREDENTIALS
            ),
        )
        request = TaskPushNotificationConfig(task_id=task_id, push_notification_config=config)
        return _push(await self._unary.set_task_callback(request))

    async def get_push(self, task_id: str, config_id: str) -> dict[str, Any]:
        params = GetTaskPushNotificationConfigParams(
            id=task_id, push_notification_config_id=config_id
        )
        return _push(await self._unary.get_task_callback(params))

    # The 0.3.26 Client has no push-config list/delete: they are sent raw, in the v0.3
    # wire shape of the transport under test (JSON-RPC, REST `/v1/...`, gRPC a2a.v1).

    async def _raw_jsonrpc(self, request: Any) -> Any:
        """POST a v0.3 JSON-RPC request the 0.3.26 Client cannot send; return its result.

        The body is checked by shape rather than with the SDK's response models: the
        0.3.26 server answers a successful delete with ``{"id", "jsonrpc"}`` and no
        ``result`` member, which DeleteTaskPushNotificationConfigResponse rejects.
        """
        payload = request.model_dump(mode="json", exclude_none=True)
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(self.url, json=payload)
            response.raise_for_status()
        body = response.json()
        if "error" in body:
            raise A2AClientJSONRPCError(JSONRPCErrorResponse.model_validate(body))
        return body.get("result")

    async def _raw_rest(self, method: str, path: str) -> Any:
        """A v0.3 REST call (`/v1/...`, P03 JSON); raises A2AClientHTTPError like the SDK."""
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.request(method, f"{self.url.rstrip('/')}/v1{path}")
        if response.status_code >= 400:
            raise A2AClientHTTPError(
                response.status_code, f"HTTP {response.status_code}: {response.text}"
            )
        return response.json() if response.content.strip() else None

    async def _raw_grpc(self, method: str, request: Any) -> Any:
        async with self._channel(self.url) as channel:
            return await getattr(a2a_pb2_grpc.A2AServiceStub(channel), method)(request)

    async def list_push(self, task_id: str) -> list[dict[str, Any]]:
        if self.transport == "JSONRPC":
            params = ListTaskPushNotificationConfigParams(id=task_id)
            result = await self._raw_jsonrpc(
                ListTaskPushNotificationConfigRequest(id=uuid4().hex, params=params)
            )
            return [_push(TaskPushNotificationConfig.model_validate(c)) for c in result or []]
        if self.transport == "GRPC":
            reply = await self._raw_grpc(
                "ListTaskPushNotificationConfig",
                a2a_pb2.ListTaskPushNotificationConfigRequest(parent=f"tasks/{task_id}"),
            )
            configs = list(reply.configs)
        else:
            body = await self._raw_rest("GET", f"/tasks/{task_id}/pushNotificationConfigs")
            items = body.get("configs", []) if isinstance(body, dict) else body or []
            configs = [
                json_format.ParseDict(c, a2a_pb2.TaskPushNotificationConfig()) for c in items
            ]
        return [_push(FromProto.task_push_notification_config(c)) for c in configs]

    async def delete_push(self, task_id: str, config_id: str) -> None:
        if self.transport == "JSONRPC":
            params = DeleteTaskPushNotificationConfigParams(
                id=task_id, push_notification_config_id=config_id
            )
            await self._raw_jsonrpc(
                DeleteTaskPushNotificationConfigRequest(id=uuid4().hex, params=params)
            )
        elif self.transport == "GRPC":
            name = f"tasks/{task_id}/pushNotificationConfigs/{config_id}"
            await self._raw_grpc(
                "DeleteTaskPushNotificationConfig",
                a2a_pb2.DeleteTaskPushNotificationConfigRequest(name=name),
            )
        else:
            await self._raw_rest("DELETE", f"/tasks/{task_id}/pushNotificationConfigs/{config_id}")

    async def list_tasks(self, context_id: str) -> list[dict[str, Any]]:
        raise Unsupported(_NO_LIST_TASKS)

    async def list_page(self, query: dict[str, Any]) -> dict[str, Any]:
        raise Unsupported(_NO_LIST_TASKS)

    async def subscribe(self, task_id: str) -> AsyncIterator[dict[str, Any]]:
        async for item in self._streaming.resubscribe(TaskIdParams(id=task_id)):
            yield _event(item)

    async def extended_card(self) -> dict[str, Any]:
        card = await self._unary.get_card()
        return {"name": card.name, "skills": [s.id for s in card.skills]}


async def main() -> None:
    args = client_args("a2a-sdk 0.3.26 interop client")
    async with V03Peer(args.url, args.transport, args.tenant) as peer:
        await run_client(args.scenario, peer, args.webhook, describe_error, args.context,
                         args.task)


if __name__ == "__main__":
    asyncio.run(main())
