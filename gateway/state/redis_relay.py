"""The push relay's queue in the Redis store (the contract: gateway/state/relay_queue.py).

Every step is one Lua script (atomic on the server, which also gives the clock: replicas
agree on what is due and when a lease ends). The keys all carry one hash tag, ``{rq}``,
so they would live in one slot of a Redis Cluster (the scripts name keys they derive,
which a cluster allows within one slot):

- ``<prefix>rq:{rq}:seq`` the last delivery id (ids order a lane, never reused);
- ``…:i:<id>`` a delivery, a hash (fields: :data:`FIELDS`, times in ms);
- ``…:l:<lane>`` a lane's delivery ids, oldest first;
- ``…:ready`` a sorted set of each lane's *oldest* delivery, scored by when it may be
  claimed (due, or its lease's end): claiming reads its front;
- ``…:t:<tenant>`` how many deliveries the tenant has waiting;
- ``…:w:<webhook id>`` a webhook id queued within the replay window (expires);
- ``…:x:<tenant>:<webhook id>`` a dead letter (a hash, expires) and ``…:d:<tenant>`` the
  tenant's dead letters by time of death (members of expired ones are dropped on read).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from gateway.state.relay_queue import (
    DeadLetter,
    Enqueued,
    NewDelivery,
    QueuedDelivery,
    RelayQueueLimits,
)

FIELDS = ("tenant", "lane", "wid", "sealed", "task", "body", "hb", "event", "dropped",
          "trace", "attempts", "status", "error")

_COMMON = """
local b = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local FIELDS = {'tenant', 'lane', 'wid', 'sealed', 'task', 'body', 'hb', 'event',
                'dropped', 'trace', 'attempts', 'status', 'error'}
-- A delivery leaves the queue: its lane's next one (if any) becomes claimable.
local function leave(id)
  local h = redis.call('HMGET', b .. 'i:' .. id, 'lane', 'tenant')
  if not h[1] then return end
  redis.call('DEL', b .. 'i:' .. id)
  redis.call('ZREM', b .. 'ready', id)
  redis.call('LREM', b .. 'l:' .. h[1], 1, id)
  redis.call('DECR', b .. 't:' .. h[2])
  local nxt = redis.call('LINDEX', b .. 'l:' .. h[1], 0)
  if nxt then
    local d = redis.call('HMGET', b .. 'i:' .. nxt, 'due', 'lease')
    redis.call('ZADD', b .. 'ready', math.max(tonumber(d[1]), tonumber(d[2])), nxt)
  end
end
-- A new delivery at its lane's end, due now.
local function push(fields)
  local id = redis.call('INCR', b .. 'seq')
  redis.call('HSET', b .. 'i:' .. id, unpack(fields))
  redis.call('HSET', b .. 'i:' .. id, 'attempts', 0, 'status', 0, 'error', '', 'due', now,
             'lease', 0)
  redis.call('INCR', b .. 't:' .. fields[2])
  local lane = redis.call('HGET', b .. 'i:' .. id, 'lane')
  if redis.call('RPUSH', b .. 'l:' .. lane, id) == 1 then
    redis.call('ZADD', b .. 'ready', now, id)
  end
end
"""

# ARGV: base, max per tenant, dedupe ttl (ms), then the item's fields as name, value.
ENQUEUE = _COMMON + """
local max, ttl = tonumber(ARGV[2]), tonumber(ARGV[3])
local f = {}
for i = 4, #ARGV do f[#f + 1] = ARGV[i] end
local item = {}
for i = 1, #f, 2 do item[f[i]] = f[i + 1] end
-- 'duplicate' and 'coalesced' stand for a delivery an earlier call queued, perhaps
-- one refused for want of replicas: each writes (the same value again), so the WAIT after
-- it covers that delivery too. (WAIT waits for this connection's last write; a script that
-- wrote nothing would leave it at whatever the pooled connection wrote last.)
local wkey = b .. 'w:' .. item.wid
if redis.call('EXISTS', wkey) == 1 then
  redis.call('SET', wkey, '1', 'KEEPTTL')
  return 'duplicate'
