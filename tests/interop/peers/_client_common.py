"""SDK-agnostic client plumbing shared by client_v03.py and client_v10.py.

The scenarios are written once here against the small PeerClient protocol; each
client script implements that protocol with its own SDK and normalizes results
to the same JSON shapes (see README.md). Standard library only.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import sys
import traceback
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from _owner_scenarios import owner_scenarios
from _peer_common import ANSWER_ARTIFACT_ID, STREAM_ARTIFACT_ID

TRANSPORTS = ("JSONRPC", "HTTP+JSON", "GRPC")
DEFAULT_WEBHOOK = "http://127.0.0.1:9/hook"
PUSH_CONFIG_ID = "cfg1"
PUSH_TOKEN = "tok-1"
PUSH_SCHEME = "Bearer"
PUSH_CREDENTIALS = "sekret"
NOT_FOUND_TASK_ID = "no-such-task"
HISTORY_LENGTH = 10
SUBSCRIBE_CHUNKS = 10

SCENARIOS = (
    "send_message",
    "send_task",
    "stream",
    "get_task",
    "cancel",
    "not_found",
    "subscribe_not_found",
    "push_crud",
    "multi_turn",
    "extended_card",
    "push_delivery",
    "list_tasks",
    "subscribe",
)
# Run only when named (not by "all"): ListTasks' v1.0 semantics in depth; one conversation
# carried on across calls (_owner_scenarios.py).
EXTRA_SCENARIOS = ("list_paging", "owner_start", "owner_follow")


def client_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--url", required=True, help="http(s) URL, or host:port for GRPC")
    parser.add_argument("--transport", required=True, choices=TRANSPORTS)
    parser.add_argument("--scenario", required=True,
                        choices=(*SCENARIOS, *EXTRA_SCENARIOS, "all"))
    parser.add_argument("--webhook", default=DEFAULT_WEBHOOK)
    parser.add_argument("--tenant", default=None,
                        help="tenant to name: the v1.0 interface's `tenant`; over GRPC the "
                        "v0.3 client sends it as `x-a2a-tenant` metadata")
    parser.add_argument("--context", default=None,
                        help="the contextId list_tasks and owner_* use (default: a fresh one)")
    parser.add_argument("--task", default=None, help="the task owner_follow carries on")
    parser.add_argument("--api-key", default=None,
                        help="client_v10: authenticate with this API key (the apiKey scheme "
                        "of the card at --card-url drives the SDK's AuthInterceptor)")
    parser.add_argument("--card-url", default=None, help="the gateway's card for --api-key")
    return parser.parse_args()


def state_label(raw: str) -> str:
    """'TASK_STATE_INPUT_REQUIRED' / 'input-required' / 'TASK_STATE_CANCELLED' -> kebab."""
    label = raw.lower().removeprefix("task_state_").replace("_", "-")
    return "canceled" if label == "cancelled" else label


def role_label(raw: str) -> str:
    return raw.lower().removeprefix("role_")


def plain(value: Any) -> Any:
    """JSON-ready copy with integral floats turned back into ints (Struct/Value numbers)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def file_part(raw: bytes, mime: str | None, name: str | None) -> dict[str, Any]:
    return {"fileBytesB64": b64(raw), "mimeType": mime or None, "name": name or None}


def push_config(
    task_id: str | None,
    config_id: str | None,
    url: str | None,
    token: str | None,
    scheme: str | None,
    credentials: str | None,
) -> dict[str, Any]:
    return {
        "taskId": task_id or None,
        "id": config_id or None,
        "url": url or None,
        "token": token or None,
        "scheme": scheme or None,
        "credentials": credentials or None,
    }


def summarize_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    reassembled = "".join(
        e["text"]
        for e in events
        if e["type"] == "artifact" and e["artifactId"] == STREAM_ARTIFACT_ID
    )
    states = [e["state"] for e in events if "state" in e]
    return {
        "events": events,
        "reassembled": reassembled,
        "finalState": states[-1] if states else None,
    }


def error_dict(exc: BaseException, code: int | None, message: str | None) -> dict[str, Any]:
    return {"type": type(exc).__name__, "code": code, "message": message or str(exc)}


ErrorDescriber = Callable[[BaseException], dict[str, Any]]


class Unsupported(Exception):
    """The SDK under test cannot make this call here; reported as {"skipped": reason}."""


