-- record_batch.lua: count one day's chunk of a batch (up to ~1,000 distinct visitors).
--
-- Why Lua: bitmaps need small dense offsets, so each visitor digest gets the next id of a
-- per-site counter, and reading the map and handing out ids must be one atomic step (two
-- requests racing on a new visitor must not give out two ids, and exactly one of them
-- must count the visitor as new). The chunk's per-key writes ride in the same call:
-- measured, redis-py spends ~10 µs of client CPU per pipelined command, against ~1 µs
-- per redis.call here, and a batch touches hundreds of page keys.
--
-- Exactly once: a call may carry a mark (the id of the request or spooled record, and
-- the chunk's number). The mark is added to a set in the same atomic step as the counts,
-- so a retry or a spool replay of a call that Redis already applied changes nothing.
--
-- New visitors follow the first day seen, whatever the arrival order: in stable-salt mode
-- each visitor's first day (days since 2000-01-01) is kept as runs of ids (lib/firstdays.lua). A
-- visitor is new on the day their id is handed out, unless events for an earlier day
-- arrive later (a backfill): then the "new" bit moves to the earlier day, and both days
-- are marked dirty for the rollups. The older day's bitmap is named from new_visitors_prefix (its
-- key shares the site's hash tag, so it sits in the same cluster slot as every KEY here).
--
-- Arguments: sections (store/protocol.py, RECORD_BATCH; lib/chunk.lua reads them). ARGV[1]
-- is the section table; then, by section, its named values and keys (read as V.<section>_
-- <name> and K.<section>_<name>), then its records:
--   head      id_ttl: TTL in seconds of a daily-salt day's id map and its counter (0: the
--               stable map, which does not expire); track_new: "1" to track new visitors
--               (stable salt), "0" not to (daily salt: all are new); mark: this call's mark
--               in `applied`, "" for none (a second call with it does nothing); mark_ttl;
--               day_number: the day as days since 2000-01-01; day: the same, ISO;
--               new_visitors_prefix: an older day's new-visitor bitmap is this and its ISO
--               day; dirty: "1" to mark the day dirty (it may have been rolled up
--               already); closed: "1" for a day before the writer's today (its
--               counter in closed_epochs moves: queries/kept.py); digests: the distinct visitors'
--               digests, 16 bytes each, as one string; pageviews: the chunk's pageviews.
--             keys: visitor_ids (a daily-salt day's hash digest -> dense id, or the base
--               name of the bucketed stable map, lib/idmap.lua), visitor_id_counter,
--               active (the day's bitmap), new_visitors (bitmap; untouched without
--               track_new), site_visitors (HLL), pageviews, pages_index and events_index
--               (the day's sets of names), page_search (zset, paths all scored 0 for
--               ZRANGEBYLEX, capped), live_tick (exists for a second after a publish),
--               first_days (their base name, lib/firstdays.lua), dirty_days (set of ISO
--               days the rollups must compute again), closed_epochs (hash: ISO day -> a counter),
--               applied (marks of applied calls),
--               page_rank (the paths scored by pageviews, all time: the least
--               visited leave the search index over its cap), latest_first_day (a chunk of
--               a day not before it cannot move anyone, and skips reading first days)
--   limits    records: interval_ms, burst, cost, and the bucket's key (lib/gcra.lua)
--   dropped   key hash: the day's events not counted, by reason; records: reason, count
--   pages     quota: the day's quota of distinct paths; keys: the HLL and counter of
--               "(other)", where names past the quota count; records: path, pageviews,
--               visitors (1-based indexes into the digests, u16 big-endian, concatenated),
--               and the group's HLL of visitors and its counter
--   events    the same for custom event names
--   property_groups  the quotas of values per property, of property names per event, and
--               of properties and values a day; keys: the day's set of groups and the
--               hash of each property's number of values; records ("event SEP property
--               SEP value"): name, count, visitors, the index of its property in
--               `properties`, and the group's HLL and counter
--   properties  records ("event SEP property"; each event's "(other)" among them): name,
--               and its "(other)" group's HLL and counter
--   revenue   key hash: the day's revenue; records: "event SEP currency", hundredths
--   places    key geo: the day's GEO set; records: longitude, latitude, city
--   minutes   ttl of the realtime HLLs; records: visitors, and the minute's HLL
--   hours     records: pageviews, visitors, and the hour's HLL and pageview counter
--   search    cap: the page-search cap; channel: to publish a live tick on ("" for none)
--   visits, previous, parts, attrs, paths  (lib/visits.lua); the visits section's prefix,
--               segment_values and pinned are read by lib/segments.lua too (the bitmaps
--               of kept pages, custom events and visit fields, for exact filters)
--
-- Returns {ids newly assigned, pageviews added, new visitors moved to this day};
-- {-1, 0, 0} when the mark was there already; {-2, ms to wait, 0} when a rate limit
-- refused the call (then nothing was written).
local GC_WAIT_VISITORS = 100
local SEP = PROTOCOL.FIELD_VALUE_SEP
--@section rate limits, exactly-once mark
local S = chunk.read(PROTOCOL.RECORD_BATCH)
local V, K = S.v, S.k  -- (the call's named values and keys: V.head_day, K.head_active)
if S.limits.n > 0 then
  local wait = gcra.from_args(S.limits.n, S.limits.key_at - 1, S.limits.at - 1)
  if wait > 0 then return {-2, wait, 0} end
end
if V.head_mark ~= '' then
  if redis.call('SADD', K.head_applied, V.head_mark) == 0 then return {-1, 0, 0} end
  redis.call('EXPIRE', K.head_applied, V.head_mark_ttl)
end
for j = 1, S.dropped.n do
  local reason, count = chunk.record(S.dropped, j)
  redis.call('HINCRBY', K.dropped_hash, reason, count)
end
if V.head_dirty == '1' then redis.call('SADD', K.head_dirty_days, V.head_day) end
if V.head_closed == '1' then redis.call('HINCRBY', K.head_closed_epochs, V.head_day, 1) end

-- Days since 2000-01-01 as an ISO date (the civil-from-days algorithm, proleptic
-- Gregorian), to name an older day's keys.
local function iso_day(number)
  local z = number + 10957 + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return string.format('%04d-%02d-%02d', y, m, d)
end

local packed = V.head_digests
local n = #packed / 16
local digests = {}
for i = 1, n do digests[i] = string.sub(packed, 16 * i - 15, 16 * i) end
local pageviews = tonumber(V.head_pageviews)
if n == 0 then return {0, 0, 0} end  -- a day of dropped events only
-- Why the collector waits in a big call: a call of hundreds of visitors builds tables
-- that all live until its end, and Lua's incremental collector, paced by allocation,
-- marks them again and again while they grow; one full cycle at the end, when they are
-- garbage, costs less (measured: 2-5% of a 1,000-event call). Small calls leave it
-- alone: a full cycle would be most of their time. (A call cut short by an error leaves
-- it stopped only until the server's own periodic GC step: within 60 calls, measured.)
local gc_waits = n >= GC_WAIT_VISITORS
if gc_waits then collectgarbage('stop') end
-- Daily-salt maps (they expire with their day) stay one hash; the stable map, which only
-- grows, is bucketed (lib/idmap.lua), and costs a look-up per bucket: a visitor in the
-- middle of a visit (most events) has their id in its state, read first, and skips it.
local daily_map = tonumber(V.head_id_ttl) > 0
--@section open visits read (the ids of visitors mid-visit)
local open = visits.read_open(digests, K.visits_sessions_now, K.visits_sessions_before)
--@section visitor-id map: look-ups
local shape = not daily_map and idmap.shape(K.head_visitor_ids) or nil
local ids
if daily_map then
  ids = redis.call('HMGET', K.head_visitor_ids, unpack(digests))
else
  ids = {}
  local ask, asked = {}, {}
  for i = 1, n do
    local id = visits.state_id(open[i])
    if id then ids[i] = id else ask[#ask + 1] = digests[i]; asked[#asked + 1] = i end
  end
  if #ask > 0 then
    local found = idmap.get(shape, ask)
    for k, i in ipairs(asked) do ids[i] = found[k] end
  end
end
local track_new = V.head_track_new == '1'
local this_day = tonumber(V.head_day_number)

local missing, m = {}, 0
for i = 1, n do
  if not ids[i] then m = m + 1; missing[m] = i end
end
--@section visitor-id map: new ids
if m > 0 then
  local first = redis.call('INCRBY', K.head_visitor_id_counter, m) - m
  local pairs_, entries = {}, {}
  for j = 1, m do
    local i = missing[j]
    local id = first + j - 1
    ids[i] = id
    pairs_[2 * j - 1] = digests[i]
    pairs_[2 * j] = id
    entries[j] = {digests[i], id}
  end
  if daily_map then
    redis.call('HSET', K.head_visitor_ids, unpack(pairs_))
  else
    idmap.started(shape, first)
    idmap.grow(shape, first + m - 1)  -- (first: the new ids go to the buckets they will live in)
    idmap.put(shape, entries)
  end
end

-- New visitors: fresh ids are new today; a known visitor whose first day is later than
-- this one (a backfill arriving after newer events) moves here.
--@section new visitors, first days
local moved = 0
if track_new then
  local latest = tonumber(redis.call('GET', K.head_latest_first_day)) or 0
  if m > 0 then firstdays.handed(K.head_first_days, ids[missing[1]], this_day) end
  local new_bits, c = {}, 0
  local function new_here(id)
    new_bits[c + 1] = 'SET'; new_bits[c + 2] = 'u1'; new_bits[c + 3] = id; new_bits[c + 4] = 1
    c = c + 4
  end
  for j = 1, m do new_here(ids[missing[j]]) end
  if this_day < latest then  -- a backfill: someone known may have been first seen later
    local is_fresh, known = {}, {}
    for j = 1, m do is_fresh[missing[j]] = true end
    for i = 1, n do
      if not is_fresh[i] then known[#known + 1] = ids[i] end
    end
    local firsts = firstdays.get(K.head_first_days, known)
    local later, earlier = {}, {}  -- older day (ISO) -> ids whose "new" bit leaves it; the ids moved here
    for _, id in ipairs(known) do
      local first = firsts[id]
      if first > this_day then  -- (0: seen before first days were kept; left alone)
        new_here(id)
        earlier[#earlier + 1] = id
        local day = iso_day(first)
        later[day] = later[day] or {}
        table.insert(later[day], id)
        moved = moved + 1
      end
    end
    if moved > 0 then firstdays.move(K.head_first_days, earlier, this_day) end
    for day, moved_ids in pairs(later) do
      local clear = {}
      for x, id in ipairs(moved_ids) do
        clear[4 * x - 3] = 'SET'; clear[4 * x - 2] = 'u1'; clear[4 * x - 1] = id; clear[4 * x] = 0
      end
      redis.call('BITFIELD', V.head_new_visitors_prefix .. day, unpack(clear))
      redis.call('SADD', K.head_dirty_days, day, V.head_day)
    end
  elseif m > 0 and this_day > latest then
    redis.call('SET', K.head_latest_first_day, this_day)
  end
  if c > 0 then redis.call('BITFIELD', K.head_new_visitors, unpack(new_bits)) end
end
local ttl = tonumber(V.head_id_ttl)
if ttl > 0 then
  redis.call('EXPIRE', K.head_visitor_ids, ttl)
  redis.call('EXPIRE', K.head_visitor_id_counter, ttl)
end

-- What the site's HLLs count: a visitor's dense id where the map started in this version
-- (shape.id_elements), else their digest. An id can be read back out of a visitor bitmap,
-- a digest cannot: so a value's day bitmap can stand in for its day HLL (lib/segments.lua,
-- analytics/counts/fold.py), and be folded into one when a range needs it. Sites from
-- before keep digests: a union over days counted both ways would count a returning
-- visitor twice. Daily-salt maps give a visitor a new id every day, as their digests do.
local elements = digests
if shape and shape.id_elements then
  elements = {}
  for i = 1, n do elements[i] = string.format('%d', ids[i]) end
end

--@section active bitmap, site HLL, pageviews
local set = {}
for i = 1, n do
  local b = 4 * i
  set[b - 3] = 'SET'; set[b - 2] = 'u1'; set[b - 1] = ids[i]; set[b] = 1
end
redis.call('BITFIELD', K.head_active, unpack(set))
redis.call('PFADD', K.head_site_visitors, unpack(elements))

if pageviews > 0 then redis.call('INCRBY', K.head_pageviews, pageviews) end

-- Add the visitors listed in `listed` to an HLL: 1-based indexes into the elements, two
-- bytes each, big-endian (string.byte reads them: far cheaper than parsing decimals).
local byte = string.byte
local function pfadd_listed(key, listed)
  local chosen, c = {}, 0
  for k = 1, #listed, 2 do
    local high, low = byte(listed, k, k + 1)
    c = c + 1
    chosen[c] = elements[high * 256 + low]
  end
  util.call_sliced('PFADD', key, chosen)
end

-- A group: a name (page path or event name) for the day's index set, a count for the
-- group's counter, and the indexes of its visitors for the group's HLL. Past the day's
-- quota of distinct names, a new name is counted under "(other)" instead: its events and
-- visitors still count, its name costs no more keys. Returns the names kept, and their
-- counts.
local OTHER = PROTOCOL.OTHER
local segment_candidates = {}  -- {field, visitor indexes} of the kept pages and events (lib/segments.lua)
local function listed_indexes(listed)
  local out, c = {}, 0
  for k = 1, #listed, 2 do
    local high, low = byte(listed, k, k + 1)
    c = c + 1
    out[c] = high * 256 + low
  end
  return out
end
local function groups(name, index_key, dimension)
  local section = S[name]
  local count, quota = section.n, tonumber(V[name .. '_quota'])
  local kept, counts, by_index, past = {}, {}, {}, {}
  if count == 0 then return kept, counts, quota, by_index, past end
  local room = quota - redis.call('SCARD', index_key)  -- new names that still fit
  local checked = room < count  -- near the quota: look at each name
  local other, other_count = {}, 0
  local record, record_keys = chunk.record, chunk.record_keys
  for g = 1, count do
    local name, n, listed = record(section, g)
    local fits = true
    if checked then
      if redis.call('SISMEMBER', index_key, name) == 0 then
        fits = room > 0
        if fits then
          room = room - 1
          redis.call('SADD', index_key, name)
        end
      end
    end
    by_index[g] = fits and name or false
    if fits then
      local hll, counter = record_keys(section, g)
      pfadd_listed(hll, listed)
      redis.call('INCRBY', counter, n)
      segment_candidates[#segment_candidates + 1] = {dimension .. SEP .. name, listed_indexes(listed)}
      kept[#kept + 1] = name
      counts[#counts + 1] = n
    else
      past[name] = true
      other[#other + 1] = listed
      other_count = other_count + tonumber(n)
    end
  end
  if not checked then redis.call('SADD', index_key, unpack(kept)) end
  if other_count > 0 then
    pfadd_listed(K[name .. '_other_visitors'], table.concat(other))
    redis.call('INCRBY', K[name .. '_other_count'], other_count)
    redis.call('SADD', index_key, OTHER)
  end
  return kept, counts, quota, by_index, past
end
--@section pages and custom events
local pages, page_counts, page_quota = groups('pages', K.head_pages_index, 'page')
local _, _, _, event_names, events_past = groups('events', K.head_events_index, 'event')  -- (group index -> name, false past the quota)

-- Property groups ("event SEP property SEP value"): the quota is per property (an
-- unbounded property must not take the others' room), and past it a value counts under
-- its own property's "(other)" group. Property names are capped too: at most
-- `names_quota` a day per event, past which a property's groups all count under the
-- event's "(other)" property ("event SEP (other) SEP (other)"; the caller sends that
-- property, with no groups, for every event of the call), and the day's properties and
-- kept values together at most `total_quota` (then new names and new values go to
-- "(other)" as above); the properties of an event past the day's event-name quota count
-- under the "(other)" event's "(other)" property (the caller sends it with the rest): what
-- random names and values can cost a site-day is bounded.
-- The day's kept groups are one set; one hash holds each property's number of kept
-- values, each event's number of kept names (field: the event's name), and the day's
-- total of both (field: "").
local function property_groups(section, properties, events_past)
  local index_key, sizes_key = K.property_groups_index, K.property_groups_sizes
  local count, quota = section.n, tonumber(V.property_groups_value_quota)
  local names_quota, total_quota = tonumber(V.property_groups_name_quota), tonumber(V.property_groups_total_quota)
  if count == 0 then return end
  local list = {}
  for g = 1, count do
    local name, n, listed, prop = chunk.record(section, g)
    local hll, counter = chunk.record_keys(section, g)
    list[g] = {name = name, n = n, listed = listed, prop = tonumber(prop), hll = hll, counter = counter}
  end
  local props = {}
  for j = 1, properties.n do
    local hll, counter = chunk.record_keys(properties, j)
    props[j] = {name = chunk.record(properties, j), hll = hll, counter = counter, other = {}, other_n = 0}
  end
  -- The properties the day has room for: those it has (a field of sizes_key), each
  -- event's "(other)", and new ones while their event has room and the day's total lasts.
  local total_room = total_quota - (tonumber(redis.call('HGET', sizes_key, '')) or 0)
  local spent = 0
  local by_name, pnames = {}, {}
  for j, p in ipairs(props) do by_name[p.name] = j; pnames[j] = p.name end
  local admitted, other_of, new_by_event, gone = {}, {}, {}, {}
  for i = 1, #props, util.SLICE do
    local had = redis.call('HMGET', sizes_key, unpack(pnames, i, math.min(i + util.SLICE - 1, #props)))
    for k = 1, #had do
      local j = i + k - 1
      local event = string.sub(props[j].name, 1, string.find(props[j].name, SEP, 1, true) - 1)
      other_of[j] = by_name[event .. SEP .. OTHER] or j
      if events_past[event] then
        other_of[j] = by_name[OTHER .. SEP .. OTHER] or other_of[j]  -- (never admitted: its groups go there)
        gone[j] = true
      elseif had[k] or other_of[j] == j then
        admitted[j] = true
      else
        local waiting = new_by_event[event]
        if not waiting then waiting = {}; new_by_event[event] = waiting end
        waiting[#waiting + 1] = j
      end
    end
  end
  for event, waiting in pairs(new_by_event) do
    table.sort(waiting, function(a, b) return props[a].name < props[b].name end)  -- (the same choice every time)
    local room = names_quota - (tonumber(redis.call('HGET', sizes_key, event)) or 0)
    local add = {}
    for _, j in ipairs(waiting) do
      if room > 0 and total_room > 0 then
        room, total_room = room - 1, total_room - 1
        admitted[j] = true
        add[#add + 1] = props[j].name; add[#add + 1] = 0
      end
    end
    if #add > 0 then
      redis.call('HSET', sizes_key, unpack(add))
      redis.call('HINCRBY', sizes_key, event, #add / 2)
      spent = spent + #add / 2
    end
  end
  local names = {}
  for g = 1, count do names[g] = list[g].name end
  local fits, new_by_prop = {}, {}
  for i = 1, count, util.SLICE do
    local known = redis.call('SMISMEMBER', index_key, unpack(names, i, math.min(i + util.SLICE - 1, count)))
    for k = 1, #known do
      local g = i + k - 1
      if known[k] == 1 then
        fits[g] = not gone[list[g].prop]  -- (a kept value of an event now past the quota: to "(other)")
      elseif admitted[list[g].prop] then
        local waiting = new_by_prop[list[g].prop]
        if not waiting then waiting = {}; new_by_prop[list[g].prop] = waiting end
        waiting[#waiting + 1] = g
      end
    end
  end
  for j, waiting in pairs(new_by_prop) do
    local room = quota - (tonumber(redis.call('HGET', sizes_key, props[j].name)) or 0)
    table.sort(waiting, function(a, b) return list[a].name < list[b].name end)  -- (the same choice every time)
    local add = {}
    for _, g in ipairs(waiting) do
      if room > 0 and total_room > 0 then
        room, total_room = room - 1, total_room - 1
        fits[g] = true
        add[#add + 1] = list[g].name
      end
    end
    if #add > 0 then
      redis.call('SADD', index_key, unpack(add))
      redis.call('HINCRBY', sizes_key, props[j].name, #add)
      spent = spent + #add
    end
  end
  if spent > 0 then redis.call('HINCRBY', sizes_key, '', spent) end
  for g = 1, count do
    local group = list[g]
    if fits[g] then
      pfadd_listed(group.hll, group.listed)
      redis.call('INCRBY', group.counter, group.n)
      -- (a kept value's visitors, for filters on custom properties: "prop" SEP the group)
      segment_candidates[#segment_candidates + 1] = {'prop' .. SEP .. group.name, listed_indexes(group.listed)}
    else  -- (past its property's quota: the property's "(other)"; a property past the names': the event's)
      local p = props[admitted[group.prop] and group.prop or other_of[group.prop]]
      p.other[#p.other + 1] = group.listed
      p.other_n = p.other_n + tonumber(group.n)
    end
  end
  for _, p in ipairs(props) do
    if p.other_n > 0 then
      pfadd_listed(p.hll, table.concat(p.other))
      redis.call('INCRBY', p.counter, p.other_n)
      redis.call('SADD', index_key, p.name .. SEP .. OTHER)
    end
  end
end
--@section properties, revenue
property_groups(S.property_groups, S.properties, events_past)

-- Revenue: "event SEP currency" -> hundredths.
for j = 1, S.revenue.n do
  local key, hundredths = chunk.record(S.revenue, j)
  redis.call('HINCRBY', K.revenue_hash, key, hundredths)
end

--@section realtime minutes, hours
-- Realtime: the visitors of each recent minute, in short-lived HLLs.
for j = 1, S.minutes.n do
  local hll = chunk.record_keys(S.minutes, j)
  pfadd_listed(hll, chunk.record(S.minutes, j))
  redis.call('EXPIRE', hll, V.minutes_ttl)
end

-- Hours of the day: visitors (HLL) and pageviews, for the Today and Yesterday charts.
for j = 1, S.hours.n do
  local views, listed = chunk.record(S.hours, j)
  local hll, counter = chunk.record_keys(S.hours, j)
  pfadd_listed(hll, listed)
  if tonumber(views) > 0 then redis.call('INCRBY', counter, views) end
end

--@section page search index
-- Page search: the paths in a set of equal scores for prefix search (ZRANGEBYLEX), and
-- in a set scored by pageviews; over the cap, the least visited paths leave both.
local cap, channel = tonumber(V.search_cap), V.search_channel
if #pages > 0 then
  if redis.call('EXISTS', K.head_page_rank) == 0 and redis.call('EXISTS', K.head_page_search) == 1 then  -- (nearly always one call)
    redis.call('ZUNIONSTORE', K.head_page_rank, 1, K.head_page_search)  -- (an index from before the ranking)
  end
  local members = {}
  for i, path in ipairs(pages) do
    redis.call('ZINCRBY', K.head_page_rank, page_counts[i], path)
    members[2 * i - 1] = 0
    members[2 * i] = path
  end
  local added = redis.call('ZADD', K.head_page_search, 'NX', unpack(members))
  local over = added > 0 and redis.call('ZCARD', K.head_page_search) - cap or 0  -- (no new path: the size did not change)
  if over > 0 then
    local popped = redis.call('ZPOPMIN', K.head_page_rank, over)
    local gone = {}
    for i = 1, #popped, 2 do gone[#gone + 1] = popped[i] end
    redis.call('ZREM', K.head_page_search, unpack(gone))
  end
end

--@section visits: arguments, open states parsed
-- Visits and the visit dimensions.
local bitmap_only = elements ~= digests
local page_kept = {}  -- (the paths within the day's page quota: a visit's pages past it are "(other)")
for _, path in ipairs(pages) do page_kept[path] = true end
local visit_candidates, deferred = visits.record(digests, elements, bitmap_only, ids, open, not daily_map, V.head_day, S,
                                                 K.head_dirty_days, K.head_closed_epochs, page_kept, page_quota,
                                                 event_names)
for _, c in ipairs(visit_candidates) do segment_candidates[#segment_candidates + 1] = c end
--@section segments: a bitmap per value
local deferrable = {}
for _, d in ipairs(deferred) do deferrable[d[1]] = true end
local hll_free = segments.mark(V.visits_prefix, V.head_day, segment_candidates, ids, tonumber(V.visits_segment_values), V.visits_pinned,
                               deferrable)
for _, d in ipairs(deferred) do  -- (the visit values whose bitmap does not hold all their visitors keep an HLL)
  if not hll_free[d[1]] then util.pfadd_indexes(d[2], elements, d[3]) end
end
--@section places, live tick
-- Places: the day's cities at their coordinates (GEOADD longitude latitude member), now
-- that the visits have settled which cities the day's quota keeps: only cities with
-- their own visitors that day (not past the quota, under "(other)").
if S.places.n > 0 then
  local kept_fields = KEY.dimension_fields(V.visits_prefix, V.head_day)
  local add = {}
  for j = 1, S.places.n do
    local longitude, latitude, city = chunk.record(S.places, j)
    if redis.call('SISMEMBER', kept_fields, 'city' .. SEP .. city) == 1 then
      add[#add + 1] = longitude; add[#add + 1] = latitude; add[#add + 1] = city
    end
  end
  if #add > 0 then redis.call('GEOADD', K.places_geo, unpack(add)) end
end

-- Live dashboards: one tick a second at most, whatever the traffic.
if channel ~= '' and redis.call('SET', K.head_live_tick, 1, 'NX', 'PX', 1000) then
  redis.call('PUBLISH', channel, 1)
end
--@section Lua's collector (one full cycle after a big call)
if gc_waits then
  collectgarbage('restart')
  collectgarbage('collect')
end
return {m, pageviews, moved}
