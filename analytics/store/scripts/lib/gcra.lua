-- lib/gcra.lua: the generic cell rate algorithm (GCRA), the idea of redis-cell's
-- CL.THROTTLE, as Lua functions that scripts include (scripts/__init__.py prepends this).
--
-- One string per bucket holds its "theoretical arrival time" (TAT, ms, server clock): the
-- moment the bucket would be empty again. A request is allowed when the TAT is less than
-- `burst` intervals ahead of now; it then moves the TAT `cost` intervals on. A request
-- that costs more than the burst (a big batch) is let through when the bucket has room
-- for one more and leaves it in debt, so the next requests wait until it is paid. The key
-- expires when the bucket is empty again: an idle client costs no memory.

-- Milliseconds to wait before the bucket takes a request, 0 when it takes one now. A
-- negative cost is that many requests that would each have been charged alone (a group
-- commit's events): they must all fit now; none goes through in debt.
local function gcra_wait(key, interval, burst, cost, now)
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local need = cost < 0 and -cost or 1
  local allow_at = tat + need * interval - burst * interval
  if allow_at > now then return math.ceil(allow_at - now) end
  return 0
end

-- Charge the bucket `cost` requests.
local function gcra_charge(key, interval, cost, now)
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local new_tat = tat + math.abs(cost) * interval
  redis.call('SET', key, string.format('%.3f', new_tat), 'PX', math.max(1, math.ceil(new_tat - now)))
end

-- Several buckets at once, all or nothing: 0 when every one took the request (each is
-- charged), else the longest wait in ms (nothing charged: a refused request costs the
-- client no budget). `buckets` is a list of {key, interval_ms, burst, cost}.
local function gcra_all(buckets)
  if #buckets == 0 then return 0 end
  local t = redis.call('TIME')  -- the server's clock: every app server shares it
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local wait = 0
  for _, b in ipairs(buckets) do
    wait = math.max(wait, gcra_wait(b[1], b[2], b[3], b[4], now))
  end
  if wait > 0 then return wait end
  for _, b in ipairs(buckets) do gcra_charge(b[1], b[2], b[4], now) end
  return 0
end

-- gcra_all() over `n` buckets laid out as the scripts take them: their keys at
-- KEYS[keys_at + 1..], then per bucket three values at ARGV[argv_at + 1..]: interval_ms,
-- burst, cost (store/limits.py Bucket.args()).
local function gcra_from_args(n, keys_at, argv_at)
  local buckets = {}
  for i = 1, n do
    local at = argv_at + 3 * (i - 1)
    buckets[i] = {KEYS[keys_at + i], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])}
  end
  return gcra_all(buckets)
end

return {from_args = gcra_from_args}