class PeerClient(Protocol):
    """What each SDK-specific client exposes to the shared scenarios.

    Task results are normalized dicts: ``{"kind": "task", "id", "contextId",
    "state", "artifacts", "historyTexts", "statusText"}``; messages are
    ``{"kind": "message", "role", "text"}``; push configs come from push_config().
    """

    push_list_delete_via: str | None  # "raw" when list/delete bypass the SDK client

    async def send(
        self,
        text: str,
        *,
        blocking: bool = True,
        task_id: str | None = None,
        context_id: str | None = None,
    ) -> dict[str, Any]: ...

    async def stream(self, text: str) -> list[dict[str, Any]]: ...

    async def get_task(self, task_id: str, history_length: int | None = None) -> dict[str, Any]: ...

    async def list_tasks(self, context_id: str) -> list[dict[str, Any]]: ...

    async def list_page(self, query: dict[str, Any]) -> dict[str, Any]:
        """One ListTasks call; ``query`` in the v1.0 JSON names (`statusTimestampAfter`
        in seconds since the epoch). Returns ids, states, nextPageToken, totalSize,
        pageSize and, per task, how many artifacts and history messages it came with."""
        ...

    def subscribe(self, task_id: str) -> AsyncIterator[dict[str, Any]]: ...

    async def cancel_task(self, task_id: str) -> dict[str, Any]: ...

    async def create_push(self, task_id: str, config_id: str, url: str) -> dict[str, Any]: ...

    async def get_push(self, task_id: str, config_id: str) -> dict[str, Any]: ...

    async def list_push(self, task_id: str) -> list[dict[str, Any]]: ...

    async def delete_push(self, task_id: str, config_id: str) -> None: ...

    async def extended_card(self) -> dict[str, Any]: ...


def _require_task(result: dict[str, Any]) -> dict[str, Any]:
    if result.get("kind") != "task":
        raise RuntimeError(f"expected a task, got {result!r}")
    return result


def _artifact_text(task: dict[str, Any], artifact_id: str) -> str | None:
    for artifact in task["artifacts"]:
        if artifact["artifactId"] == artifact_id:
            return "".join(p["text"] for p in artifact["parts"] if "text" in p)
    return None


