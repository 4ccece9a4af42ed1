-- compact.lua: give bitmaps back the room they reserved while growing
-- (analytics/rollups/compaction.py).
--
-- Why: a bitmap grows as SETBIT and BITFIELD pass its end, and each time the server
-- reserves room for more growth (up to the new length again, at most 1 MB more): a day's
-- filter bitmaps measured ~1.7x their length. A copy of exactly their length (SET of the
-- same value, the TTL kept) frees the rest. Lua because the read and the write must be
-- one step: a bit set between them would be lost.
--
-- KEYS     the strings to look at (missing ones are skipped)
-- ARGV[1]  the smallest slack worth a copy, in bytes
-- ARGV[2]  the smallest slack worth a copy, as a fraction of the string's length
-- Returns {strings copied, bytes freed}.
local min_bytes, min_share = tonumber(ARGV[1]), tonumber(ARGV[2])
local copied, freed = 0, 0
for _, key in ipairs(KEYS) do
  local used = redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')
  if used then
    local length = redis.call('STRLEN', key)
    local slack = used - length
    if slack >= min_bytes and slack >= min_share * length then
      redis.call('SET', key, redis.call('GET', key), 'KEEPTTL')
      copied = copied + 1
      freed = freed + used - redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')
    end
  end
end
return {copied, freed}
