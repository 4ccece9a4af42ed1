-- and_rows.lua: the filtered visitors of breakdown rows (analytics/queries/filtered.py).
-- KEYS[1], KEYS[2]: two scratch keys of the site, deleted before the script returns;
--   then, for each row, its days' pairs: the segment's day bitmap, the value's day bitmap.
-- ARGV: for each row, its number of day pairs.
-- Returns, for each row, {visitors over its days (BITCOUNT of the OR of the days' ANDs),
--   each day's visitors (BITCOUNT of the day's AND)}.
--
-- Why Lua: no atomicity; a filtered breakdown counts up to 200 values over 30 days, each an
-- AND per day and their OR, ~12,000 commands through a pipeline (BITOP, PEXPIRE, BITCOUNT,
-- UNLINK) whose client side cost more than the bitmaps' work in the server; here they are
-- a few calls, and the scratch keys never outlive a call.
local part, acc = KEYS[1], KEYS[2]
local out = {}
local at = 3
for row = 1, #ARGV do
  local days = tonumber(ARGV[row])
  local daily = {}
  for d = 1, days do
    local dest = d == 1 and acc or part
    redis.call('BITOP', 'AND', dest, KEYS[at], KEYS[at + 1])
    daily[d] = redis.call('BITCOUNT', dest)
    if d > 1 then
      redis.call('BITOP', 'OR', acc, acc, part)
    end
    at = at + 2
  end
  local union = days > 0 and redis.call('BITCOUNT', acc) or 0
  out[row] = {union, daily}
end
redis.call('DEL', part, acc)
return out
