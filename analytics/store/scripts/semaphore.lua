-- semaphore.lua: a fair counting semaphore with timeouts (at most N holders at once).
--
-- Every contender, holding or waiting, is in two sorted sets: `order` by its arrival
-- number (first come, first served) and `seen` by the last time it said it was alive. A
-- contender holds the semaphore while its rank in `order` is below the limit. Contenders
-- not seen for `timeout` seconds (a crashed worker) are dropped first, which frees their
-- slot or their place in the queue.
--
-- KEYS[1]  zset    order: token -> arrival number
-- KEYS[2]  zset    seen: token -> last sign of life (seconds)
-- KEYS[3]  string  the arrival counter
-- ARGV[1]  "acquire" (join, or refresh one's place, and ask) or "release"
-- ARGV[2]  the contender's token
-- ARGV[3]  the limit N
-- ARGV[4]  now, in seconds
-- ARGV[5]  timeout, in seconds
--
-- Returns, for acquire: 0 when holding, else the place in the queue (1 = next);
-- for release: 1 if the token was there.
local mode, token = ARGV[1], ARGV[2]
if mode == 'release' then
  redis.call('ZREM', KEYS[2], token)
  return redis.call('ZREM', KEYS[1], token)
end
local limit, now, timeout = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])

local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - timeout)
if #dead > 0 then
  redis.call('ZREM', KEYS[2], unpack(dead))
  redis.call('ZREM', KEYS[1], unpack(dead))
end
if not redis.call('ZSCORE', KEYS[1], token) then
  redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[3]), token)
end
redis.call('ZADD', KEYS[2], now, token)
local rank = redis.call('ZRANK', KEYS[1], token)
if rank < limit then return 0 end
return rank - limit + 1
