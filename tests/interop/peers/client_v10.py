"""A2A protocol v1.0 test client built on the official a2a-sdk 1.3.0 client.

    .venvs/sdk13/bin/python tests/interop/peers/client_v10.py \
        --url URL --transport JSONRPC|HTTP+JSON|GRPC --scenario NAME|all [--webhook URL]

The agent card is built locally from --url/--transport with protocolVersion
"1.0" (never fetched), so ClientFactory picks the v1.0 transports, which send
``A2A-Version: 1.0`` (HTTP header / gRPC metadata). Prints exactly one JSON
object on stdout; see README.md for the shapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any
from uuid import uuid4

import grpc
from _auth_probe import PeerAuth
from _client_common import (
    PUSH_CREDENTIALS,
    PUSH_SCHEME,
    PUSH_TOKEN,
    client_args,
    error_dict,
    file_part,
    plain,
    push_config,
    role_label,
    run_client,
    state_label,
)
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP, A2AError
from google.protobuf import json_format


def _texts(parts: Any) -> list[str]:
    return [p.text for p in parts if p.HasField("text")]


def _first_text(message: Message | None) -> str | None:
    texts = _texts(message.parts) if message is not None else []
    return texts[0] if texts else None


def _state(state: int) -> str:
    return state_label(TaskState.Name(state))


def _part(part: Part) -> dict[str, Any]:
    kind = part.WhichOneof("content")
    if kind == "text":
        return {"text": part.text}
    if kind == "raw":
        return file_part(part.raw, part.media_type, part.filename)
    if kind == "url":
        return {
            "fileUri": part.url,
            "mimeType": part.media_type or None,
            "name": part.filename or None,
        }
    if kind == "data":
        return {"data": plain(json.loads(json_format.MessageToJson(part.data)))}
    return {"unknown": json_format.MessageToDict(part)}


def _task(task: Task) -> dict[str, Any]:
    return {
        "kind": "task",
        "id": task.id,
        "contextId": task.context_id,
        "state": _state(task.status.state),
        "statusText": _first_text(task.status.message) if task.status.HasField("message") else None,
        "artifacts": [
            {"artifactId": a.artifact_id, "name": a.name, "parts": [_part(p) for p in a.parts]}
            for a in task.artifacts
        ],
        "historyTexts": [_first_text(m) for m in task.history],
    }


def _result(response: StreamResponse) -> dict[str, Any]:
    if response.HasField("task"):
        return _task(response.task)
    message = response.message
    return {
        "kind": "message",
        "role": role_label(Role.Name(message.role)),
        "text": _first_text(message),
    }


def _event(response: StreamResponse) -> dict[str, Any]:
    kind = response.WhichOneof("payload")
    if kind == "status_update":
        # v1.0 removed TaskStatusUpdateEvent.final; the stream simply ends.
        return {
            "type": "status",
            "state": _state(response.status_update.status.state),
            "final": None,
        }
    if kind == "artifact_update":
        update = response.artifact_update
        return {
            "type": "artifact",
            "artifactId": update.artifact.artifact_id,
            "text": "".join(_texts(update.artifact.parts)),
            "append": update.append,
            "lastChunk": update.last_chunk,
        }
    if kind == "message":
        return {"type": "message", "text": _first_text(response.message)}
    return {"type": "task", "state": _state(response.task.status.state)}


def _push(config: TaskPushNotificationConfig) -> dict[str, Any]:
    auth = config.authentication
    return push_config(
        config.task_id, config.id, config.url, config.token, auth.scheme, auth.credentials
    )


def describe_error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, A2AError):
        return error_dict(exc, JSON_RPC_ERROR_CODE_MAP.get(type(exc)), exc.message)
    return error_dict(exc, None, str(exc))


class V10Peer:
    """PeerClient implemented with the a2a-sdk 1.3.0 Client."""

    push_list_delete_via: str | None = None

    def __init__(self, url: str, transport: str, tenant: str | None = None,
                 auth: Any = None) -> None:
        self.url = url
        self.transport = transport
        self.tenant = tenant
        self.auth = auth  # _auth_probe.PeerAuth: a credential and the gateway's card
        self._unary = self._client(streaming=False)
        self._streaming = self._client(streaming=True)

    def _client(self, *, streaming: bool) -> Client:
        card = AgentCard(
            name="remote",
            description="locally built card",
            version="0",
            supported_interfaces=[
                AgentInterface(
                    url=self.url,
                    protocol_binding=self.transport,
                    protocol_version=PROTOCOL_VERSION_1_0,
                    tenant=self.tenant or "",  # the SDK copies it into every request
                )
            ],
            capabilities=AgentCapabilities(
                streaming=True, push_notifications=True, extended_agent_card=True
            ),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
        )
        interceptors: list[Any] = []
        if self.auth is not None:
            # The SDK's AuthInterceptor, on every binding, driven by the gateway card's
            # securitySchemes / securityRequirements.
            served = json_format.ParseDict(self.auth.card, AgentCard(),
                                           ignore_unknown_fields=True)
            for name, scheme in served.security_schemes.items():
                card.security_schemes[name].CopyFrom(scheme)
            card.security_requirements.extend(served.security_requirements)
            interceptors = [AuthInterceptor(self.auth.credential_service())]
        config = ClientConfig(
            streaming=streaming,
            supported_protocol_bindings=[self.transport],
            grpc_channel_factory=grpc.aio.insecure_channel,
        )
        return ClientFactory(config).create(card, interceptors=interceptors)

    async def __aenter__(self) -> V10Peer:
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
    def _request(
        text: str,
        *,
        return_immediately: bool = False,
        task_id: str | None = None,
        context_id: str | None = None,
    ) -> SendMessageRequest:
        message = Message(
            role=Role.ROLE_USER,
            message_id=uuid4().hex,
            parts=[Part(text=text)],
            task_id=task_id or "",
            context_id=context_id or "",
        )
        return SendMessageRequest(
            message=message,
            configuration=SendMessageConfiguration(return_immediately=return_immediately),
        )

    async def send(
        self,
        text: str,
        *,
        blocking: bool = True,
        task_id: str | None = None,
        context_id: str | None = None,
    ) -> dict[str, Any]:
        request = self._request(
            text, return_immediately=not blocking, task_id=task_id, context_id=context_id
        )
        responses = [r async for r in self._unary.send_message(request)]
        if not responses:
            raise RuntimeError("no response")
        return _result(responses[-1])

    async def stream(self, text: str) -> list[dict[str, Any]]:
        return [_event(r) async for r in self._streaming.send_message(self._request(text))]

    async def get_task(self, task_id: str, history_length: int | None = None) -> dict[str, Any]:
        request = GetTaskRequest(id=task_id)
        if history_length is not None:
            request.history_length = history_length
        return _task(await self._unary.get_task(request))

    async def cancel_task(self, task_id: str) -> dict[str, Any]:
        return _task(await self._unary.cancel_task(CancelTaskRequest(id=task_id)))

    async def list_tasks(self, context_id: str) -> list[dict[str, Any]]:
        response = await self._unary.list_tasks(ListTasksRequest(context_id=context_id))
        return [_task(t) for t in response.tasks]

    async def list_page(self, query: dict[str, Any]) -> dict[str, Any]:
        request = ListTasksRequest(
            context_id=query.get("contextId", ""), page_token=query.get("pageToken", ""))
        if "status" in query:
            request.status = TaskState.Value(query["status"])
        for name, field in (("pageSize", "page_size"), ("historyLength", "history_length"),
                            ("includeArtifacts", "include_artifacts")):
            if name in query:
                setattr(request, field, query[name])
        if "statusTimestampAfter" in query:
            request.status_timestamp_after.FromSeconds(int(query["statusTimestampAfter"]))
        response = await self._unary.list_tasks(request)
        return {
            "ids": [t.id for t in response.tasks],
            "states": [_state(t.status.state) for t in response.tasks],
            "artifacts": [len(t.artifacts) for t in response.tasks],
            "history": [len(t.history) for t in response.tasks],
            "nextPageToken": response.next_page_token,
            "totalSize": response.total_size,
            "pageSize": response.page_size,
        }

    async def subscribe(self, task_id: str) -> AsyncIterator[dict[str, Any]]:
        async for response in self._streaming.subscribe(SubscribeToTaskRequest(id=task_id)):
            yield _event(response)

    async def create_push(self, task_id: str, config_id: str, url: str) -> dict[str, Any]:
        config = TaskPushNotificationConfig(
            task_id=task_id,
            id=config_id,
            url=url,
            token=PUSH_TOKEN,
            authentication=AuthenticationInfo(scheme=PUSH_SCHEME, credentials=PUSH_CREDENTIALS),
        )
        return _push(await self._unary.create_task_push_notification_config(config))

    async def get_push(self, task_id: str, config_id: str) -> dict[str, Any]:
        request = GetTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)
        return _push(await self._unary.get_task_push_notification_config(request))

    async def list_push(self, task_id: str) -> list[dict[str, Any]]:
        request = ListTaskPushNotificationConfigsRequest(task_id=task_id)
        response = await self._unary.list_task_push_notification_configs(request)
        return [_push(c) for c in response.configs]

    async def delete_push(self, task_id: str, config_id: str) -> None:
        request = DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)
        await self._unary.delete_task_push_notification_config(request)

    async def extended_card(self) -> dict[str, Any]:
        card = await self._unary.get_extended_agent_card(GetExtendedAgentCardRequest())
        return {"name": card.name, "skills": [s.id for s in card.skills]}


async def main() -> None:
    args = client_args("a2a-sdk 1.3.0 interop client")
    auth = None
    if args.api_key:
        request = urllib.request.Request(args.card_url, headers={"A2A-Version": "1.0"})
        with urllib.request.urlopen(request, timeout=10) as resp:
            auth = PeerAuth("apiKey", args.api_key, json.loads(resp.read()))
    async with V10Peer(args.url, args.transport, args.tenant, auth=auth) as peer:
        await run_client(args.scenario, peer, args.webhook, describe_error, args.context,
                         args.task)


if __name__ == "__main__":
    asyncio.run(main())
