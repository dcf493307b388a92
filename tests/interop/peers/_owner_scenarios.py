"""Scenarios of one conversation carried on across calls (and maybe gateway replicas), for
migration mode (tests/interop/test_migration_interop.py), where one tenant fronts two
agents and each call must reach the agent that owns its conversation or task.

`owner_start` opens the conversation (`input: trip`, in the contextId `--context`);
`owner_follow` carries it on (`--task`, `--context`) with every kind of follow-up: a
GetTask, a push config set and read back, the answer that completes the task (which the
agent notifies the `--webhook` of), a direct message, a second task in the conversation
cancelled, and a third subscribed to. Each step gives the texts the agent wrote (with
agents started with `--name`, each names the agent that answered) or, when it failed,
`{"error": ...}`, and the next steps still run. Standard library only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

PUSH_CONFIG_ID = "owner-cfg"
SUBSCRIBE_CHUNKS = 10  # ~0.5 s of work: the subscription starts before it ends


class Step(Protocol):
    """_client_common's step(): a call's result, or {"error": ...} when it failed."""

    def __call__(self, call: Callable[[], Awaitable[Any]]) -> Awaitable[Any]: ...


def _said(task: dict[str, Any]) -> dict[str, Any]:
    """What a task answer says: its state, its status message and its artifacts' texts."""
    return {
        "state": task["state"],
        "statusText": task.get("statusText"),
        "texts": [p["text"] for a in task.get("artifacts", []) for p in a["parts"] if "text" in p],
    }


def owner_scenarios(
    peer: Any, webhook: str, step: Step, context: str | None, task: str | None
) -> dict[str, Callable[[], Awaitable[Any]]]:
    async def owner_start() -> Any:
        first = await peer.send("input: trip", context_id=context)
        return {"id": first.get("id"), "contextId": first.get("contextId"), **_said(first)}

    async def owner_follow() -> Any:
        if not (task and context):
            raise RuntimeError("owner_follow needs --task and --context")

        async def answer() -> Any:
            return _said(await peer.send("Paris", task_id=task, context_id=context))

        async def echo() -> Any:
            return (await peer.send("hello", context_id=context)).get("text")

        async def cancel() -> Any:
            sent = await peer.send("slow", blocking=False, context_id=context)
            canceled = await peer.cancel_task(sent["id"])
            return {"canceled": _said(canceled), "got": _said(await peer.get_task(sent["id"]))}

        async def subscribe() -> Any:
            sent = await peer.send(f"stream: {SUBSCRIBE_CHUNKS}", blocking=False,
                                   context_id=context)
            events = [event async for event in peer.subscribe(sent["id"])]
            return {
                "texts": [e["text"] for e in events if e["type"] == "artifact"],
                "states": [e["state"] for e in events if "state" in e],
            }

        return {
            "get": await step(lambda: _after(peer.get_task(task), _said)),
            "pushCreated": await step(lambda: peer.create_push(task, PUSH_CONFIG_ID, webhook)),
            "pushGot": await step(lambda: peer.get_push(task, PUSH_CONFIG_ID)),
            "answer": await step(answer),
            "echo": await step(echo),
            "cancel": await step(cancel),
            "subscribe": await step(subscribe),
        }

    return {"owner_start": owner_start, "owner_follow": owner_follow}


async def _after(call: Awaitable[Any], then: Callable[[Any], Any]) -> Any:
    return then(await call)
