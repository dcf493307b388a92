"""The Lua scripts that make the Redis store's multi-key steps atomic. Keys are built
inside the scripts from the prefix (a standalone Redis or a primary with replicas; not
Redis Cluster). A task is a hash: t i c s ca ua o b a (owner ``o`` is "" for none, else
"@" + owner; the migration agent ``a`` "" or absent for none), indexed by zsets scored by ``ua`` (its status timestamp), under
``idx:<tenant>``: all (``idx:T``), by context (``:c:<ctx>``), by owner (``:o:<owner>``),
by state (``:s:<state>``), by state and owner (``:s:<state>:o:<owner>``); the free-form
part always last, so no two names collide. ``all`` orders every tenant's tasks for
retention."""

# Byte order of two strings, whatever the server's locale (Lua's < uses strcoll).
_LESS = """
local function less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
"""

# Add id to (op ZADD) or remove it from (op ZREM) the indexes of its context, owner, state.
_INDEX = """
local function index(op, idx, id, score, c, o, s)
  local function call(key)
    if op == 'ZADD' then redis.call('ZADD', key, score, id) else redis.call('ZREM', key, id) end
  end
  call(idx .. ':c:' .. c)
  call(idx .. ':s:' .. s)
  if o ~= '' then
    call(idx .. ':o:' .. string.sub(o, 2))
    call(idx .. ':s:' .. s .. ':o:' .. string.sub(o, 2))
  end
end
"""

# One task in or out of the index: insert, or replace when its status is not older (a
# late, older one only fills a missing owner or agent). Returns 1 when written, else 0.
_UPSERT = _INDEX + """
local function upsert(p, t, id, c, s, ca, ua, o, b, a)
  local key = p .. 'task:' .. t .. ':' .. id
  local idx = p .. 'idx:' .. t
  local old = redis.call('HMGET', key, 'c', 'ua', 'o', 'ca', 's', 'a')
  a = a or ''
  if old[2] then
    local oo, oa = old[3], old[6] or ''
    if oo ~= '' then o = oo end
    if oa ~= '' then a = oa end
    if tonumber(ua) < tonumber(old[2]) then
      if oo == '' and o ~= '' then
        redis.call('HSET', key, 'o', o)
        index('ZADD', idx, id, old[2], old[1], o, old[5])
      end
      if oa == '' and a ~= '' then redis.call('HSET', key, 'a', a) end
      return 0
    end
    ca = old[4]
    index('ZREM', idx, id, 0, old[1], oo, old[5])
  end
  redis.call('HSET', key, 't', t, 'i', id, 'c', c, 's', s, 'ca', ca, 'ua', ua, 'o', o, 'b', b,
             'a', a)
  redis.call('ZADD', idx, ua, id)
  index('ZADD', idx, id, ua, c, o, s)
  redis.call('ZADD', p .. 'all', ua, t .. ':' .. id)
  return 1
end
"""

# ARGV: prefix, tenant, id, context, state, created, updated, "@owner" or "", backend,
# agent or "".
UPSERT = _UPSERT + """
return upsert(unpack(ARGV))
"""

# ARGV: prefix, then a JSON array of tasks, each an array of UPSERT's 9 string fields
# after the prefix, written in order (the task index writes in batches; one argument
# costs the client far less to send than eight per task). Returns how many were written.
UPSERT_MANY = _UPSERT + """
local n = 0
for _, f in ipairs(cjson.decode(ARGV[2])) do
  n = n + upsert(ARGV[1], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9])
end
return n
"""

# The records of the ids in ``page`` (at most ``size``), after {total, more}.
_EMIT = """
local function emit(base, page, size, total)
  local out = {total, 0}
  if #page > size then out[2] = 1 end
  for i = 1, math.min(#page, size) do
    local f = redis.call('HMGET', base .. page[i], 't', 'i', 'c', 's', 'ca', 'ua', 'o', 'b',
                         'a')
    for j = 1, 9 do out[#out + 1] = f[j] end
  end
  return out
end
"""

# One index scanned, each task checked against owner ("@"+owner or "" for any) and states
# (none: any): for a context's tasks, which are few. ARGV: prefix, tenant, index key,
# owner, min score ("-inf" or a number), cursor score and id ("" on the first page),
# page size, states.
LIST_SCAN = _LESS + _EMIT + """
local p, t, idx, owner, min = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local cscore, cid, size = ARGV[6], ARGV[7], tonumber(ARGV[8])
local states, nstates = {}, 0
for i = 9, #ARGV do states[ARGV[i]] = true; nstates = nstates + 1 end
local base = p .. 'task:' .. t .. ':'
local cnum = tonumber(cscore)
local total, page = 0, {}
local offset, chunk = 0, 512
while true do
  local batch = redis.call('ZREVRANGEBYSCORE', idx, '+inf', min, 'WITHSCORES', 'LIMIT', offset, chunk)
  if #batch == 0 then break end
  for i = 1, #batch, 2 do
    local id, score = batch[i], tonumber(batch[i + 1])
    local f = redis.call('HMGET', base .. id, 'o', 's')
    if (owner == '' or f[1] == owner) and (nstates == 0 or states[f[2]]) then
      total = total + 1
      if #page <= size and (cnum == nil or score < cnum or (score == cnum and less(id, cid)))
      then page[#page + 1] = id end
    end
  end
  offset = offset + chunk
end
return emit(base, page, size, total)
"""

