-- bloom_books.lua: the books of a site's Bloom filters (lib/bloombudget.lua) set right
-- by looking at the filters themselves: for a recount (filters made before the books
-- were kept, or keys removed by hand) and after the key browser unlinks a filter's key.
--
-- KEYS[1..3]  the site's books: live (zset), sizes (hash), budget (hash)
-- KEYS[4]     the visitor's filter (bits on plain Redis, the module's type on RedisBloom)
-- KEYS[5]     its shape hash (plain Redis; on RedisBloom a name that is never there)
-- ARGV[1]     the site's budget, bytes
-- ARGV[2]     the bytes a filter is charged beyond its own
-- ARGV[3]     the visitor's digest
--
-- A filter that is there is charged its size (the bits, or BF.INFO SIZE) until the
-- moment its key expires (or for good, when it has no expiry); one that is not is taken
-- off the books. Expired filters are pruned first. Returns the bytes now charged for
-- it (0: not on the books) and the notice, as bloom.lua's.
local LIVE, SIZES, BUDGET, FILTER, SHAPE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local limit, overhead, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local now = bloombudget.now()
bloombudget.prune(LIVE, SIZES, BUDGET, now)
local kind = redis.call('TYPE', FILTER)['ok']
local size
if kind == 'string' then
  size = redis.call('STRLEN', FILTER)
elseif kind ~= 'none' then
  local reply = redis.call('BF.INFO', FILTER, 'SIZE')
  size = tonumber(type(reply) == 'table' and reply[1] or reply)
end
if not size then
  bloombudget.forget(LIVE, SIZES, BUDGET, member)
  if redis.call('EXISTS', SHAPE) == 1 then redis.call('DEL', SHAPE) end  -- (a shape without bits is no filter)
  return {0, 0}
end
local ttl = redis.call('PTTL', FILTER)
local deadline = ttl >= 0 and string.format('%d', now + ttl) or '+inf'
local notice = bloombudget.charge(LIVE, SIZES, BUDGET, member, bloombudget.state(SIZES, BUDGET, member), size + overhead, deadline, limit)
return {size + overhead, notice}
