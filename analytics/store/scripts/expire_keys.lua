-- expire_keys.lua: EXPIREAT ARGV[1] (Unix seconds) on every key of KEYS, all of one site
-- (one hash slot). Used by the rollups' expiry (analytics/rollups/expiry.py).
--
-- Why Lua: a day has a few thousand raw keys, and one EXPIREAT each from redis-py cost
-- more client time than everything else in a rollup of 60 days (141,000 commands: 4 s
-- under cProfile, 50 ms of it in Redis); one call per few thousand keys costs nothing.
local at = ARGV[1]
for i = 1, #KEYS do
  redis.call('EXPIREAT', KEYS[i], at)
end
return #KEYS