# The union of disjoint indexes (one per state asked for, or the one that matches), each
# read only from the cursor on: ZCOUNT for the total, at most size + 1 ids from each, merged.
# ARGV: prefix, tenant, min score, cursor score and id, page size, index keys.
LIST_UNION = _LESS + _EMIT + """
local p, t, min, cscore, cid, size = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6])
local cnum = tonumber(cscore)
local top = '+inf'
if cnum ~= nil then top = cscore end
local total, items = 0, {}
for k = 7, #ARGV do
  total = total + redis.call('ZCOUNT', ARGV[k], min, '+inf')
  local got, offset = 0, 0
  while got <= size do
    local batch = redis.call('ZREVRANGEBYSCORE', ARGV[k], top, min, 'WITHSCORES', 'LIMIT',
                             offset, size + 1)
    if #batch == 0 then break end
    for i = 1, #batch, 2 do
      local id, score = batch[i], tonumber(batch[i + 1])
      if got <= size and (cnum == nil or score < cnum or (score == cnum and less(id, cid))) then
        items[#items + 1] = {id, score}
        got = got + 1
      end
    end
    offset = offset + size + 1
  end
end
table.sort(items, function(a, b)
  if a[2] ~= b[2] then return a[2] > b[2] end
  return less(b[1], a[1])
end)
local page = {}
for i = 1, math.min(#items, size + 1) do page[i] = items[i][1] end
return emit(p .. 'task:' .. t .. ':', page, size, total)
"""

# ARGV: prefix; k, then k times (tenant, key prefix, value, ttl ms, task key prefix):
# the conversations of that tenant none of whose tasks is left bound as a claim binds
# them, to the agent of the newest task dropped (or the value: routing followed the
# conversation by its newest task), and a dropped task where its agent is another
# (base.KeptOwner); then the members of the all-tenants zset ("tenant:task_id") to drop.
DELETE = _INDEX + _LESS + """
local p = ARGV[1]
local kept = {}
local first = 3 + 5 * tonumber(ARGV[2])
for i = 3, first - 1, 5 do
  kept[ARGV[i]] = {ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]}
end
local newest = {}  -- tenant -> context -> {ua, id, agent} of its newest task dropped
local n = 0
for i = first, #ARGV do
  local m = ARGV[i]
  local sep = string.find(m, ':', 1, true)
  local t, id = string.sub(m, 1, sep - 1), string.sub(m, sep + 1)
  local key = p .. 'task:' .. t .. ':' .. id
  local idx = p .. 'idx:' .. t
  local f = redis.call('HMGET', key, 'c', 'o', 's', 'a', 'ua')
  if f[1] then
    local k = kept[t]
    if k then
      local agent = f[4] or ''
      if f[1] ~= '' then
        newest[t] = newest[t] or {}
        local ua, was = tonumber(f[5]) or 0, newest[t][f[1]]
        if not was or ua > was[1] or (ua == was[1] and less(was[2], id)) then
          newest[t][f[1]] = {ua, id, agent}
        end
      end
      if k[4] ~= '' and agent ~= '' and agent ~= k[2] then
        redis.call('SET', p .. 'claim:' .. k[4] .. id, agent, 'NX', 'PX', k[3])
      end
    end
    index('ZREM', idx, id, 0, f[1], f[2], f[3])
    n = n + redis.call('DEL', key)
  end
  redis.call('ZREM', idx, id)
  redis.call('ZREM', p .. 'all', m)
end
for t, contexts in pairs(newest) do
  local k = kept[t]
  for c, w in pairs(contexts) do
    if redis.call('ZCARD', p .. 'idx:' .. t .. ':c:' .. c) == 0 then
      local owner = k[2]
      if w[3] ~= '' then owner = w[3] end
      redis.call('SET', p .. 'claim:' .. k[1] .. c, owner, 'NX', 'PX', k[3])
    end
  end
end
return n
"""

CLAIM = """
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return ARGV[1]
"""

# KEYS[1]: the key. ARGV: "1" and the value expected, or "0" (none expected); the new
# value; ttl ms. Returns 1 when the key held what was expected (then the new value), or
# holds the new value already (this swap's own, retried after a lost reply), else 0.
SWAP = """
local v = redis.call('GET', KEYS[1])
if v == ARGV[3] then return 1 end
if ARGV[1] == '1' then
  if v ~= ARGV[2] then return 0 end
elseif v then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
return 1
"""

# KEYS: the keys to bind. ARGV[1]: ttl ms; ARGV[i + 1]: the value for KEYS[i]. Returns the
# value each key is bound to (its own unless bound already).
CLAIM_ALL = """
local out = {}
for i, key in ipairs(KEYS) do
  local v = redis.call('GET', key)
  if not v then
    v = ARGV[i + 1]
    redis.call('SET', key, v, 'PX', ARGV[1])
  end
  out[i] = v
end
return out
"""

# KEYS[1]: the bucket. ARGV: rate, burst, cost. Returns {allowed, retry_after or -1}.
TAKE = """
local rate, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(v[1]) or burst
local last = tonumber(v[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - last) * rate)
local allowed, retry = 0, 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
elseif cost > burst or rate <= 0 then
  retry = -1
else
  retry = (cost - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens),
           'ts', string.format('%.17g', now))
local ttl = 86400000
if rate > 0 then ttl = math.ceil((burst - tokens) / rate * 1000) + 1000 end
redis.call('PEXPIRE', KEYS[1], ttl)
return {allowed, string.format('%.17g', retry)}
"""
