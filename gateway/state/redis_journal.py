"""The stream journal in the Redis store (the contract: gateway/state/journal.py): its key
names and the two Lua scripts that make an append and a read atomic.

A task's journal is three keys, which share one hash tag (so one slot, should they ever
live in a cluster) and one expiry (set on every append):

- ``<prefix>j:{<tag>}:e`` a hash, seq -> the entry's bytes, and ``d<seq>`` -> their
  digest (what trimming needs to find the entry's member in ``:d``);
- ``<prefix>j:{<tag>}:d`` a sorted set, all scores 0, of ``<digest><seq>`` for each
  entry, the seq in fixed-width decimal (the digest is fixed-width too): in lexical
  order, a digest's entries by seq, so the first entry after a writer's position with
  the same bytes is one ZRANGEBYLEX (O(log n)); digests repeat, the members do not;
- ``<prefix>j:{<tag>}:h`` the head, a hash: ``n`` next seq, ``f`` oldest seq held,
  ``b`` bytes held, ``t`` "1" once an append said the task was terminal.

The tag is ``<length of tenant>:<tenant>:<task id>``: tenant and task ids are any
strings, and the length says where the tenant ends, so ("a:b", "c") and ("a", "b:c") get
different keys. The held entries are always the dense run of seqs f .. n - 1.
"""

from __future__ import annotations


def journal_keys(prefix: str, tenant: str, task_id: str) -> tuple[str, str, str]:
    """The entries, digests and head keys of one task's journal."""
    base = f"{prefix}j:{{{len(tenant)}:{tenant}:{task_id}}}:"
    return base + "e", base + "d", base + "h"


# KEYS: entries, digests, head. ARGV: max events, max bytes, ttl and idle ttl (ms),
# terminal ("1" or "0"), the writer's position ("" for none: the last seq held), then
# digest and bytes of each event. Returns each event's seq.
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
local pos = tonumber(ARGV[6]) or nxt - 1
local function seqkey(seq) return string.format('%016d', seq) end
local seqs = {}
for i = 7, #ARGV, 2 do
  local digest, data = ARGV[i], ARGV[i + 1]
  local seq
  -- A writer at the end (one stream alone, or the one ahead) has nothing to match.
  if pos < nxt - 1 then
    local hit = redis.call('ZRANGEBYLEX', d, '[' .. digest .. seqkey(math.max(pos + 1, 0)),
                           '[' .. digest .. '\255', 'LIMIT', 0, 1)[1]
    if hit then seq = tonumber(string.sub(hit, #digest + 1)) end
  end
  if not seq then
    seq = nxt
    redis.call('HSET', e, seq, data, 'd' .. seq, digest)
    redis.call('ZADD', d, 0, digest .. seqkey(seq))
    bytes = bytes + #data
    nxt = nxt + 1
  end
  seqs[#seqs + 1] = seq
  pos = seq
end
while first < nxt and (nxt - first > max_events or bytes > max_bytes) do
  local dfield = 'd' .. first
  bytes = bytes - redis.call('HSTRLEN', e, first)
  redis.call('ZREM', d, redis.call('HGET', e, dfield) .. seqkey(first))
  redis.call('HDEL', e, first, dfield)
  first = first + 1
end
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

