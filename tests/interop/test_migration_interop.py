"""Migration mode (issue 32) with the official SDKs: a tenant whose primary is an a2a-sdk
0.3.26 agent and whose candidate is a 1.3.0 agent, behind gateway processes. The agents
sign every text they write with their name (`--name`), so each answer says which agent
gave it; the migration's report is read from the gateway's admin API.

- canary: the candidate's share of new conversations, and every later call of a
  conversation (a message, GetTask, CancelTask, a subscription, push configs set and read,
  the push notification itself) at the agent that owns it, for SDK clients of both
  versions, through one gateway and across two replicas that share a Redis;
- shadow: copies of an agent that answers alike agree, and a candidate that words one
  artifact otherwise is reported, with the path of the difference;
- rollback: a candidate that stops mid-run loses its share by itself; new conversations
  fall back to the primary, and only the calls of the candidate's own conversations fail,
  each with the error of its client's dialect.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.migration.sticky import point
from tests.interop.migration_support import (
    CANDIDATE,
    NAMES,
    PRIMARY,
    Agent,
    Gateway,
    RawClient,
    SdkClient,
    context_on,
    hooks_at,
    migrating,
    report,
    signers,
    start_agent,
    start_gateway,
    start_receiver,
)
from tests.support.helpers import redis_server, stop_process
from tests.support.waiting import wait_until, wait_until_sync

TENANT = "travel"
SHARE = 0.3
CONVERSATIONS = 300
# The steps of peers/_owner_scenarios.py's owner_follow whose texts the agent writes.
STEPS = ("get", "answer", "echo", "cancel", "subscribe")
SDK_CLIENTS = [SdkClient("0.3", "JSONRPC"), SdkClient("1.0", "JSONRPC"),
               SdkClient("0.3", "HTTP+JSON"), SdkClient("1.0", "GRPC")]


@dataclass
class Site:
    """The agents, a webhook receiver, and where logs go, for this module."""

    primary: Agent
    candidate: Agent
    webhook: str  # the receiver's base URL
    hooks: Path  # what it received
    logs: Path
    stack: ExitStack


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    logs = tmp_path_factory.mktemp("migration")
    with ExitStack() as stack:
        primary = start_agent(stack, logs, "0.3", PRIMARY)
        candidate = start_agent(stack, logs, "1.0", CANDIDATE)
        webhook, hooks = start_receiver(stack, logs)
        yield Site(primary, candidate, webhook, hooks, logs, stack)


@pytest.fixture(scope="module")
def canary(site: Site) -> Gateway:
    """A gateway whose tenants give 30% of new conversations to the candidate."""
    tenant = migrating(site.primary.url, site.candidate.url, mode="canary",
                       canary={"share": SHARE})
    return start_gateway(site.stack, site.logs, "canary", {TENANT: tenant, "share": tenant})


# ------------------------------------------------------------------------------ canary


async def test_the_candidate_gets_its_share_of_300_new_conversations_and_keeps_them(
        canary: Gateway) -> None:
    """300 new conversations (each contextId named by the client: the share is the same
    on every run), half of them from v0.3 clients and half from v1.0; each one's GetTask
    and next message reach the agent that started it."""
    url = f"{canary.http}/share"
    limit = asyncio.Semaphore(8)

    async def conversation(http: aiohttp.ClientSession, i: int) -> list[dict[str, Any]]:
        client = RawClient(http, url, "0.3" if i % 2 else "1.0")
        async with limit:
            started = await client.send(f"task: {i}", context_id=f"share-{i}")
            return [started, await client.get_task(started["id"]),
                    await client.send("hello", context_id=f"share-{i}")]

    async with aiohttp.ClientSession() as http:
        runs = await asyncio.gather(*(conversation(http, i) for i in range(CONVERSATIONS)))
        shown = await report(http, canary, "share")
    owners = []
    for i, (started, got, follow) in enumerate(runs):
        owner = started["signers"]
        assert len(owner) == 1 and started["state"] == "completed", started
        assert started["texts"] == [f"built {i} [{owner[0]}]"], started
        assert got["id"] == started["id"] and got["signers"] == owner, (got, started)
        assert follow["texts"] == [f"echo: hello [{owner[0]}]"], (follow, started)
        owners.append(owner[0])
    candidates = owners.count(CANDIDATE)
    assert 0.22 <= candidates / CONVERSATIONS <= 0.38, candidates
    # The gateway's choice is the stable hash of tenant and contextId against the share.
    assert [o == CANDIDATE for o in owners] == [
        point("share", f"share-{i}") < SHARE for i in range(CONVERSATIONS)]
    arms = shown["arms"]
    assert (arms["candidate"]["calls"], arms["primary"]["calls"]) == (
        3 * candidates, 3 * (CONVERSATIONS - candidates)), arms
    assert arms["candidate"]["errors"] == arms["primary"]["errors"] == 0, arms
    assert shown["share"] == shown["configured_share"] == SHARE


def _assert_owned(start: dict[str, Any], follow: dict[str, Any], owner: str,
                  webhook: str) -> None:
    """An owner_start and owner_follow run whose every step ``owner`` answered."""
    assert start["state"] == "input-required", start
    assert start["statusText"] == f"From where? [{owner}]", start
    assert signers(follow) == {step: {owner} for step in STEPS}, follow
    assert follow["answer"] == {"state": "completed", "statusText": None,
                                "texts": [f"trip from Paris [{owner}]"]}, follow
    assert follow["cancel"]["canceled"]["state"] == follow["cancel"]["got"]["state"] \
        == "canceled", follow
    assert follow["subscribe"]["states"][-1] == "completed", follow
    assert follow["subscribe"]["texts"], follow  # the chunks after it subscribed
    for step in ("pushCreated", "pushGot"):
        assert (follow[step]["id"], follow[step]["url"]) == ("owner-cfg", webhook), follow


def _assert_notified(hooks: Path, path: str, owner: str) -> None:
    """The owner's push notification of the completed answer reached the client's
    webhook (relayed or not), and nothing of the other agent did."""
    done = f"trip from Paris [{owner}]"
    bodies = wait_until_sync(lambda: [h["text"] for h in hooks_at(hooks, path)
                                      if done in h["text"]],
                             f"the push notification at {path}", timeout=20)
    other = CANDIDATE if owner == PRIMARY else PRIMARY
    assert all(f"[{other}]" not in h["text"] for h in hooks_at(hooks, path)), bodies


@pytest.mark.parametrize("arm", ["primary", "candidate"])
@pytest.mark.parametrize("client", SDK_CLIENTS, ids=lambda c: f"{c.version}-{c.transport}")
def test_every_later_call_of_a_conversation_reaches_its_owner(
        site: Site, canary: Gateway, client: SdkClient, arm: str) -> None:
    """An SDK client opens a conversation the canary gives to ``arm`` (its contextId
    chosen so), then carries it on: GetTask, a push config set and read back, the answer
    (notified to its webhook), a message, a second task cancelled, a third subscribed to."""
    context = context_on(TENANT, arm, SHARE, f"{client.version}-{client.transport}-{arm}"
                                             f"-{uuid.uuid4().hex[:8]}")
    start = client.run(canary, TENANT, "owner_start", context=context)
    assert start["contextId"] == context, start
    path = f"/hook/{context}"
    follow = client.run(canary, TENANT, "owner_follow", context=context, task=start["id"],
                        webhook=site.webhook + path)
    _assert_owned(start, follow, NAMES[arm], site.webhook + path)
    _assert_notified(site.hooks, path, NAMES[arm])


# ----------------------------------------------------------------------------- replicas


@pytest.fixture(scope="module")
def replicas(site: Site) -> Iterator[tuple[Gateway, Gateway]]:
    """Two gateway replicas of one config on one Redis."""
    tenant = migrating(site.primary.url, site.candidate.url, mode="canary",
                       canary={"share": SHARE})
    with redis_server() as redis_url, ExitStack() as stack:
        state = {"backend": "redis", "url": redis_url,
                 "key_prefix": f"mig-{uuid.uuid4().hex[:8]}:"}
        yield tuple(start_gateway(stack, site.logs, f"replica-{name}", {TENANT: tenant},
                                  state=state) for name in "ab")  # type: ignore[misc]


async def test_conversations_started_through_one_replica_go_on_through_the_other(
        site: Site, replicas: tuple[Gateway, Gateway]) -> None:
    """New conversations through replica A with no contextId of the client's: the canary
    decides by the request, so only the owner A bound in the store tells replica B where
    each one's task and conversation are. Raw clients of both versions carry 40 of them on
    through B, SDK clients two more (one of each agent's)."""
    a, b = replicas
    async with aiohttp.ClientSession() as http:
        started = []
        for i in range(40):
            version = "0.3" if i % 2 else "1.0"
            opened = await RawClient(http, f"{a.http}/{TENANT}", version).send("input: trip")
            assert opened["state"] == "input-required", opened
            started.append((version, opened))
        owners = {s["signers"][0] for _, s in started}
        assert owners == {PRIMARY, CANDIDATE}, owners  # all the primary's: 0.7 ** 40
        kept = {}  # one conversation of each agent's, for the SDK clients
        for version, opened in started:
            owner = opened["signers"]
            if owner[0] not in kept:
                kept[owner[0]] = opened
                continue
            through_b = RawClient(http, f"{b.http}/{TENANT}", version)
            got = await through_b.get_task(opened["id"])
            assert got["signers"] == owner and got["state"] == "input-required", got
            answer = await through_b.send("Rome", task_id=opened["id"],
                                          context_id=opened["contextId"])
            assert answer["texts"] == [f"trip from Rome [{owner[0]}]"], (answer, opened)
            again = await through_b.send("hello", context_id=opened["contextId"])
            assert again["texts"] == [f"echo: hello [{owner[0]}]"], (again, opened)
    for owner, opened in kept.items():
        client = SDK_CLIENTS[0] if owner == PRIMARY else SDK_CLIENTS[1]
        path = f"/hook/replicas-{opened['contextId']}"
        follow = client.run(b, TENANT, "owner_follow", context=opened["contextId"],
                            task=opened["id"], webhook=site.webhook + path)
        _assert_owned({"state": opened["state"], "statusText": opened["texts"][0]}, follow,
                      owner, site.webhook + path)
        _assert_notified(site.hooks, path, owner)


# ------------------------------------------------------------------------------- shadow


@pytest.fixture(scope="module")
def shadowing(site: Site) -> Gateway:
    """Agents that sign nothing: a 0.3.26 primary; a 1.3.0 candidate that answers alike
    (tenant `same`), and one whose `task:` result text differs (tenant `variant`). Copies
    of SendMessage and GetTask, each also made again to the primary (A/A)."""
    primary = start_agent(site.stack, site.logs, "0.3")
    alike = start_agent(site.stack, site.logs, "1.0")
    variant = start_agent(site.stack, site.logs, "1.0", variant="artifact-text")
    shadow = {"operations": ["SendMessage", "GetTask"], "aa": True}
    return start_gateway(site.stack, site.logs, "shadow", {
        "same": migrating(primary.url, alike.url, mode="shadow", shadow=shadow),
        "variant": migrating(primary.url, variant.url, mode="shadow", shadow=shadow)})


# Each client's scenarios and the comparisons they make: send_message and send_task one
# SendMessage each, get_task a SendMessage and a GetTask, multi_turn two SendMessages.
SHADOWED = ("send_message", "send_task", "get_task", "multi_turn")
COPIES = 6


async def _compared(gateway: Gateway, tenant: str, count: int) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http:
        async def done() -> dict[str, Any]:
            shown = await report(http, gateway, tenant)
            return shown if shown["shadow"]["compared"] >= count else {}

        return await wait_until(done, f"{count} shadow comparisons of {tenant}", timeout=30)


@pytest.mark.parametrize("tenant", ["same", "variant"])
async def test_shadow_copies_are_compared_by_meaning(shadowing: Gateway, tenant: str) -> None:
    clients = SDK_CLIENTS[:2]  # 0.3 and 1.0, JSON-RPC
    for client in clients:
        for scenario in SHADOWED:
            result = await asyncio.to_thread(client.run, shadowing, tenant, scenario)
            assert "error" not in result, (scenario, result)  # the primary answered
    shown = await _compared(shadowing, tenant, COPIES * len(clients))
    shadow = shown["shadow"]
    assert shadow["compared"] == COPIES * len(clients), shadow
    assert (shadow["skipped"], shadow["failed"], shadow["noise_by_kind"]) == (0, 0, {}), shadow
    if tenant == "same":
        assert shadow["agreed"] == shadow["compared"] and shadow["diffs_by_kind"] == {}, \
            shown["disagreements"][:1]
        assert shown["disagreements"] == []
        return
    # send_task's answer, and get_task's answer and its GetTask, of each client.
    differing = 3 * len(clients)
    assert shadow["diffs_by_kind"] == {"text": differing}, shadow
    assert shadow["agreed"] == shadow["compared"] - differing, shadow
    assert sorted(d["operation"] for d in shown["disagreements"]) == sorted(
        ["GetTask", "SendMessage", "SendMessage"] * len(clients)), shown["disagreements"]
    for d in shown["disagreements"]:
        assert d["differences"] in ([_reworded("build")], [_reworded("g")]), d


def _reworded(subject: str) -> dict[str, str]:
    """The difference of the variant candidate's `task: <subject>` result."""
    return {"kind": "text", "path": "artifacts[0].parts[0].text",
            "primary": f"built {subject}", "candidate": f"built {subject} (v2)"}


# ----------------------------------------------------------------------------- rollback

ROLLBACK_SHARE = 0.5


def _notified_as(hooks: Path, path: str, version: str, answer: str) -> None:
    """The webhook at ``path`` got the notification of ``answer`` as a client of
    ``version`` expects it: v0.3 a Task (`kind`) with the token header; v1.0 a
    StreamResponse with `Authorization` from the config's authentication."""
    records = wait_until_sync(lambda: [h for h in hooks_at(hooks, path)
                                       if answer in h["text"]],
                              f"the notification of {answer!r} at {path}", timeout=20)
    for record in records:
        headers = {k.lower(): v for k, v in record["headers"].items()}
        assert headers.get("x-a2a-notification-token") == "tok-fb", record
        if version == "0.3":
            assert record["body"]["kind"] == "task", record
        else:
            assert set(record["body"]) & {"task", "statusUpdate", "artifactUpdate"}, record
            assert headers.get("authorization") == "Bearer cred-fb", record


@pytest.fixture
def outage(site: Site) -> Iterator[tuple[Gateway, Agent]]:
    """A canary of its own candidate (the test stops it), rolled back when over 30% of
    the candidate's calls in a minute (6 at least) failed."""
    with ExitStack() as stack:
        candidate = start_agent(stack, site.logs, "1.0", CANDIDATE)
        tenant = migrating(site.primary.url, candidate.url, mode="canary",
                           canary={"share": ROLLBACK_SHARE, "fall_back": True},
                           rollback={"window": 60, "min_calls": 6, "max_error_rate": 0.3})
        yield start_gateway(stack, site.logs, "rollback", {TENANT: tenant}), candidate


def _unavailable(error: dict[str, Any], client: str) -> None:
    """BackendUnavailable as a client of ``client``'s version reads it in JSON-RPC: code
    -32603; its reason in v0.3's free-form data, in v1.0's google.rpc.ErrorInfo."""
    assert error["code"] == -32603, error
    assert error["message"].startswith("the backend is unavailable"), error
    if client == "0.3":
        assert error["data"]["reason"] == "BACKEND_UNAVAILABLE", error
    else:
        [info] = error["data"]
        assert info["reason"] == "BACKEND_UNAVAILABLE", error
        assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo", error


async def test_a_candidate_that_stops_is_rolled_back_and_only_its_own_calls_fail(
        site: Site, outage: tuple[Gateway, Agent]) -> None:
    gateway, candidate = outage
    url = f"{gateway.http}/{TENANT}"
    async with aiohttp.ClientSession() as http:
        raw = {version: RawClient(http, url, version) for version in ("0.3", "1.0")}
        owned: dict[str, list[dict[str, Any]]] = {"primary": [], "candidate": []}
        for arm, conversations in owned.items():  # three of each, by their contextIds
            for i in range(3):
                context = context_on(TENANT, arm, ROLLBACK_SHARE, f"before-{arm}-{i}")
                opened = await raw["1.0"].send("input: trip", context_id=context)
                assert opened["signers"] == [NAMES[arm]], opened
                conversations.append(opened)
        stop_process(candidate.process)  # mid-run

        # A new conversation with its push config, of each version's client, falls back:
        # the primary notifies it in the client's version (the relay decided anew).
        for version, through in raw.items():
            context = context_on(TENANT, "candidate", ROLLBACK_SHARE, f"hook-{version}")
            path = f"/hook/fallback-{version}-{uuid.uuid4().hex[:8]}"
            opened = await through.send("input: hook", context_id=context, webhook={
                "url": site.webhook + path, "token": "tok-fb", "credentials": "cred-fb"})
            assert opened["signers"] == [PRIMARY], opened
            done = await through.send("there", context_id=context, task_id=opened["id"])
            assert done["texts"] == [f"hook from there [{PRIMARY}]"], done
            _notified_as(site.hooks, path, version, f"hook from there [{PRIMARY}]")

        # New conversations that the canary gives the candidate: each falls back to the
        # primary (the candidate refuses the connection: nothing was sent), none fails,
        # until the failures roll the canary back.
        during: list[dict[str, Any]] = []

        async def rolled_back() -> dict[str, Any]:
            context = context_on(TENANT, "candidate", ROLLBACK_SHARE, f"outage-{len(during)}")
            answer = await raw["0.3" if len(during) % 2 else "1.0"].send(
                "task: x", context_id=context)
            during.append(answer)
            assert answer["state"] == "completed" and answer["signers"] == [PRIMARY], answer
            shown = await report(http, gateway, TENANT)
            return shown if shown["share"] == 0 else {}

        # Within the rollback's window (60 s): 3 fallbacks make 50% errors of 6 calls.
        shown: dict[str, Any] = await wait_until(rolled_back, "the automatic rollback",
                                                 timeout=30, interval=0.05)
        [event] = shown["events"]
        assert (event["kind"], event["by"], event["from_share"], event["to_share"]) == (
            "rollback", "automatic", ROLLBACK_SHARE, 0.0), event
        assert event["reason"].startswith("candidate error rate"), event
        assert shown["rollback"]["rolled_back"] is True
        assert shown["configured_share"] == ROLLBACK_SHARE
        fell_back = shown["arms"]["candidate"]["fell_back"]  # the conversations above too
        assert 3 <= fell_back <= len(raw) + len(during), (fell_back, len(during))

        # Rolled back: new conversations are the primary's without trying the candidate.
        for i in range(6):
            answer = await raw["1.0"].send("task: y", context_id=context_on(
                TENANT, "candidate", ROLLBACK_SHARE, f"after-{i}"))
            assert answer["signers"] == [PRIMARY], answer
        after = await report(http, gateway, TENANT)
        assert (after["share"], after["arms"]["candidate"]["fell_back"]) == (0.0, fell_back)

        # The candidate's own conversations fail, in each client's dialect.
        for version, through in raw.items():
            for opened in owned["candidate"]:
                _unavailable((await through.get_task(opened["id"]))["error"], version)
            again = await through.send("hello", context_id=owned["candidate"][0]["contextId"])
            _unavailable(again["error"], version)

    # Through the SDK clients: every call of a candidate's conversation fails as its
    # SDK reads BackendUnavailable; every call of a primary's goes on.
    sdk_error = {"0.3": "A2AClientJSONRPCError", "1.0": "InternalError"}
    for n, client in enumerate(SDK_CLIENTS[:2]):  # JSON-RPC, 0.3 and 1.0
        theirs, ours = owned["candidate"][n], owned["primary"][n]
        follow = client.run(gateway, TENANT, "owner_follow", context=theirs["contextId"],
                            task=theirs["id"])
        assert len(follow) == 7, follow
        for step, result in follow.items():
            error = result["error"]
            assert (error["type"], error["code"]) == (sdk_error[client.version], -32603), \
                (step, error)
            assert error["message"].startswith("the backend is unavailable"), (step, error)
        follow = client.run(gateway, TENANT, "owner_follow", context=ours["contextId"],
                            task=ours["id"])
        assert signers(follow) == {step: {PRIMARY} for step in STEPS}, follow
