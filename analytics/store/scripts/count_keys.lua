-- count_keys.lua: count many keys of one site (one hash slot) in one call.
-- KEYS: the keys, in the order the counts are read.
-- ARGV: one op per count, each naming how many keys it takes: "h<n>" PFCOUNT of the next
--   n keys (their union), "e<n>" EXISTS of the next n keys (how many exist), "b1"
--   BITCOUNT, "g1" GET as an integer (0 when missing).
-- Returns the counts, one per op. Used by analytics/counts/many.py.
--
-- Why Lua: no atomicity; a rollup of 60 days counts ~80,000 keys (every page's and visit
-- value's day HLL, bitmap and pageviews), and redis-py spends ~11 us a command packing and
-- parsing a pipeline, against ~3 us a key here (0.54 s against 0.14 s for 50,000 PFCOUNTs).
local out = {}
local at = 1
for i = 1, #ARGV do
  local op, n = string.sub(ARGV[i], 1, 1), tonumber(string.sub(ARGV[i], 2))
  if op == 'h' then
    out[i] = redis.call('PFCOUNT', unpack(KEYS, at, at + n - 1))
  elseif op == 'e' then
    out[i] = redis.call('EXISTS', unpack(KEYS, at, at + n - 1))
  elseif op == 'b' then
    out[i] = redis.call('BITCOUNT', KEYS[at])
  else
    out[i] = tonumber(redis.call('GET', KEYS[at]) or 0) or 0
  end
  at = at + n
end
return out