end
if item.hb == '0' then
  local last = redis.call('LINDEX', b .. 'l:' .. item.lane, -1)
  if last then
    local h = redis.call('HMGET', b .. 'i:' .. last, 'hb', 'attempts', 'lease')
    if h[1] == '0' and h[2] == '0' and tonumber(h[3]) <= now then
      redis.call('HSET', b .. 'i:' .. last, 'hb', '0')
      return 'coalesced'
    end
  end
end
if tonumber(redis.call('GET', b .. 't:' .. item.tenant) or '0') >= max then return 'full' end
redis.call('SET', wkey, '1', 'PX', ttl)
push(f)
return 'queued'
"""

# ARGV: base, limit, lease (ms), then lanes to skip. Returns id then FIELDS, per delivery.
CLAIM = _COMMON + """
local limit, lease = tonumber(ARGV[2]), tonumber(ARGV[3])
local skip = {}
for i = 4, #ARGV do skip[ARGV[i]] = true end
local out, n = {}, 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', b .. 'ready', '-inf', now, 'LIMIT', 0,
                                limit + #ARGV - 3)) do
  if n >= limit then break end
  local row = redis.call('HMGET', b .. 'i:' .. id, unpack(FIELDS))
  if row[1] and not skip[row[2]] then
    redis.call('HSET', b .. 'i:' .. id, 'lease', now + lease)
    redis.call('ZADD', b .. 'ready', now + lease, id)
    out[#out + 1] = id
    for _, v in ipairs(row) do out[#out + 1] = v end
    n = n + 1
  end
end
return out
"""

# ARGV: base. Seconds until the first claimable delivery ("" when none).
NEXT_DUE = _COMMON + """
local first = redis.call('ZRANGE', b .. 'ready', 0, 0, 'WITHSCORES')
if #first == 0 then return '' end
return tostring(math.max(0, tonumber(first[2]) - now) / 1000)
"""

# ARGV: base, id.
DONE = _COMMON + "leave(ARGV[2])\nreturn 1\n"

# ARGV: base, then ids.
RELEASE = _COMMON + """
for i = 2, #ARGV do
  local key = b .. 'i:' .. ARGV[i]
  local due = redis.call('HGET', key, 'due')
  if due then
    redis.call('HSET', key, 'lease', 0)
    redis.call('ZADD', b .. 'ready', tonumber(due), ARGV[i])
  end
end
return 1
"""

# ARGV: base, id, delay (ms), status, error, has body ("1": set it), body.
RETRY = _COMMON + """
local key = b .. 'i:' .. ARGV[2]
if redis.call('EXISTS', key) == 0 then return 0 end
local due = now + tonumber(ARGV[3])
redis.call('HINCRBY', key, 'attempts', 1)
redis.call('HSET', key, 'status', ARGV[4], 'error', ARGV[5], 'due', due, 'lease', 0)
if ARGV[6] == '1' then redis.call('HSET', key, 'body', ARGV[7], 'hb', '1') end
redis.call('ZADD', b .. 'ready', due, ARGV[2])
return 1
"""

# ARGV: base, id, delay (ms). Unattempted: the attempts stay as they are.
POSTPONE = _COMMON + """
local key = b .. 'i:' .. ARGV[2]
if redis.call('EXISTS', key) == 0 then return 0 end
local due = now + tonumber(ARGV[3])
redis.call('HSET', key, 'due', due, 'lease', 0)
redis.call('ZADD', b .. 'ready', due, ARGV[2])
return 1
"""

# ARGV: base, id, status, error, has body, body, ttl (ms).
BURY = _COMMON + """
local key = b .. 'i:' .. ARGV[2]
local h = redis.call('HMGET', key, 'tenant', 'wid')
if not h[1] then return 0 end
local dead = b .. 'x:' .. h[1] .. ':' .. h[2]
redis.call('DEL', dead)
redis.call('HSET', dead, unpack(redis.call('HGETALL', key)))
redis.call('HINCRBY', dead, 'attempts', 1)
redis.call('HSET', dead, 'status', ARGV[3], 'error', ARGV[4], 'died', now,
           'expires', now + tonumber(ARGV[7]))
if ARGV[5] == '1' then redis.call('HSET', dead, 'body', ARGV[6], 'hb', '1') end
redis.call('PEXPIRE', dead, tonumber(ARGV[7]))
redis.call('ZADD', b .. 'd:' .. h[1], now, h[2])
leave(ARGV[2])
return 1
"""

# ARGV: base, tenant, limit, webhook id ("": all, newest first). Returns FIELDS, died,
# expires per dead letter.
DEAD = _COMMON + """
local index = b .. 'd:' .. ARGV[2]
local wids = ARGV[4] ~= '' and {ARGV[4]} or
  redis.call('ZREVRANGE', index, 0, tonumber(ARGV[3]) - 1)
local out = {}
for _, wid in ipairs(wids) do
  local row = redis.call('HMGET', b .. 'x:' .. ARGV[2] .. ':' .. wid, unpack(FIELDS))
  if row[1] then
    for _, v in ipairs(row) do out[#out + 1] = v end
    local t = redis.call('HMGET', b .. 'x:' .. ARGV[2] .. ':' .. wid, 'died', 'expires')
    out[#out + 1] = t[1]
    out[#out + 1] = t[2]
  else
    redis.call('ZREM', index, wid)  -- expired
  end
end
return out
"""

# ARGV: base, tenant, webhook id, "replay" or "drop". 1 when there was one.
REVIVE = _COMMON + """
local dead = b .. 'x:' .. ARGV[2] .. ':' .. ARGV[3]
if redis.call('EXISTS', dead) == 0 then return 0 end
if ARGV[4] == 'replay' then
  local row = redis.call('HMGET', dead, unpack(FIELDS))
  local f = {}
  for i = 1, 10 do f[#f + 1] = FIELDS[i]; f[#f + 1] = row[i] end
  push(f)
end
redis.call('DEL', dead)
redis.call('ZREM', b .. 'd:' .. ARGV[2], ARGV[3])
return 1
"""

# The steps whose write is acknowledged, so followed by WAIT replica_acks (docs/state.md,
# "No loss of acknowledged writes"): a queued delivery (the agent's 202), a delivery done
# or dead (lost, it would be sent again or its dead letter missing), a dead letter
# replayed or dropped (the operator's command). Claims, releases and retries are not: one
# lost in a failover gives a delivery back to the queue sooner, at-least-once still.
ACKNOWLEDGED = frozenset({"enqueue", "done", "bury", "revive"})

SCRIPTS = {"enqueue": ENQUEUE, "claim": CLAIM, "next_due": NEXT_DUE, "done": DONE,
           "release": RELEASE, "postpone": POSTPONE, "retry": RETRY, "bury": BURY,
           "dead": DEAD, "revive": REVIVE}


def _ms(seconds: float) -> int:
    return max(0, math.ceil(seconds * 1000))


def _text(value: bytes | None) -> str:
    return "" if value is None else value.decode()


def _item(row: Sequence[bytes | None]) -> tuple[NewDelivery, int, int, str]:
    """A delivery's FIELDS (as bytes) → the item, attempts, last status, last error."""
    has_body = row[6] == b"1"
    item = NewDelivery(tenant=_text(row[0]), lane=_text(row[1]), webhook_id=_text(row[2]),
                       sealed=_text(row[3]), task_id=_text(row[4]),
                       body=(row[5] or b"") if has_body else None, event=row[7] or b"",
                       dropped=_text(row[8]), trace=_text(row[9]))
    return item, int(row[10] or 0), int(row[11] or 0), _text(row[12])


# A script runner: (script name, ARGV after the base) → its reply, bytes undecoded.
Eval = Callable[[str, list[Any]], Awaitable[Any]]


class RedisRelayQueue:
    """RelayQueueStore for RedisStore, which supplies :meth:`_relay_eval`."""

    async def _relay_eval(self, script: str, args: list[Any]) -> Any:
        raise NotImplementedError  # RedisStore: SCRIPTS[script] with the base first

    async def relay_enqueue(self, item: NewDelivery, limits: RelayQueueLimits) -> Enqueued:
        fields: list[Any] = [
            "tenant", item.tenant, "lane", item.lane, "wid", item.webhook_id,
            "sealed", item.sealed, "task", item.task_id, "body", item.body or b"",
            "hb", "0" if item.body is None else "1", "event", item.event,
            "dropped", item.dropped, "trace", item.trace]
        out = await self._relay_eval("enqueue", [limits.max_per_tenant,
                                                 _ms(limits.dedupe_ttl), *fields])
        return _text(out)  # type: ignore[return-value]

    async def relay_claim(self, limit: int, lease: float,
                          exclude: frozenset[str]) -> list[QueuedDelivery]:
        out = await self._relay_eval("claim", [limit, _ms(lease), *sorted(exclude)])
        width = 1 + len(FIELDS)
        claimed = []
        for at in range(0, len(out), width):
            item, attempts, status, error = _item(out[at + 1:at + width])
            claimed.append(QueuedDelivery(int(out[at]), item, attempts, status, error))
        return claimed

    async def relay_next_due(self) -> float | None:
        out = _text(await self._relay_eval("next_due", []))
        return float(out) if out else None

    async def relay_done(self, delivery_id: int) -> None:
        await self._relay_eval("done", [delivery_id])

    async def relay_release(self, delivery_ids: list[int]) -> None:
        if delivery_ids:
            await self._relay_eval("release", list(delivery_ids))

    async def relay_postpone(self, delivery_id: int, delay: float) -> None:
        await self._relay_eval("postpone", [delivery_id, _ms(delay)])

    async def relay_retry(self, delivery_id: int, delay: float, status: int, error: str,
                          body: bytes | None) -> None:
        await self._relay_eval("retry", [delivery_id, _ms(delay), status, error,
                                         "0" if body is None else "1", body or b""])

    async def relay_bury(self, delivery_id: int, status: int, error: str,
                         body: bytes | None, ttl: float) -> None:
        await self._relay_eval("bury", [delivery_id, status, error,
                                        "0" if body is None else "1", body or b"",
                                        _ms(ttl)])

    async def _dead(self, tenant: str, limit: int, webhook_id: str) -> list[DeadLetter]:
        out = await self._relay_eval("dead", [tenant, limit, webhook_id])
        width = len(FIELDS) + 2
        letters = []
        for at in range(0, len(out), width):
            item, attempts, status, error = _item(out[at:at + len(FIELDS)])
            letters.append(DeadLetter(QueuedDelivery(0, item, attempts, status, error),
                                      int(out[at + width - 2]) / 1000,
                                      int(out[at + width - 1]) / 1000))
        return letters

    async def relay_dead(self, tenant: str, limit: int) -> list[DeadLetter]:
        return await self._dead(tenant, limit, "")

    async def relay_dead_get(self, tenant: str, webhook_id: str) -> DeadLetter | None:
        found = await self._dead(tenant, 1, webhook_id) if webhook_id else []
        return found[0] if found else None

    async def relay_replay(self, tenant: str, webhook_id: str) -> bool:
        return bool(int(await self._relay_eval("revive", [tenant, webhook_id, "replay"])))

    async def relay_drop(self, tenant: str, webhook_id: str) -> bool:
        return bool(int(await self._relay_eval("revive", [tenant, webhook_id, "drop"])))
