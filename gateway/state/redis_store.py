"""The Redis store, for replicas: every gateway pointed at one Redis (and key prefix)
shares the task index, the relay's replay and spent-seal facts and the rate-limit
buckets. Steps over several keys run as Lua scripts (gateway/state/redis_lua.py), so they
are atomic; the token bucket uses the Redis server's clock, so replicas agree on it."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any

import structlog
from redis.client import NEVER_DECODE
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError, RedisError

from gateway.config.state import RetentionConfig, redact_url
from gateway.state.base import (
    KeptOwner,
    StoreError,
    TaskPage,
    TaskQuery,
    TaskRecord,
    clamp_page_size,
    decode_token,
    encode_token,
)
from gateway.state.journal import JournalEntry, JournalLimits, JournalRead, JournalSize
from gateway.state.journal_common import event_digest, held_first
from gateway.state.redis_client import (
    Connected,
    connect_url,
    describe_error,
    through_failover,
)
from gateway.state.redis_journal import APPEND, READ, journal_keys
from gateway.state.redis_lua import (
    CLAIM,
    CLAIM_ALL,
    DELETE,
    LIST_SCAN,
    LIST_UNION,
    SWAP,
    TAKE,
    UPSERT,
    UPSERT_MANY,
)
from gateway.state.redis_relay import ACKNOWLEDGED as RELAY_ACKNOWLEDGED
from gateway.state.redis_relay import SCRIPTS as RELAY_SCRIPTS
from gateway.state.redis_relay import RedisRelayQueue
from translators.json_text import dump_bytes

_BATCH = 500

log = structlog.get_logger("a2a_gateway.state")


# The longest expiry written (a century): Redis refuses one past its clock's range.
_MAX_MS = 100 * 366 * 24 * 3600 * 1000


def _ms(seconds: float) -> int:
    return max(1, min(_MAX_MS, math.ceil(min(seconds, _MAX_MS / 1000) * 1000)))


class RedisStore(RedisRelayQueue):
    backend = "redis"

    def __init__(self, url: str | Connected, key_prefix: str = "a2a-gateway:",
                 retention: RetentionConfig | None = None, *, password: str | None = None,
                 timeout: float = 2.0, max_connections: int = 64) -> None:
        """``url``: a Redis URL, or a client made by gateway/state/redis_client.py (a
        Sentinel's primary)."""
        self.prefix = key_prefix
        self.retention = retention or RetentionConfig()
        self._conn = url if isinstance(url, Connected) else \
            connect_url(url, redact_url(url), password=password, timeout=timeout,
                        max_connections=max_connections)
        self._redis = self._conn.client
        self._url = self._conn.where
        self._errors = _ErrorLog(self._url)
        self._upsert = self._redis.register_script(UPSERT)
        self._upsert_many = self._redis.register_script(UPSERT_MANY)
        self._list_scan = self._redis.register_script(LIST_SCAN)
        self._list_union = self._redis.register_script(LIST_UNION)
        self._delete = self._redis.register_script(DELETE)
        self._claim = self._redis.register_script(CLAIM)
        self._claim_all = self._redis.register_script(CLAIM_ALL)
        self._swap = self._redis.register_script(SWAP)
        self._take = self._redis.register_script(TAKE)
        self._journal_append = self._redis.register_script(APPEND)
        self._journal_read = self._redis.register_script(READ)
        # The relay queue (gateway/state/redis_relay.py), its keys under one hash tag.
        self._relay = {name: self._redis.register_script(text)
                       for name, text in RELAY_SCRIPTS.items()}
        self._relay_base = f"{key_prefix}rq:{{rq}}:"

    async def _do(self, step: Callable[[], Awaitable[Any]], *, failover: bool = True) -> Any:
        """``step()``, through a failover in progress (Sentinel: within
        ``failover_wait``); a Redis error becomes a StoreError."""
        wait = self._conn.failover_wait if failover else 0.0
        try:
            out = await through_failover(step, wait, self._errors.note)
        except RedisError as exc:
            self._errors.note(exc)
            raise StoreError(f"Redis store {self._url}: {describe_error(exc)}") from exc
        if self._errors.failing_since is not None:
            self._errors.recovered()
        return out

    async def _write(self, *command: Any, raw: bool = False, acked: bool = True) -> Any:
        """One write command; when ``acked`` and with ``replica_acks``, followed by WAIT
        on the same connection (one round trip), and failed unless that many replicas
        have it: Redis replicates asynchronously, so a write only the primary holds is
        lost when a replica is promoted. ``raw``: the reply as bytes (the client decodes
        replies as text; a journal entry or a queued body is any bytes)."""
        # redis-py leaves execute_command untyped; NEVER_DECODE is its own option for
        # replies that are not text (DUMP uses it).
        options: dict[str, Any] = {NEVER_DECODE: []} if raw else {}
        acks = self._conn.replica_acks if acked else 0
        if not acks:
            return await self._redis.execute_command(  # type: ignore[no-untyped-call]
                *command, **options)
        pipe = self._redis.pipeline(transaction=False)
        pipe.execute_command(*command, **options)
        pipe.execute_command("WAIT", acks, _ms(self._conn.ack_timeout))
        out, acked_by = await pipe.execute()
        if int(acked_by) < acks:
            raise NotReplicated(f"{acked_by} of {acks} replicas acknowledged the write "
                                f"within {self._conn.ack_timeout} s")
        return out

    async def _script(self, script: AsyncScript, keys: Sequence[str], args: Sequence[Any],
                      *, raw: bool = False, acked: bool = True) -> Any:
        """A Lua script by its digest, as :meth:`_write` makes a command."""
        command = ("EVALSHA", script.sha, len(keys), *keys, *args)
        try:
            return await self._write(*command, raw=raw, acked=acked)
        except NoScriptError:  # a restarted or promoted server: load it, as __call__ does
            script.sha = await self._redis.script_load(script.script)
            return await self._write("EVALSHA", script.sha, *command[2:], raw=raw,
                                     acked=acked)

    # The task index.

    @staticmethod
    def _fields(r: TaskRecord) -> list[str]:
        if ":" in r.tenant:  # keys are prefix + "task:" + tenant + ":" + task id
            raise ValueError(f"tenant {r.tenant!r} may not contain ':'")
        return [r.tenant, r.task_id, r.context_id, r.state, repr(r.created_at),
                repr(r.updated_at), "" if r.owner is None else "@" + r.owner, r.backend,
                r.agent or ""]

    async def record_task(self, record: TaskRecord) -> None:
        args = [self.prefix, *self._fields(record)]
        await self._do(lambda: self._script(self._upsert, [], args))

    async def record_tasks(self, records: Sequence[TaskRecord]) -> None:
        # One script call, one argument for the batch: little to encode and one reply to
        # read, whatever its size (each task is written atomically, the batch in order).
        if records:
            batch = dump_bytes([self._fields(r) for r in records])
            await self._do(lambda: self._script(self._upsert_many, [], [self.prefix, batch]))

    async def get_task(self, tenant: str, task_id: str) -> TaskRecord | None:
        fields = await self._do(lambda: self._redis.hmget(
            f"{self.prefix}task:{tenant}:{task_id}",
            ["t", "i", "c", "s", "ca", "ua", "o", "b", "a"]))
        return None if fields[0] is None else _record(fields)

    async def list_tasks(self, query: TaskQuery, page_size: int | None = None,
                         page_token: str = "") -> TaskPage:
        size = clamp_page_size(page_size)
        cursor = decode_token(page_token)
        idx = f"{self.prefix}idx:{query.tenant}"
        head: list[str | int] = [
            self.prefix, query.tenant,
            "-inf" if query.status_after is None else repr(query.status_after),
            "" if cursor is None else repr(cursor[0]), "" if cursor is None else cursor[1],
            size]
        states = sorted(query.states or ())
        if query.context_id is not None:
            # A context's tasks are few: scan them, checking owner and state.
            owner = "" if query.owner is None else "@" + query.owner
            args = [*head[:2], f"{idx}:c:{query.context_id}", owner, *head[2:], *states]
            out = await self._do(lambda: self._list_scan(args=args))
        else:
            # The tasks of each state (of an owner) are an index of their own.
            mine = "" if query.owner is None else f":o:{query.owner}"
            keys = [f"{idx}:s:{s}{mine}" for s in states] if states else [f"{idx}{mine}"]
            out = await self._do(lambda: self._list_union(args=[*head, *keys]))
        total, more, flat = int(out[0]), int(out[1]), out[2:]
        records = [_record(flat[i:i + 9]) for i in range(0, len(flat), 9)]
        token = encode_token((records[-1].updated_at, records[-1].task_id)) if more else ""
        return TaskPage(records, token, total)

    async def prune(self, older_than: float | None = None,
                    kept: Mapping[str, KeptOwner] | None = None) -> int:
        if older_than is None and self.retention.max_age > 0:
            older_than = time.time() - self.retention.max_age
        everything = self.prefix + "all"
        dropped = 0
        while older_than is not None:
            old = await self._do(partial(self._redis.zrangebyscore, everything, "-inf",
                                         f"({older_than!r}", start=0, num=_BATCH))
            if not old:
                break
            dropped += await self._drop(old, kept)
        max_tasks = self.retention.max_tasks
        while max_tasks > 0:
            excess = int(await self._do(lambda: self._redis.zcard(everything))) - max_tasks
            if excess <= 0:
                break
            old = await self._do(partial(self._redis.zrange, everything, 0,
                                         min(excess, _BATCH) - 1))
            dropped += await self._drop(old, kept)
        return dropped  # relay, bucket and journal keys expire by themselves

    async def _drop(self, members: list[str], kept: Mapping[str, KeptOwner] | None) -> int:
        # Pruning again what a lost write left is harmless: no WAIT for it.
        specs = [field for tenant, owner in (kept or {}).items()
                 for field in (tenant, owner.prefix, owner.value, _ms(owner.ttl),
                               owner.tasks)]
        return int(await self._do(lambda: self._delete(
            args=[self.prefix, len(specs) // 5, *specs, *members])))

    # The relay's replay and spent-seal facts.

    async def seen_once(self, key: str, ttl: float) -> bool:
        done = await self._do(lambda: self._write(
            "SET", f"{self.prefix}seen:{key}", "1", "NX", "PX", _ms(ttl)))
        return bool(done)

    async def claim(self, key: str, value: str, ttl: float) -> str:
        return str(await self._do(lambda: self._script(
            self._claim, [f"{self.prefix}claim:{key}"], [value, _ms(ttl)])))

    async def claim_all(self, items: Sequence[tuple[str, str]], ttl: float) -> list[str]:
        if not items:
            return []
        bound = await self._do(lambda: self._script(
            self._claim_all, [f"{self.prefix}claim:{key}" for key, _ in items],
            [_ms(ttl), *(value for _, value in items)]))
        return [str(v) for v in bound]

    async def claimed(self, key: str) -> str | None:
        value = await self._do(lambda: self._redis.get(f"{self.prefix}claim:{key}"))
        return None if value is None else str(value)

    async def rebind(self, key: str, value: str, ttl: float) -> None:
        await self._do(lambda: self._write("SET", f"{self.prefix}claim:{key}", value,
                                           "PX", _ms(ttl)))

    async def swap(self, key: str, expected: str | None, value: str, ttl: float) -> bool:
        args = ["0", ""] if expected is None else ["1", expected]
        return bool(await self._do(lambda: self._script(
            self._swap, [f"{self.prefix}claim:{key}"], [*args, value, _ms(ttl)])))

    async def mark_spent(self, key: str, ttl: float, after: float = 0.0) -> None:
        at = repr(time.time() + after)
        await self._do(lambda: self._write(
            "SET", f"{self.prefix}spent:{key}", at, "NX", "PX", _ms(after + ttl)))

    async def is_spent(self, key: str) -> bool:
        at = await self._do(lambda: self._redis.get(f"{self.prefix}spent:{key}"))
        return at is not None and time.time() >= float(at)

    # Rate limits.

    async def take_tokens(self, key: str, rate: float, burst: float,
                          cost: float = 1.0) -> tuple[bool, float]:
        # No WAIT and no waiting through a failover: a bucket lost or refused costs a
        # burst at most (auth.rate_limits.on_store_outage says what calls get meanwhile).
        allowed, retry = await self._do(lambda: self._take(
            keys=[f"{self.prefix}bucket:{key}"], args=[repr(rate), repr(burst), repr(cost)]),
            failover=False)
        wait = float(retry)
        return bool(int(allowed)), float("inf") if wait < 0 else wait

    # The stream journal (gateway/state/redis_journal.py); its keys expire by themselves.

    async def journal_append(self, tenant: str, task_id: str, events: Sequence[bytes],
                             terminal: bool, limits: JournalLimits,
                             after: int | None) -> list[int]:
        args: list[Any] = [limits.max_events, limits.max_bytes, _ms(limits.ttl),
                           _ms(limits.idle_ttl), int(terminal), "" if after is None else after]
        for data in events:
            args += [event_digest(data), data]
        keys = journal_keys(self.prefix, tenant, task_id)
        seqs = await self._do(lambda: self._script(self._journal_append, keys, args))
        return [int(seq) for seq in seqs]

    async def journal_read(self, tenant: str, task_id: str, after: int,
                           limit: int) -> JournalRead:
        entries, _, head = journal_keys(self.prefix, tenant, task_id)
        out = await self._do(lambda: self._script(
            self._journal_read, [entries, head], [after, max(0, limit)], raw=True,
            acked=False))
        first, last, data = int(out[0]), int(out[1]), out[3:]
        start = max(after + 1, first)
        return JournalRead([JournalEntry(start + i, d) for i, d in enumerate(data)],
                           held_first(first if first <= last else None, last), last,
                           bool(out[2]))

    async def journal_size(self) -> JournalSize | None:
        return None  # the journals are keys that expire: counting them is a SCAN

    async def _relay_eval(self, script: str, args: list[Any]) -> Any:
        # The queue's acknowledged steps wait for replica_acks as every acknowledged
        # write does (redis_relay.ACKNOWLEDGED says which, and why the others need not).
        return await self._do(lambda: self._script(
            self._relay[script], [], [self._relay_base, *args], raw=True,
            acked=script in RELAY_ACKNOWLEDGED))

    async def ping(self) -> None:
        # One try: /readyz says at once that no primary answers (a failover, an outage).
        await self._do(lambda: self._redis.ping(), failover=False)

    async def close(self) -> None:
        await self._conn.close()


class NotReplicated(RedisError):
    """A write the primary made but fewer than ``replica_acks`` replicas acknowledged in
    time: not acknowledged to the caller (a failover could lose it)."""


class _ErrorLog:
    """Every failed Redis step (or attempt, through a failover) logs its cause (callers
    may answer with a short message of their own), at most once a second; the lines left
    out are counted in the next. The first step that succeeds after failures says so
    once, with how long the store failed (a failover's length, seen from here)."""

    def __init__(self, url: str, every: float = 1.0) -> None:
        self._url = url
        self._every = every
        self._last = -math.inf
        self._left_out = 0
        self.failing_since: float | None = None

    def recovered(self) -> None:
        if self.failing_since is not None:
            log.info("state store available again", store=self._url,
                     failed_for=round(time.monotonic() - self.failing_since, 3))
            self.failing_since = None

    def note(self, exc: Exception) -> None:
        now = time.monotonic()
        if self.failing_since is None:
            self.failing_since = now
        if now - self._last < self._every:
            self._left_out += 1
            return
        log.warning("state store error", store=self._url, error=type(exc).__name__,
                    cause=describe_error(exc), left_out=self._left_out)
        self._last, self._left_out = now, 0


def _record(f: list[Any]) -> TaskRecord:
    owner = f[6] or ""
    return TaskRecord(f[0], f[1], f[2], f[3], float(f[4]), float(f[5]),
                      owner[1:] if owner else None, f[7] or "", f[8] or None)
