-- expire_day.lua: set the expiry policy's EXPIREATs on one day's raw keys of a site
-- (analytics/rollups/expiry.py apply(), which decides the times).
-- KEYS[1]: the site's base (keys.site_prefix), KEYS[2]: its dimensions' base
--   (keys.dimensions_prefix), KEYS[3]: the site's fold-due set; KEYS[4..]: the day's
--   "daily" family keys (keys.daily_family).
-- ARGV: the ISO day, the daily family's time, the page family's, the segments' (Unix
--   seconds), "1" if the segments' time comes before the daily one's, the day's number
--   (the fold-due score).
-- Every index is read before any key gets its time (a time in the past drops the key at
-- once). Returns the number of keys given a time.
--
-- Why Lua: no atomicity; a day has a few thousand raw keys named from its indexes, and a
-- rollup of 60 days named 172,000 of them in Python, sent them one by one through
-- a script per 5,000 of them, and read the indexes back first: 1.2 s of a 6.2 s rollup at 1,000,000
-- events, and the nightly re-application of the policy to every final day costs the same.
local base, dims, fold_due = KEYS[1], KEYS[2], KEYS[3]
local day, daily_at, page_at, segment_at = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local segment_first, score = ARGV[5] == '1', ARGV[6]

local events = redis.call('SMEMBERS', KEY.events_index(base, day))
local props = redis.call('SMEMBERS', KEY.props_index(base, day))
local pages = redis.call('SMEMBERS', KEY.pages_index(base, day))
local fields = redis.call('SMEMBERS', KEY.dimension_fields(dims, day))
local bitmapped = redis.call('SMEMBERS', KEY.dimension_bitmapped(dims, day))
local unfolded = redis.call('EXISTS', KEY.dimension_bitmap_only(dims, day), KEY.dimension_folding(dims, day)) > 0

local n = 0
local function expire(key, at)
  redis.call('EXPIREAT', key, at)
  n = n + 1
end

for i = 4, #KEYS do expire(KEYS[i], daily_at) end
for _, name in ipairs(events) do
  expire(KEY.event_count(base, day, name), daily_at)
  expire(KEY.event_visitors(base, day, name), daily_at)
end
for _, group in ipairs(props) do
  expire(KEY.prop_count(base, day, group), daily_at)
  expire(KEY.prop_visitors(base, day, group), daily_at)
end
expire(KEY.pages_index(base, day), page_at)
for _, path in ipairs(pages) do
  expire(KEY.page_visitors(base, day, path), page_at)
  expire(KEY.page_pageviews(base, day, path), page_at)
end
expire(KEY.dimension_counts(dims, day), daily_at)
expire(KEY.dimension_fields(dims, day), daily_at)
expire(KEY.dimension_sizes(dims, day), daily_at)
for _, field in ipairs(fields) do expire(KEY.dimension_visitors(dims, day, field), daily_at) end
expire(KEY.dimension_bitmap_only(dims, day), daily_at)
expire(KEY.dimension_folding(dims, day), daily_at)
-- Values whose bitmap stands in for their HLL keep their bitmaps until folded (fold_due()).
local bitmaps_at = segment_at
if unfolded and segment_first then
  bitmaps_at = daily_at
  redis.call('ZADD', fold_due, score, day)
end
expire(KEY.dimension_bitmapped(dims, day), bitmaps_at)
expire(KEY.dimension_bitmap_sizes(dims, day), bitmaps_at)
for _, field in ipairs(bitmapped) do expire(KEY.dimension_bitmap(dims, day, field), bitmaps_at) end
return n
