-- inbox_push.lua: accept single events into a site's inbox (analytics/capture/inbox.py).
--
-- Why Lua: the rate limits, the call's mark and the push are one atomic step, so an event
-- is acknowledged only once it is in Redis, a refused call leaves nothing behind, and a
-- call replayed from the spool (its reply was lost) is not pushed twice.
--
-- Marks are "<stream>:<n>": a web process pushes its calls one after another, numbered
-- n = 1, 2, ... within a stream it names, and starts a new stream after any call whose
-- answer it did not get (that call is spooled). So a stream's calls before its last were
-- all applied, and one number per stream is all a site keeps: a replayed call was applied
-- when its number is not above its stream's. (A set member per call, as record() marks
-- are kept, measured ~40 bytes a call for 48 hours: more than a visitor costs.)
--
-- KEYS[1]  list    the inbox
-- KEYS[2]  hash    stream -> the number of its last call applied (see ARGV[1])
-- KEYS[3..2+L]     rate-limit buckets (lib/gcra.lua)
-- ARGV[1]  this call's mark "<stream>:<n>", "" for none; ARGV[2] the marks' TTL (s)
-- ARGV[3]  L, then per bucket: interval_ms, burst, cost
-- then     the events, one encoded string each
--
-- Returns {events now in the inbox, 0}; {-1, 0} when the mark was there already;
-- {-2, ms to wait} when a rate limit refused the call.
local limits = tonumber(ARGV[3])
if limits > 0 then
  local wait = gcra.from_args(limits, 2, 3)
  if wait > 0 then return {-2, wait} end
end
if ARGV[1] ~= '' then
  local stream, n = string.match(ARGV[1], '^(.*):(%d+)$')
  n = tonumber(n)
  if n <= (tonumber(redis.call('HGET', KEYS[2], stream)) or 0) then return {-1, 0} end
  redis.call('HSET', KEYS[2], stream, n)
  redis.call('EXPIRE', KEYS[2], ARGV[2])
end
local first = 4 + 3 * limits
if first > #ARGV then return {redis.call('LLEN', KEYS[1]), 0} end
return {redis.call('RPUSH', KEYS[1], unpack(ARGV, first, #ARGV)), 0}