def build_scenarios(
    peer: PeerClient, webhook: str, describe_error: ErrorDescriber | None = None,
    context: str | None = None,
    task: str | None = None,
) -> dict[str, Callable[[], Awaitable[Any]]]:
    async def step(call: Callable[[], Awaitable[Any]]) -> Any:
        """One push list/delete call: its result, {"skipped"} or {"error"} (not fatal)."""
        try:
            return await call()
        except Unsupported as exc:
            return {"skipped": str(exc)}
        except Exception as exc:
            if describe_error is None:
                raise
            traceback.print_exc(file=sys.stderr)
            return {"error": describe_error(exc)}

    async def send_message() -> Any:
        return await peer.send("hello")

    async def send_task() -> Any:
        task = _require_task(await peer.send("task: build"))
        keys = ("kind", "id", "contextId", "state", "artifacts")
        return {k: task[k] for k in keys}

    async def stream() -> Any:
        return summarize_stream(await peer.stream("stream: 3"))

    async def get_task() -> Any:
        sent = _require_task(await peer.send("task: g"))
        got = await peer.get_task(sent["id"], HISTORY_LENGTH)
        return {
            "state": got["state"],
            "id": got["id"],
            "historyTexts": got["historyTexts"],
            "artifactTexts": [
                p["text"] for a in got["artifacts"] for p in a["parts"] if "text" in p
            ],
        }

    async def cancel() -> Any:
        sent = _require_task(await peer.send("slow", blocking=False))
        canceled = await peer.cancel_task(sent["id"])
        got = await peer.get_task(sent["id"])
        return {
            "afterSend": sent["state"],
            "afterCancel": canceled["state"],
            "afterGet": got["state"],
        }

    async def not_found() -> Any:
        return {"unexpected": await peer.get_task(NOT_FOUND_TASK_ID)}

    async def subscribe_not_found() -> Any:
        # A streaming method's error before any event (the v0.3 SDK client reads SSE only).
        return {"unexpected": [event async for event in peer.subscribe(NOT_FOUND_TASK_ID)]}

    async def push_crud() -> Any:
        task_id = _require_task(await peer.send("slow", blocking=False))["id"]
        try:
            result: dict[str, Any] = {
                "created": await peer.create_push(task_id, PUSH_CONFIG_ID, webhook),
                "got": await peer.get_push(task_id, PUSH_CONFIG_ID),
            }
            # List and delete are recorded step by step: a peer may serve one and not
            # the other. `deleted` is null on success.
            result["listed"] = await step(lambda: peer.list_push(task_id))
            result["deleted"] = await step(lambda: peer.delete_push(task_id, PUSH_CONFIG_ID))
            result["listedAfterDelete"] = await step(lambda: peer.list_push(task_id))
            if peer.push_list_delete_via:
                via = peer.push_list_delete_via
                result["via"] = {"list": via, "delete": via}
            return result
        finally:
            with contextlib.suppress(Exception):
                await peer.cancel_task(task_id)

    async def multi_turn() -> Any:
        first = _require_task(await peer.send("input: trip"))
        second = _require_task(
            await peer.send("Paris", task_id=first["id"], context_id=first["contextId"])
        )
        return {
            "first": first["state"],
            "question": first["statusText"],
            "second": second["state"],
            "answer": _artifact_text(second, ANSWER_ARTIFACT_ID),
        }

    async def extended_card() -> Any:
        return await peer.extended_card()

    async def push_delivery() -> Any:
        # Not in the CRUD flow: park a task, register the webhook, then finish the
        # task so the agent's own push sender POSTs to --webhook.
        first = _require_task(await peer.send("input: push"))
        created = await peer.create_push(first["id"], PUSH_CONFIG_ID, webhook)
        second = _require_task(
            await peer.send("hook", task_id=first["id"], context_id=first["contextId"])
        )
        return {
            "created": created,
            "second": second["state"],
            "answer": _artifact_text(second, ANSWER_ARTIFACT_ID),
        }

    async def list_tasks() -> Any:
        # Two finished tasks in a fresh context (or --context), then ListTasks filtered by
        # that context.
        context_id = context or uuid.uuid4().hex
        sent = [
            _require_task(await peer.send("task: list", context_id=context_id))["id"]
            for _ in range(2)
        ]
        try:
            listed = await peer.list_tasks(context_id)
        except Unsupported as exc:
            return {"skipped": str(exc)}
        return {
            "sameTasks": sorted(t["id"] for t in listed) == sorted(sent),
            "states": [t["state"] for t in listed],
        }

    async def list_paging() -> Any:
        # Five finished tasks and one working in a fresh context; every page of two, then
        # the filters, historyLength, includeArtifacts and a page token of nobody's.
        context_id = uuid.uuid4().hex
        done = [_require_task(await peer.send(f"task: p{i}", context_id=context_id))["id"]
                for i in range(5)]
        working = _require_task(
            await peer.send("slow", blocking=False, context_id=context_id))["id"]
        scope = {"contextId": context_id}
        try:
            pages = [await peer.list_page({**scope, "pageSize": 2})]
            while pages[-1]["nextPageToken"] and len(pages) < 10:
                pages.append(await peer.list_page(
                    {**scope, "pageSize": 2, "pageToken": pages[-1]["nextPageToken"]}))
            return {
                "done": done, "working": working,
                "pages": [p["ids"] for p in pages],
                "totals": [p["totalSize"] for p in pages],
                "pageSizes": [p["pageSize"] for p in pages],
                "working_only": await peer.list_page({**scope, "status": "TASK_STATE_WORKING"}),
                "with_artifacts": await peer.list_page({
                    **scope, "status": "TASK_STATE_COMPLETED", "includeArtifacts": True,
                    "historyLength": 0}),
                "history_1": await peer.list_page({**scope, "historyLength": 1}),
                "after_future": await peer.list_page({**scope,
                                                      "statusTimestampAfter": 4102444800}),
                "bad_token": await step(lambda: peer.list_page({"pageToken": "nope"})),
            }
        finally:
            with contextlib.suppress(Exception):
                await peer.cancel_task(working)

    async def subscribe() -> Any:
        # A task that works for about half a second (SUBSCRIBE_CHUNKS artifact chunks, 50 ms
        # apart), started without waiting; subscribe to it and read until it completes.
        sent = _require_task(await peer.send(f"stream: {SUBSCRIBE_CHUNKS}", blocking=False))
        events = [event async for event in peer.subscribe(sent["id"])]
        artifacts = [e for e in events if e["type"] == "artifact"]
        statuses = [e for e in events if e["type"] == "status"]
        return {
            "events": events,
            "firstType": events[0]["type"] if events else None,
            "finalState": summarize_stream(events)["finalState"],
            "lastChunk": artifacts[-1]["lastChunk"] if artifacts else None,
            "finalFlags": [s["final"] for s in statuses],
        }

    return {
        "send_message": send_message,
        "send_task": send_task,
        "stream": stream,
        "get_task": get_task,
        "cancel": cancel,
        "not_found": not_found,
        "subscribe_not_found": subscribe_not_found,
        "push_crud": push_crud,
        "multi_turn": multi_turn,
        "extended_card": extended_card,
        "push_delivery": push_delivery,
        "list_tasks": list_tasks,
        "subscribe": subscribe,
        "list_paging": list_paging,
        **owner_scenarios(peer, webhook, step, context, task),
    }


async def run_client(
    scenario: str,
    peer: PeerClient,
    webhook: str,
    describe_error: Callable[[BaseException], dict[str, Any]],
    context: str | None = None,
    task: str | None = None,
) -> None:
    """Run one scenario (or all) and print exactly one JSON object on stdout."""
    scenarios = build_scenarios(peer, webhook, describe_error, context, task)

    async def one(name: str) -> Any:
        try:
            return await asyncio.wait_for(scenarios[name](), timeout=60)
        except Exception as exc:  # errors are data
            traceback.print_exc(file=sys.stderr)
            return {"error": describe_error(exc)}

    if scenario == "all":
        output: Any = {name: await one(name) for name in SCENARIOS}
    else:
        output = await one(scenario)
    sys.stdout.write(json.dumps(output, sort_keys=True) + "\n")
    sys.stdout.flush()
