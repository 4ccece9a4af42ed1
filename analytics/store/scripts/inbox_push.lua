-- inbox_push.lua: accept single events into a site's inbox (analytics/ingest/inbox.py).
--
-- Why Lua: the rate limits, the call's mark and the push are one atomic step, so an event
-- is acknowledged only once it is in Redis, a refused call leaves nothing behind, and a
-- call replayed from the spool (its reply was lost) is not pushed twice.
--
-- KEYS[1]  list    the inbox
-- KEYS[2]  set     marks of applied calls (see ARGV[1])
-- KEYS[3..2+L]     rate-limit buckets (lib/gcra.lua)
-- ARGV[1]  this call's mark, "" for none; ARGV[2] the marks' TTL in seconds
-- ARGV[3]  L, then per bucket: interval_ms, burst, cost
-- then     the events, one encoded string each
--
-- Returns {events now in the inbox, 0}; {-1, 0} when the mark was there already;
-- {-2, ms to wait} when a rate limit refused the call.
local limits = tonumber(ARGV[3])
if limits > 0 then
  local buckets = {}
  for i = 1, limits do
    local at = 3 + 3 * (i - 1)
    buckets[i] = {KEYS[2 + i], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])}
  end
  local wait = gcra_all(buckets)
  if wait > 0 then return {-2, wait} end
end
if ARGV[1] ~= '' then
  if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return {-1, 0} end
  redis.call('EXPIRE', KEYS[2], ARGV[2])
end
local first = 4 + 3 * limits
if first > #ARGV then return {redis.call('LLEN', KEYS[1]), 0} end
return {redis.call('RPUSH', KEYS[1], unpack(ARGV, first, #ARGV)), 0}
