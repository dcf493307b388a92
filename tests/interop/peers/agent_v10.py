"""A2A protocol v1.0 test agent built on the official a2a-sdk 1.3.0.

Run with the sdk13 virtualenv:

    .venvs/sdk13/bin/python tests/interop/peers/agent_v10.py \
        --jsonrpc-port P1 [--rest-port P2] [--grpc-port P3]

Pure v1.0 peer: the SDK's v0.3 compatibility layer is NOT mounted on any binding
(JSON-RPC and REST are built with enable_v0_3_compat=False, gRPC registers only
lf.a2a.v1.A2AService). Every binding shares one DefaultRequestHandler (one task
store, one push config store, one push sender). Prints ``READY`` once all
listeners accept connections.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from _peer_common import (
    ANSWER_ARTIFACT_ID,
    BLOB,
    BLOB_MIME,
    BLOB_NAME,
    DATA,
    EXTENDED_SKILL_ID,
    QUESTION,
    RESULT_ARTIFACT_ID,
    SLOW_TIMEOUT_S,
    STREAM_ARTIFACT_ID,
    Voice,
    agent_args,
    grpc_target,
    http_url,
    parse_command,
    run_agent,
    stream_chunk,
    voice_of,
)
from a2a.helpers import (
    new_data_part,
    new_raw_part,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    TaskState,
    a2a_pb2_grpc,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0, TransportProtocol
from starlette.applications import Starlette


def _first_text(message: Message | None) -> str:
    for part in message.parts if message else []:
        if part.HasField("text"):
            return part.text
    return ""


class PeerExecutor(AgentExecutor):
    """The scripted behaviour shared by both peer agents (see README)."""

    def __init__(self, voice: Voice) -> None:
        self._awaiting_input: dict[str, str] = {}  # task id -> subject of `input: X`
        self.voice = voice

    def _note(self, updater: TaskUpdater, text: str) -> Message | None:
        """A status message saying who the agent is, when it has a name (else none)."""
        if not self.voice.name:
            return None
        return updater.new_agent_message([new_text_part(self.voice.says(text))])

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = _first_text(context.message)
        task = context.current_task
        if (
            task is not None
            and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            and task.id in self._awaiting_input
        ):
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            subject = self._awaiting_input.pop(task.id)
            await updater.add_artifact(
                [new_text_part(self.voice.says(f"{subject} from {text}"))],
                artifact_id=ANSWER_ARTIFACT_ID,
                name=ANSWER_ARTIFACT_ID,
            )
            await updater.complete()
            return

        command = parse_command(text)
        if command.kind == "echo":
            reply = new_text_message(
                self.voice.says(f"echo: {text}"), context_id=context.context_id
            )
            await event_queue.enqueue_event(reply)
            return

        if task is None and context.message is not None:
            task = new_task_from_user_message(context.message)
            # The request context owns the ids the SDK already registered.
            task.id = context.task_id or task.id
            task.context_id = context.context_id or task.context_id
            await event_queue.enqueue_event(task)
        assert task is not None
        updater = TaskUpdater(event_queue, task.id, task.context_id)

        if command.kind == "task":
            await updater.add_artifact(
                [
                    new_text_part(self.voice.built(command.arg)),
                    new_raw_part(BLOB, media_type=BLOB_MIME, filename=BLOB_NAME),
                    new_data_part(dict(DATA)),
                ],
                artifact_id=RESULT_ARTIFACT_ID,
                name=RESULT_ARTIFACT_ID,
            )
            await updater.complete()
        elif command.kind == "stream":
            await updater.start_work(self._note(updater, "working"))
            for index in range(command.count):
                await asyncio.sleep(command.interval)
                chunk, append, last = stream_chunk(index, command.count)
                await updater.add_artifact(
                    [new_text_part(self.voice.says(chunk))],
                    artifact_id=STREAM_ARTIFACT_ID,
                    name=STREAM_ARTIFACT_ID,
                    append=append,
                    last_chunk=last,
                )
            await updater.complete()
        elif command.kind == "input":
            self._awaiting_input[task.id] = command.arg
            question = updater.new_agent_message([new_text_part(self.voice.says(QUESTION))])
            await updater.requires_input(question)
        elif command.kind == "slow":
            await updater.start_work(self._note(updater, "working"))
            # The SDK cancels this coroutine when CancelTask arrives.
            await asyncio.sleep(SLOW_TIMEOUT_S)
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.task_id is None or context.context_id is None:
            return
        self._awaiting_input.pop(context.task_id, None)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(self._note(updater, "canceled"))


def build_cards(
    jsonrpc_port: int, rest_port: int | None, grpc_port: int | None
) -> tuple[AgentCard, AgentCard]:
    bindings = [(TransportProtocol.JSONRPC, f"{http_url(jsonrpc_port)}/")]
    if rest_port is not None:
        bindings.append((TransportProtocol.HTTP_JSON, http_url(rest_port)))
    if grpc_port is not None:
        bindings.append((TransportProtocol.GRPC, grpc_target(grpc_port)))
    skill = AgentSkill(
        id="echo", name="Echo", description="Scripted interop behaviour", tags=["test"]
    )
    card = AgentCard(
        name="interop-peer-v10",
        description="a2a-sdk 1.3.0 interop test agent",
        version="1.3.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version=PROTOCOL_VERSION_1_0)
            for binding, url in bindings
        ],
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=True, extended_agent_card=True
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[skill],
    )
    extended = AgentCard()
    extended.CopyFrom(card)
    extended.skills.add(
        id=EXTENDED_SKILL_ID, name="Secret", description="Extended-card only", tags=["test"]
    )
    return card, extended


async def main() -> None:
    args = agent_args("a2a-sdk 1.3.0 interop agent (pure v1.0)")
    card, extended = build_cards(args.jsonrpc_port, args.rest_port, args.grpc_port)

    push_store = InMemoryPushNotificationConfigStore()
    push_client = httpx.AsyncClient(timeout=5)
    handler = DefaultRequestHandler(
        agent_executor=PeerExecutor(voice_of(args)),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=push_store,
        push_sender=BasePushNotificationSender(push_client, push_store),
        extended_agent_card=extended,
    )

    card_routes = create_agent_card_routes(card)
    jsonrpc_routes = create_jsonrpc_routes(handler, "/", enable_v0_3_compat=False)
    http_apps: list[tuple[Any, int]] = [
        (Starlette(routes=[*card_routes, *jsonrpc_routes]), args.jsonrpc_port)
    ]
    if args.rest_port is not None:
        # Card route first: the REST routes end with a catch-all /{tenant} mount.
        rest_routes = create_rest_routes(handler, enable_v0_3_compat=False)
        http_apps.append((Starlette(routes=[*card_routes, *rest_routes]), args.rest_port))

    def register_grpc(server: Any) -> None:
        # Only lf.a2a.v1.A2AService; the compat a2a.v1 servicer is deliberately absent.
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)

    async def shutdown() -> None:
        await handler.aclose()
        await push_client.aclose()

    await run_agent(http_apps, args.grpc_port, register_grpc, on_shutdown=shutdown)


if __name__ == "__main__":
    asyncio.run(main())
