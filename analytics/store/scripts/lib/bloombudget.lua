-- lib/bloombudget.lua: a site's Bloom filters held to its memory budget, as functions that
-- bloom.lua and bloom_native.lua include (scripts/__init__.py prepends this).
--
-- Three keys per site (keys.bloom_registry), written only here, in the same script step
-- as the filter they account for, so they cannot disagree with it:
--   live    zset  visitor digest -> the moment (ms, server clock) its filter expires; the
--                 filter's keys get the very same moment (PEXPIREAT), so "live" here and
--                 "still in Redis" are one thing, without a scan and without a counter
--                 that expiry could leave behind
--   sizes   hash  visitor digest -> the bytes its filter is charged
--   budget  hash  bytes: the sum of the charges; full-since (ms) and refused: set at the
--                 first add the budget refused, counting the refusals since, until the
--                 filters are back under BUDGET_ROOM of the budget
-- A filter whose moment has passed is gone from Redis (it expired) and is pruned here by
-- the next add (at most PRUNE_MOST at a time; readers subtract the rest themselves).
-- A filter is charged its own bytes plus a fixed overhead per filter (the caller's
-- measure of key names, expiry entries, its shape hash and these entries).

local BUDGET_ROOM = 0.9  -- a full budget is reported again only once below this share
local PRUNE_MOST = 100

local function budget_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function budget_int(n)
  return string.format('%d', n)
end

-- Drop the filters that expired before `now` from the books; returns the bytes freed.
local function budget_prune(live, sizes, budget, now)
  local gone = redis.call('ZRANGEBYSCORE', live, '-inf', '(' .. budget_int(now), 'LIMIT', 0, PRUNE_MOST)
  if #gone == 0 then return 0 end
  local charged, freed = redis.call('HMGET', sizes, unpack(gone)), 0
  for i = 1, #gone do freed = freed + (tonumber(charged[i]) or 0) end
  redis.call('ZREM', live, unpack(gone))
  redis.call('HDEL', sizes, unpack(gone))
  redis.call('HINCRBY', budget, 'bytes', -freed)
  return freed
end

-- The state of the books for one filter: {total (all filters), charged (this one, 0 when
-- not on the books), full (the budget is marked full)}.
local function budget_state(sizes, budget, member)
  local totals = redis.call('HMGET', budget, 'bytes', 'full-since')
  return {
    total = tonumber(totals[1]) or 0,
    charged = tonumber(redis.call('HGET', sizes, member)) or 0,
    full = totals[2] ~= false,
  }
end

-- Would this filter, at `bytes` (its own, overhead included), still fit the budget?
local function budget_fits(state, bytes, limit)
  return state.total - state.charged + bytes <= limit
end

-- Book a refusal; 1 when it is the first since the budget had room (the caller logs it).
local function budget_refuse(budget, now)
  if redis.call('HSETNX', budget, 'full-since', now) == 1 then
    redis.call('HSET', budget, 'refused', 1)
    return 1
  end
  redis.call('HINCRBY', budget, 'refused', 1)
  return 0
end

-- Put a filter on the books at `bytes` until `deadline`, and end a full budget's report
-- once the filters are under BUDGET_ROOM of it; 2 when that happened (the caller logs it).
local function budget_charge(live, sizes, budget, member, state, bytes, deadline, limit)
  if bytes ~= state.charged then
    redis.call('HSET', sizes, member, bytes)
    state.total = state.total + bytes - state.charged
    redis.call('HINCRBY', budget, 'bytes', bytes - state.charged)
    state.charged = bytes
  end
  redis.call('ZADD', live, deadline, member)
  if state.full and state.total <= limit * BUDGET_ROOM then
    redis.call('HDEL', budget, 'full-since', 'refused')
    state.full = false
    return 2
  end
  return 0
end

-- Take a filter that is no longer in Redis off the books.
local function budget_forget(live, sizes, budget, member)
  local charged = tonumber(redis.call('HGET', sizes, member)) or 0
  redis.call('ZREM', live, member)
  if redis.call('HDEL', sizes, member) == 1 then redis.call('HINCRBY', budget, 'bytes', -charged) end
end

return {now = budget_now, int = budget_int, prune = budget_prune, state = budget_state, fits = budget_fits,
  refuse = budget_refuse, charge = budget_charge, forget = budget_forget}
