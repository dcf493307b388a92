"""A2A protocol v0.3 test agent built on the official a2a-sdk 0.3.26.

Run with the sdk03 virtualenv:

    .venvs/sdk03/bin/python tests/interop/peers/agent_v03.py \
        --jsonrpc-port P1 [--rest-port P2] [--grpc-port P3]

Every binding shares one DefaultRequestHandler (one task store, one push config
store, one push sender). Prints ``READY`` once all listeners accept connections.
"""

from __future__ import annotations

import asyncio
import base64
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
from a2a.grpc import a2a_pb2_grpc
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
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
    DataPart,
    FilePart,
    FileWithBytes,
    Message,
    Part,
    TaskState,
    TextPart,
    TransportProtocol,
)
from a2a.utils import new_agent_text_message, new_task


def _text(text: str) -> Part:
    return Part(root=TextPart(text=text))


def _first_text(message: Message | None) -> str:
    for part in message.parts if message else []:
        if isinstance(part.root, TextPart):
            return part.root.text
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
        return updater.new_agent_message([_text(self.voice.says(text))])

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = _first_text(context.message)
        task = context.current_task
        if (
            task is not None
            and task.status.state == TaskState.input_required
            and task.id in self._awaiting_input
        ):
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            subject = self._awaiting_input.pop(task.id)
            await updater.add_artifact(
                [_text(self.voice.says(f"{subject} from {text}"))],
                artifact_id=ANSWER_ARTIFACT_ID,
                name=ANSWER_ARTIFACT_ID,
            )
            await updater.complete()
            return

        command = parse_command(text)
        if command.kind == "echo":
            reply = new_agent_text_message(
                self.voice.says(f"echo: {text}"), context_id=context.context_id
            )
            await event_queue.enqueue_event(reply)
            return

        if task is None and context.message is not None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        assert task is not None
        updater = TaskUpdater(event_queue, task.id, task.context_id)

        if command.kind == "task":
            await updater.add_artifact(
                [
                    _text(self.voice.built(command.arg)),
                    Part(
                        root=FilePart(
                            file=FileWithBytes(
                                bytes=base64.b64encode(BLOB).decode("ascii"),
                                mime_type=BLOB_MIME,
                                name=BLOB_NAME,
                            )
                        )
                    ),
                    Part(root=DataPart(data=dict(DATA))),
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
                    [_text(self.voice.says(chunk))],
                    artifact_id=STREAM_ARTIFACT_ID,
                    name=STREAM_ARTIFACT_ID,
                    append=append,
                    last_chunk=last,
                )
            await updater.complete()
        elif command.kind == "input":
            self._awaiting_input[task.id] = command.arg
            # final=True ends this turn's event stream in the 0.3 SDK.
            question = updater.new_agent_message([_text(self.voice.says(QUESTION))])
            await updater.requires_input(question, final=True)
        elif command.kind == "slow":
            await updater.start_work(self._note(updater, "working"))
            # The SDK cancels this coroutine when tasks/cancel arrives.
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
    interfaces = [
        AgentInterface(transport=TransportProtocol.jsonrpc, url=f"{http_url(jsonrpc_port)}/")
    ]
    if rest_port is not None:
        interfaces.append(
            AgentInterface(transport=TransportProtocol.http_json, url=http_url(rest_port))
        )
    if grpc_port is not None:
        interfaces.append(
            AgentInterface(transport=TransportProtocol.grpc, url=grpc_target(grpc_port))
        )
    skill = AgentSkill(
        id="echo", name="Echo", description="Scripted interop behaviour", tags=["test"]
    )
    card = AgentCard(
        name="interop-peer-v03",
        description="a2a-sdk 0.3.26 interop test agent",
        url=interfaces[0].url,
        preferred_transport=TransportProtocol.jsonrpc,
        additional_interfaces=interfaces,
        version="0.3.26",
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        supports_authenticated_extended_card=True,
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[skill],
    )
    secret = AgentSkill(
        id=EXTENDED_SKILL_ID, name="Secret", description="Extended-card only", tags=["test"]
    )
    extended = card.model_copy(update={"skills": [skill, secret]})
    return card, extended


async def main() -> None:
    args = agent_args("a2a-sdk 0.3.26 interop agent")
    card, extended = build_cards(args.jsonrpc_port, args.rest_port, args.grpc_port)

    push_store = InMemoryPushNotificationConfigStore()
    push_client = httpx.AsyncClient(timeout=5)
    handler = DefaultRequestHandler(
        agent_executor=PeerExecutor(voice_of(args)),
        task_store=InMemoryTaskStore(),
        push_config_store=push_store,
        push_sender=BasePushNotificationSender(push_client, push_store),
    )

    http_apps: list[tuple[Any, int]] = [
        (
            A2AStarletteApplication(
                agent_card=card, http_handler=handler, extended_agent_card=extended
            ).build(rpc_url="/"),
            args.jsonrpc_port,
        )
    ]
    if args.rest_port is not None:
        rest = A2ARESTFastAPIApplication(
            agent_card=card, http_handler=handler, extended_agent_card=extended
        )
        http_apps.append((rest.build(), args.rest_port))

    def register_grpc(server: Any) -> None:
        # 0.3.26's GrpcHandler has no extended-card parameter: GetAgentCard returns
        # the card it was given, so hand it the extended card (same capabilities).
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(extended, handler), server)

    await run_agent(http_apps, args.grpc_port, register_grpc, on_shutdown=push_client.aclose)


if __name__ == "__main__":
    asyncio.run(main())
