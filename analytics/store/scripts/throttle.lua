-- throttle.lua: charge one or more GCRA buckets, all or nothing (lib/gcra.lua).
--
-- KEYS[1..n]  string  the buckets
-- ARGV        per bucket, in KEYS' order: interval_ms, burst, cost
--
-- Returns 0 when allowed (every bucket charged), else the ms to wait (nothing charged).
return gcra.from_args(#KEYS, 0, 0)
