"""The Lua scripts that make the Redis store's multi-key steps atomic. Keys are built
inside the scripts from the prefix (a standalone Redis or a primary with replicas; not
Redis Cluster). A task is a hash: t i c s ca ua o b (owner ``o`` is "" for none, else
"@" + owner), indexed by zsets scored by ``ua`` (its status timestamp): per tenant,
per tenant and context, per tenant and owner, and one over all tenants for retention."""

UPSERT = """
local p, t, id, c, s, ca, ua, o, b = unpack(ARGV)
local key = p .. 'task:' .. t .. ':' .. id
local idx = p .. 'idx:' .. t
local old = redis.call('HMGET', key, 'c', 'ua', 'o', 'ca')
if old[2] then
  local oo = old[3]
  if oo ~= '' then o = oo end
  if tonumber(ua) < tonumber(old[2]) then
    if oo == '' and o ~= '' then
      redis.call('HSET', key, 'o', o)
      redis.call('ZADD', idx .. ':o:' .. string.sub(o, 2), old[2], id)
    end
    return 0
  end
  ca = old[4]
  redis.call('ZREM', idx .. ':c:' .. old[1], id)
  if oo ~= '' then redis.call('ZREM', idx .. ':o:' .. string.sub(oo, 2), id) end
end
redis.call('HSET', key, 't', t, 'i', id, 'c', c, 's', s, 'ca', ca, 'ua', ua, 'o', o, 'b', b)
redis.call('ZADD', idx, ua, id)
redis.call('ZADD', idx .. ':c:' .. c, ua, id)
if o ~= '' then redis.call('ZADD', idx .. ':o:' .. string.sub(o, 2), ua, id) end
redis.call('ZADD', p .. 'all', ua, t .. ':' .. id)
return 1
"""

# ARGV: prefix, tenant, index key, owner ("@"+owner or "" for any), context ("" for any),
# min score ("-inf" or a number), cursor score and id ("" on the first page), page size,
# then the states to keep (none: any).
LIST = """
local p, t, idx, owner, ctx, min = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local cscore, cid, size = ARGV[7], ARGV[8], tonumber(ARGV[9])
local states, nstates = {}, 0
for i = 10, #ARGV do states[ARGV[i]] = true; nstates = nstates + 1 end
local base = p .. 'task:' .. t .. ':'
local filtered = owner ~= '' or ctx ~= '' or nstates > 0
local function ok(id)
  if not filtered then return true end
  local f = redis.call('HMGET', base .. id, 'o', 'c', 's')
  if owner ~= '' and f[1] ~= owner then return false end
  if ctx ~= '' and f[2] ~= ctx then return false end
  if nstates > 0 and not states[f[3]] then return false end
  return true
end
-- byte order, whatever the server's locale
local function less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local cnum = tonumber(cscore)
local function after(id, score)
  if cnum == nil then return true end
  local v = tonumber(score)
  return v < cnum or (v == cnum and less(id, cid))
end
local total, page = 0, {}
local counted = not filtered
local top = '+inf'
if counted then
  total = redis.call('ZCOUNT', idx, min, '+inf')
  if cnum ~= nil then top = cscore end
end
local offset, chunk = 0, 512
while true do
  local batch = redis.call('ZREVRANGEBYSCORE', idx, top, min, 'WITHSCORES', 'LIMIT', offset, chunk)
  if #batch == 0 then break end
  for i = 1, #batch, 2 do
    local id = batch[i]
    if ok(id) then
      if not counted then total = total + 1 end
      if #page <= size and after(id, batch[i + 1]) then page[#page + 1] = id end
    end
  end
  if counted and #page > size then break end
  offset = offset + chunk
end
local out = {total, 0}
if #page > size then out[2] = 1 end
for i = 1, math.min(#page, size) do
  local f = redis.call('HMGET', base .. page[i], 't', 'i', 'c', 's', 'ca', 'ua', 'o', 'b')
  for j = 1, 8 do out[#out + 1] = f[j] end
end
return out
"""

# ARGV: prefix, then members of the all-tenants zset ("tenant:task_id") to drop.
DELETE = """
local p = ARGV[1]
local n = 0
for i = 2, #ARGV do
  local m = ARGV[i]
  local sep = string.find(m, ':', 1, true)
  local t, id = string.sub(m, 1, sep - 1), string.sub(m, sep + 1)
  local key = p .. 'task:' .. t .. ':' .. id
  local idx = p .. 'idx:' .. t
  local f = redis.call('HMGET', key, 'c', 'o')
  if f[1] then
    redis.call('ZREM', idx .. ':c:' .. f[1], id)
    if f[2] ~= '' then redis.call('ZREM', idx .. ':o:' .. string.sub(f[2], 2), id) end
    n = n + redis.call('DEL', key)
  end
  redis.call('ZREM', idx, id)
  redis.call('ZREM', p .. 'all', m)
end
return n
"""

CLAIM = """
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return ARGV[1]
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
