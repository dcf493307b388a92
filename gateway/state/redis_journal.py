"""The stream journal in the Redis store (the contract: gateway/state/journal.py): its key
names and the two Lua scripts that make an append and a read atomic.

A task's journal is three keys, which share one hash tag (so one slot, should they ever
live in a cluster) and one expiry (set on every append):

- ``<prefix>j:{<tag>}:e`` a hash, seq -> the entry's bytes;
- ``<prefix>j:{<tag>}:d`` a sorted set of the entries' digests scored by their seq: the
  seq the same bytes were given, and, by score, the digests trimming drops with their
  entries (a plain hash would not say which digests belong to the oldest entries);
- ``<prefix>j:{<tag>}:h`` the head, a hash: ``n`` next seq, ``f`` oldest seq held,
  ``b`` bytes held, ``t`` "1" once an append said the task was terminal.

The tag is ``<length of tenant>:<tenant>:<task id>``: tenant and task ids are any
strings, and the length says where the tenant ends, so ("a:b", "c") and ("a", "b:c") get
different keys. The held entries are always the dense run of seqs f .. n - 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.client import NEVER_DECODE
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError


def journal_keys(prefix: str, tenant: str, task_id: str) -> tuple[str, str, str]:
    """The entries, digests and head keys of one task's journal."""
    base = f"{prefix}j:{{{len(tenant)}:{tenant}:{task_id}}}:"
    return base + "e", base + "d", base + "h"


# KEYS: entries, digests, head. ARGV: max events, max bytes, ttl and idle ttl (ms),
# terminal ("1" or "0"), then digest and bytes of each event. Returns each event's seq.
APPEND = """
local e, d, h = KEYS[1], KEYS[2], KEYS[3]
local max_events, max_bytes = tonumber(ARGV[1]), tonumber(ARGV[2])
local head = redis.call('HMGET', h, 'n', 'f', 'b', 't')
if not head[1] then
  -- No journal (never, or expired): what an expiry left of it must not answer digests.
  redis.call('DEL', e, d)
end
local nxt, first = tonumber(head[1]) or 1, tonumber(head[2]) or 1
local bytes = tonumber(head[3]) or 0
local seqs = {}
for i = 6, #ARGV, 2 do
  local digest, data = ARGV[i], ARGV[i + 1]
  local seq = redis.call('ZSCORE', d, digest)
  if seq then
    seqs[#seqs + 1] = tonumber(seq)
  else
    redis.call('HSET', e, nxt, data)
    redis.call('ZADD', d, nxt, digest)
    bytes = bytes + #data
    seqs[#seqs + 1] = nxt
    nxt = nxt + 1
  end
end
local kept = first
while first < nxt and (nxt - first > max_events or bytes > max_bytes) do
  bytes = bytes - redis.call('HSTRLEN', e, first)
  redis.call('HDEL', e, first)
  first = first + 1
end
if first > kept then redis.call('ZREMRANGEBYSCORE', d, '-inf', '(' .. first) end
local terminal, ttl = '0', ARGV[4]
if head[4] == '1' or ARGV[5] == '1' then terminal, ttl = '1', ARGV[3] end
redis.call('HSET', h, 'n', nxt, 'f', first, 'b', bytes, 't', terminal)
redis.call('PEXPIRE', e, ttl)
redis.call('PEXPIRE', d, ttl)
redis.call('PEXPIRE', h, ttl)
return seqs
"""

# KEYS: entries, head. ARGV: after, limit. Returns {first, last, terminal, then the
# bytes of the entries after ``after``, at most ``limit``, from seq max(after + 1, f)}
# or {0, 0, 0} when there is no journal. HMGET in chunks: unpack has a stack limit.
READ = """
local head = redis.call('HMGET', KEYS[2], 'n', 'f', 't')
if not head[1] then return {0, 0, 0} end
local nxt, first = tonumber(head[1]), tonumber(head[2])
local out = {first, nxt - 1, 0}
if head[3] == '1' then out[3] = 1 end
local from = math.max(tonumber(ARGV[1]) + 1, first)
local to = math.min(nxt - 1, from + tonumber(ARGV[2]) - 1)
while from <= to do
  local fields = {}
  for s = from, math.min(to, from + 999) do fields[#fields + 1] = s end
  for _, data in ipairs(redis.call('HMGET', KEYS[1], unpack(fields))) do
    out[#out + 1] = data
  end
  from = from + #fields
end
return out
"""


async def eval_bytes(client: aioredis.Redis, script: AsyncScript, keys: Sequence[str],
                     args: Sequence[Any]) -> Any:
    """Run ``script`` with its reply as bytes: the store's client decodes replies as text,
    and an entry is any bytes. (AsyncScript.__call__ takes no such option.)"""
    async def evalsha() -> Any:
        # redis-py leaves execute_command untyped; NEVER_DECODE is its own option for
        # replies that are not text (DUMP uses it).
        return await client.execute_command(  # type: ignore[no-untyped-call]
            "EVALSHA", script.sha, len(keys), *keys, *args, **{NEVER_DECODE: []})
    try:
        return await evalsha()
    except NoScriptError:  # a restarted or another server: load it, as __call__ does
        script.sha = await client.script_load(script.script)
        return await evalsha()
