-- lib/firstdays.lua: each visitor's first day seen, for record_batch.lua (stable salt).
--
-- Why: a visitor is new on the day their id is handed out, unless events of an earlier
-- day arrive later (a backfill, an import of old logs): then "new" moves to that day. So
-- a backfill must know the first day of the visitors it meets.
--
-- Why runs: ids are handed out in order, a call's new ids all on the call's day, so the
-- first days are runs of ids, one a day for live traffic (a few more while an import of
-- other days runs beside it). A run costs one sorted-set member, where a day per id
-- (u16 at #id, as earlier versions kept them) cost 2 bytes a visitor, and up to twice that
-- in a growing string. The visitors a backfill moves to an earlier day are the exceptions,
-- kept apart in small hashes.
--
-- Keys, named from the base key `base` (store/keys.py names the same):
--   base .. ':runs'        zset    "<first id>:<day>" scored by its first id: ids from
--                                  there to the next run's were first seen on that day
--                                  (days since 2000-01-01)
--   KEY.first_days_moved(base, b) hash    id mod FIRSTDAYS_MOVED -> first day, for the ids
--                                  b * FIRSTDAYS_MOVED onwards that a backfill moved: read
--                                  before the runs (up to 128 entries: a listpack)
--   base                   string  earlier versions' first days, u16 at #id: read for
--                                  ids handed out before the first run (0: unknown)

local FIRSTDAYS_MOVED = PROTOCOL.FIRST_DAYS_MOVED

-- A run's member "<first id>:<day>" as its first id and day.
local function firstdays_run(member)
  local start, day = string.match(member, '^(%d+):(%d+)$')
  return tonumber(start), tonumber(day)
end

-- New ids first .. first + m - 1 were handed out on `day`.
local function firstdays_handed(base, first, day)
  local runs = KEY.first_days_runs(base)
  local last = redis.call('ZRANGE', runs, -1, -1)[1]
  if last and select(2, firstdays_run(last)) == day then return end
  redis.call('ZADD', runs, first, first .. ':' .. day)
end

local function firstdays_group(list)
  local by_bucket = {}
  for _, id in ipairs(list) do
    local b = math.floor(id / FIRSTDAYS_MOVED)
    local ids = by_bucket[b]
    if not ids then ids = {}; by_bucket[b] = ids end
    ids[#ids + 1] = id
  end
  return by_bucket
end

-- The first days of the ids in `list` (distinct): id -> day, 0 when unknown.
local function firstdays_get(base, list)
  local out, rest = {}, {}
  for b, ids in pairs(firstdays_group(list)) do
    local fields = {}
    for k, id in ipairs(ids) do fields[k] = id % FIRSTDAYS_MOVED end
    local got = redis.call('HMGET', KEY.first_days_moved(base, b), unpack(fields))
    for k, id in ipairs(ids) do
      if got[k] then out[id] = tonumber(got[k]) else rest[#rest + 1] = id end
    end
  end
  if #rest == 0 then return out end
  table.sort(rest)
  local runs_key, runs = KEY.first_days_runs(base), {}
  local function add(member) runs[#runs + 1] = {firstdays_run(member)} end
  local lo, hi = rest[1], rest[#rest]
  local legacy = {}
  if redis.call('ZCOUNT', runs_key, '(' .. lo, hi) <= #rest then  -- (the runs between, at most one per id)
    for _, m in ipairs(redis.call('ZREVRANGEBYSCORE', runs_key, lo, '-inf', 'LIMIT', 0, 1)) do add(m) end
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', runs_key, '(' .. lo, hi)) do add(m) end
    local r = 1
    for _, id in ipairs(rest) do
      while runs[r + 1] and runs[r + 1][1] <= id do r = r + 1 end
      if runs[r] and runs[r][1] <= id then out[id] = runs[r][2] else legacy[#legacy + 1] = id end
    end
  else  -- (many runs between: each id's own)
    for _, id in ipairs(rest) do
      local m = redis.call('ZREVRANGEBYSCORE', runs_key, id, '-inf', 'LIMIT', 0, 1)[1]
      if m then out[id] = select(2, firstdays_run(m)) else legacy[#legacy + 1] = id end
    end
  end
  if #legacy > 0 then
    local get = {}
    for k, id in ipairs(legacy) do get[3 * k - 2] = 'GET'; get[3 * k - 1] = 'u16'; get[3 * k] = '#' .. id end
    local got = redis.call('BITFIELD', base, unpack(get))
    for k, id in ipairs(legacy) do out[id] = got[k] end
  end
  return out
end

-- The ids in `list` were first seen on `day` (earlier than their runs say).
local function firstdays_move(base, list, day)
  for b, ids in pairs(firstdays_group(list)) do
    local set = {}
    for k, id in ipairs(ids) do set[2 * k - 1] = id % FIRSTDAYS_MOVED; set[2 * k] = day end
    redis.call('HSET', KEY.first_days_moved(base, b), unpack(set))
  end
end

return {handed = firstdays_handed, get = firstdays_get, move = firstdays_move}
