-- merge_pages.lua: take a sealed day's new page keys out of Redis, atomically, into one
-- staging hash that the rollup then adds to the day's stored page rows.
--
-- A day's page keys expire before its other keys (keep_page_days); events sent for the
-- day after that (a backfill) make fresh page keys that hold only them. The rollup must
-- add them to the stored rows, not rewrite the rows with them: so it moves them here,
-- in one step with their deletion, and adds the staging hash once (its token, recorded
-- with the rows in the same database transaction, says whether it was added already).
--
-- KEYS[1]          set     the day's page index
-- KEYS[2]          hash    the staging hash: "\0token" -> ARGV[1], path -> "<pageviews> <visitors>"
-- KEYS[1 + 2i]     string  page i's pageview counter  (i = 1 .. #ARGV - 1)
-- KEYS[2 + 2i]     HLL     page i's visitors
-- ARGV[1]          a fresh token
-- ARGV[1 + i]      page i's path: the index's members, as the caller read them
--
-- Returns the staging hash (HGETALL), an earlier one if it is still there; or nil when
-- the index no longer holds exactly those paths (events came meanwhile: read it again).
if redis.call('EXISTS', KEYS[2]) == 1 then
  return redis.call('HGETALL', KEYS[2])
end
local n = #ARGV - 1
if redis.call('SCARD', KEYS[1]) ~= n then
  return nil
end
for i = 1, n do
  if redis.call('SISMEMBER', KEYS[1], ARGV[1 + i]) == 0 then
    return nil
  end
end
redis.call('HSET', KEYS[2], '\0token', ARGV[1])
for i = 1, n do
  local views = tonumber(redis.call('GET', KEYS[1 + 2 * i]) or '0')
  local people = redis.call('PFCOUNT', KEYS[2 + 2 * i])
  redis.call('HSET', KEYS[2], ARGV[1 + i], views .. ' ' .. people)
  redis.call('UNLINK', KEYS[1 + 2 * i], KEYS[2 + 2 * i])
end
redis.call('UNLINK', KEYS[1])
return redis.call('HGETALL', KEYS[2])
