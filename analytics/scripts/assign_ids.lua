-- assign_ids.lua: give each visitor digest a dense integer id, then mark the day's bitmaps.
--
-- Bitmaps need small, dense offsets (a bitmap is as long as its largest offset), so every
-- distinct visitor digest gets the next integer of a per-site counter. Reading the map,
-- taking fresh ids and setting the bits must be one atomic step: two requests racing on the
-- same new visitor must not hand out two ids, and the "ever seen" bit read must be the same
-- one that is set. Hence Lua.
--
-- KEYS[1]  hash    digest -> id map
-- KEYS[2]  string  id counter (holds the number of ids handed out)
-- KEYS[3]  bitmap  the day's active visitors
-- KEYS[4]  bitmap  ever seen (optional; given together with KEYS[5])
-- KEYS[5]  bitmap  the day's new visitors: ids whose "ever seen" bit was 0 before this call
-- ARGV[1]  TTL in seconds for KEYS[1] and KEYS[2], 0 for none (daily-salt maps expire)
-- ARGV[2..] distinct visitor digests (at most ~1,000 per call: Lua's unpack() has limits)
--
-- Returns {ids newly assigned, visitors newly seen}.
local n = #ARGV - 1
if n < 1 then return {0, 0} end
local ids = redis.call('HMGET', KEYS[1], unpack(ARGV, 2))

local missing = {}
for i = 1, n do
  if not ids[i] then missing[#missing + 1] = i end
end
if #missing > 0 then
  local first = redis.call('INCRBY', KEYS[2], #missing) - #missing
  local pairs_ = {}
  for j, i in ipairs(missing) do
    ids[i] = first + j - 1
    pairs_[#pairs_ + 1] = ARGV[i + 1]
    pairs_[#pairs_ + 1] = ids[i]
  end
  redis.call('HSET', KEYS[1], unpack(pairs_))
end
local ttl = tonumber(ARGV[1])
if ttl > 0 then
  redis.call('EXPIRE', KEYS[1], ttl)
  redis.call('EXPIRE', KEYS[2], ttl)
end

local set = {}
for i = 1, n do
  set[#set + 1] = 'SET'; set[#set + 1] = 'u1'; set[#set + 1] = ids[i]; set[#set + 1] = 1
end
redis.call('BITFIELD', KEYS[3], unpack(set))

local fresh_count = 0
if KEYS[5] then
  local old = redis.call('BITFIELD', KEYS[4], unpack(set))
  local fresh = {}
  for i = 1, n do
    if old[i] == 0 then
      fresh[#fresh + 1] = 'SET'; fresh[#fresh + 1] = 'u1'; fresh[#fresh + 1] = ids[i]; fresh[#fresh + 1] = 1
    end
  end
  if #fresh > 0 then
    redis.call('BITFIELD', KEYS[5], unpack(fresh))
    fresh_count = #fresh / 4
  end
end
return {#missing, fresh_count}
