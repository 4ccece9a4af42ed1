-- firstdays_migrate.lua: earlier versions' first days (one string, a u16 day per id) into
-- runs and moved ids (lib/firstdays.lua), a chunk of ids a call; the nightly rollup and
-- `manage.py migrate_visitor_ids` call it while Tally runs (store/firstdays.py).
--
-- Why: that string costs 2 bytes for every visitor seen before the runs, for ever (up to
-- 4 while it grew). Its days are runs too: ids were handed out in order, so a day held for
-- many ids in a row becomes one run, and the odd id in between (a visitor a backfill
-- moved earlier) an entry of the small moved hashes.
--
-- Safe beside ingest: the string is read-only by now, so until the last call it stays the
-- answer for its ids, and the runs are built aside (KEYS[2]) and joined to the live ones in
-- that last call, atomically. Moved entries are written with HSETNX: an entry already
-- there came from a backfill after the upgrade and is newer. A call that finds the string
-- gone (another migration finished first) drops what it built aside and stops.
--
-- KEYS[1]  string  the earlier versions' first days (the first days' base key)
-- KEYS[2]  zset    the runs built so far (temporary)
-- KEYS[3]  zset    the live runs
-- ARGV[1]  the first id of this call, ARGV[2] how many ids at most, ARGV[3] the end: ids
--          below it are the string's (the first live run's first id, or the id counter)
-- ARGV[4]  the day of the run open at ARGV[1] (-1: none yet)
--
-- Returns {the next id, or -1 when done; the day of the run open there}.
local MIN_RUN = 8  -- a day held for fewer ids in a row is kept as moved ids (cheaper)
local base, aside, runs = KEYS[1], KEYS[2], KEYS[3]
if redis.call('EXISTS', base) == 0 then
  redis.call('DEL', aside)
  return {-1, -1}
end
local from, limit, open = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
local to = math.min(from + tonumber(ARGV[2]), limit)
local ahead = math.min(to + MIN_RUN, limit)
local raw = ahead > from and redis.call('GETRANGE', base, 2 * from, 2 * ahead - 1) or ''
local function day_of(id)  -- (past the string's end: 0, unknown, as BITFIELD GET reads it)
  local hi, lo = string.byte(raw, 2 * (id - from) + 1, 2 * (id - from) + 2)
  return (hi or 0) * 256 + (lo or 0)
end
local starts, moved = {}, {}
for id = from, to - 1 do
  local day = day_of(id)
  if day ~= open then
    local held = true
    for next_id = id + 1, math.min(id + MIN_RUN, limit) - 1 do
      if day_of(next_id) ~= day then held = false; break end
    end
    if held or open < 0 then
      starts[#starts + 1] = id
      starts[#starts + 1] = id .. ':' .. day
      open = day
    else
      moved[#moved + 1] = {id, day}
    end
  end
end
for i = 1, #starts, 2 * 500 do
  redis.call('ZADD', aside, unpack(starts, i, math.min(i + 2 * 500 - 1, #starts)))
end
for _, m in ipairs(moved) do
  redis.call('HSETNX', KEY.first_days_moved(base, math.floor(m[1] / PROTOCOL.FIRST_DAYS_MOVED)), m[1] % PROTOCOL.FIRST_DAYS_MOVED, m[2])
end
if to < limit then return {to, open} end
if redis.call('EXISTS', aside) == 1 then
  redis.call('ZUNIONSTORE', runs, 2, runs, aside)
  redis.call('DEL', aside)
end
redis.call('UNLINK', base)
return {-1, open}
