-- throttle.lua: charge one or more GCRA buckets, all or nothing (lib/gcra.lua).
--
-- KEYS[1..n]  string  the buckets
-- ARGV        per bucket, in KEYS' order: interval_ms, burst, cost
--
-- Returns 0 when allowed (every bucket charged), else the ms to wait (nothing charged).
local buckets = {}
for i = 1, #KEYS do
  buckets[i] = {KEYS[i], tonumber(ARGV[3 * i - 2]), tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i])}
end
return gcra_all(buckets)
