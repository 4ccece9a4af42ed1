-- screen_visitors.lua: which visitors of a batch are past a rate no person reaches
-- (ingest/patterns.py says why and what is done with the answer).
--
-- Why Lua: "count this visitor's pageviews, and flag them the moment they pass the
-- threshold" must be one step, or two drainers counting the same visitor could each
-- see the count below it.
--
-- KEYS[1]  the day's set of flagged visitors; KEYS[2] the window's hash of pageviews
-- ARGV     threshold, the window's TTL (s), the flagged set's TTL (s); then pairs of
--          (visitor, pageviews in this call)
-- Returns, per pair: -1 when the visitor was flagged before this call (drop all of their
-- events), else how many of this call's pageviews passed the threshold (0: none; the
-- visitor is flagged from the first of them on).
local threshold, window_ttl, flag_ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
local flagged = false
for i = 4, #ARGV - 1, 2 do
  local visitor, n = ARGV[i], tonumber(ARGV[i + 1])
  if redis.call('SISMEMBER', KEYS[1], visitor) == 1 then
    out[#out + 1] = -1
  elseif n > 0 then
    local total = redis.call('HINCRBY', KEYS[2], visitor, n)
    if total > threshold then
      redis.call('SADD', KEYS[1], visitor)
      flagged = true
      out[#out + 1] = math.min(n, total - threshold)
    else
      out[#out + 1] = 0
    end
  else
    out[#out + 1] = 0
  end
end
redis.call('EXPIRE', KEYS[2], window_ttl)
if flagged then redis.call('EXPIRE', KEYS[1], flag_ttl) end
return out
