"""What the demo agent does with a user message, keyed on its first text part.

- `task: X`   one completed task with a text, a file and a data part
- `stream: N` N artifact chunks 'chunk 0'..'chunk N-1', ~50 ms apart (N defaults to 3)
- `input: X`  asks "From where?" and completes with the follow-up answer
- `slow`      works for 30 s unless canceled
- otherwise   a plain Message reply `echo: <text>`
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass

from gateway.demo.engine import Engine, TaskRecord
from gateway.demo.params import SendParams
from gateway.demo.wire import (
    JSON,
    TERMINAL_STATES,
    agent_message,
    invalid_params,
    new_id,
    text_part,
)

BLOB = b"\x00\x01\x02binary"
DEFAULT_CHUNKS = 3
# Keeps a typo like `stream: 100000` from tying the agent up for hours.
MAX_CHUNKS = 100


@dataclass(frozen=True)
class Timing:
    chunk_interval: float = 0.05
    slow_seconds: float = 30.0


@dataclass(frozen=True)
class Plan:
    skill: str  # "echo", "task", "stream", "input" or "slow"
    text: str
    arg: str = ""
    count: int = DEFAULT_CHUNKS


def first_text(message: JSON) -> str:
    for part in message["parts"]:
        if part["kind"] == "text":
            text: str = part["text"]
            return text
    return ""


def route(text: str) -> Plan:
    keyword, colon, rest = text.strip().partition(":")
    keyword, arg = keyword.strip().lower(), rest.strip()
    if keyword in ("task", "input") and colon:
        return Plan(keyword, text, arg)
    if keyword == "stream":
        return Plan("stream", text, count=_chunk_count(arg))
    if keyword == "slow":
        return Plan("slow", text)
    return Plan("echo", text)


def _chunk_count(arg: str) -> int:
    # Not str.isdigit(): it accepts "²", which int() rejects, and int() also refuses
    # more than 4300 digits. Anything unusable falls back to the default.
    try:
        count = int(arg)
    except ValueError:
        return DEFAULT_CHUNKS
    return min(max(count, 1), MAX_CHUNKS)


def accept(engine: Engine, send: SendParams, timing: Timing) -> JSON | TaskRecord:
    """Act on an incoming message: an echo reply, or the task now working on it.

    The caller must subscribe to the returned task before its next await (see
    Engine.start) if it wants the task's events.
    """
    message = send.message
    if message.get("taskId"):
        return _continue(engine, send)
    plan = route(first_text(message))
    if plan.skill == "echo":
        return agent_message(f"echo: {plan.text}", context_id=message.get("contextId") or new_id())
    record = engine.create_task(message, send.push_config)
    if plan.skill == "task":
        engine.start(record, _build(engine, record, plan.arg))
    elif plan.skill == "stream":
        engine.start(record, _stream(engine, record, plan.count, timing.chunk_interval))
    elif plan.skill == "input":
        record.topic = plan.arg
        engine.start(record, _ask(engine, record))
    else:
        engine.start(record, _slow(engine, record, timing.slow_seconds))
    return record


def _continue(engine: Engine, send: SendParams) -> TaskRecord:
    message = send.message
    record = engine.get(message["taskId"])
    if record.state in TERMINAL_STATES:
        # Same error py@v0.3.26 gives, so the gateway meets what real v0.3 peers send.
        raise invalid_params(f"task {record.id} is in terminal state: {record.state}")
    if record.state != "input-required" or record.topic is None:
        raise invalid_params(f"task {record.id} is not waiting for input (state: {record.state})")
    if message.get("contextId") not in (None, record.task["contextId"]):
        raise invalid_params("message.contextId does not match the task's contextId")
    message["contextId"] = record.task["contextId"]
    record.task["history"].append(message)
    if send.push_config is not None:
        engine.add_push_config(record, send.push_config)
    topic, record.topic = record.topic, None
    engine.set_status(record, "working")
    engine.start(record, _answer(engine, record, topic, first_text(message)))
    return record


async def _build(engine: Engine, record: TaskRecord, what: str) -> None:
    engine.set_status(record, "working")
    artifact = {
        "artifactId": "result",
        "name": "result",
        "parts": [
            text_part(f"built {what}"),
            {
                "kind": "file",
                "file": {
                    "bytes": base64.b64encode(BLOB).decode("ascii"),
                    "name": "blob.bin",
                    "mimeType": "application/octet-stream",
                },
            },
            {"kind": "data", "data": {"k": 1}},
        ],
    }
    engine.add_artifact(record, artifact)
    engine.set_status(record, "completed")


async def _stream(engine: Engine, record: TaskRecord, count: int, interval: float) -> None:
    engine.set_status(record, "working")
    for index in range(count):
        await asyncio.sleep(interval)
        chunk = {"artifactId": "stream", "name": "stream", "parts": [text_part(f"chunk {index}")]}
        engine.add_artifact(record, chunk, append=index > 0, last_chunk=index == count - 1)
    engine.set_status(record, "completed")


async def _ask(engine: Engine, record: TaskRecord) -> None:
    engine.set_status(record, "working")
    engine.set_status(record, "input-required", "From where?")


async def _answer(engine: Engine, record: TaskRecord, topic: str, reply: str) -> None:
    answer = {
        "artifactId": "answer",
        "name": "answer",
        "parts": [text_part(f"{topic} from {reply}")],
    }
    engine.add_artifact(record, answer)
    engine.set_status(record, "completed")


async def _slow(engine: Engine, record: TaskRecord, seconds: float) -> None:
    engine.set_status(record, "working")
    await asyncio.sleep(seconds)
    engine.add_artifact(
        record, {"artifactId": "result", "name": "result", "parts": [text_part("slow work done")]}
    )
    engine.set_status(record, "completed")
