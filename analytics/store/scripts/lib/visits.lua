-- lib/visits.lua: visits (sessions) and the visit dimensions, for record_batch.lua.
--
-- Why in the ingest call: whether an event starts a visit depends on the visitor's last
-- event, which another request may just have written; reading that state, deciding, and
-- counting must be one atomic step, and one round trip.
--
-- Plausible's definitions: a visit ends after `timeout` seconds without an event from the
-- visitor; it is a bounce while it has at most one pageview and no interactive custom
-- event; its duration is its last event's time minus its first's; its entry page is its
-- first event's path, its exit page its last pageview's (a pageview that arrives late,
-- earlier than the visit's latest event, is counted but does not move the exit). A visit
-- carries the dimension fields of its first event (source, device, location... and
-- "entry_page"; an earlier event counted late takes them over: enter_earlier), and every
-- count of the visit goes under each of them:
--   pageviews, visitors (HLL)   on the day of the event
--   visits, bounces, duration   on the day the visit started (a visit that crosses
--                               midnight goes on adding to that day, marked dirty)
--   exits                       visits by exit page, on the day the visit started
-- and under "visit_page SEP <path>" for each distinct page the visit viewed and
-- "visit_event SEP <name>" for each custom event it sent (at most MAX_VISIT_PAGES of them
-- together; past that, and past the day's page or event-name quota, "(other)"): its
-- visits, bounces and duration on the day the visit started (a page or event the visit
-- reaches later takes the visit's counts so far, then follows it). That is what a page or goal filter's visit metrics are (Plausible's: the
-- visits that include a matching event); these are not visit dimensions (no visitors, no
-- bitmaps: the page's and the event's own are in record_batch.lua).
-- Events before the visit we hold for their visitor join it when they lead into it with
-- no gap over `timeout` (follow_events); older ones (an old day backfilled while newer
-- events exist) make visits of their own by the same rules, within one call, and leave the
-- held visit alone.
--
-- Parts: a visit's fields come in parts (its source fields, its device fields, its
-- location, its screen, its entry page), each a text of fields joined by FIELD_SEP, each
-- field "<dimension>SEP<value>" (analytics/dimensions.py). Visits share parts far more
-- often than whole sets of fields, so a part travels and is stored by a short id (the
-- caller hashes it), counts are kept per part id, and each part is split into its fields
-- once per call. A visit's state is small (see STATE below): its numbers and days packed,
-- its exit page, FIELD_SEP, then its part ids joined by ",". States and the
-- parts' texts live in hashes per half hour of the clock (this one and the one before are
-- read), so they expire on their own.
--
-- Quotas: a day keeps at most `quota` distinct values per dimension (the day's fields in
-- one set, their number per dimension in a hash); past it, new values count under "(other)".

local SEP, FIELD_SEP, OTHER_VALUE = PROTOCOL.FIELD_VALUE_SEP, PROTOCOL.FIELD_SEP, PROTOCOL.OTHER
local SLICE, call_sliced, pfadd_indexes, child, split = util.SLICE, util.call_sliced, util.pfadd_indexes, util.child, util.split
local PAGEVIEW, INTERACTIVE = string.byte('p'), string.byte('i')  -- (event kinds, as sent)
local OTHER_SUFFIX = SEP .. OTHER_VALUE  -- (a field of the value "(other)": it gets no bitmap)
local TOTAL = 'total' .. SEP .. 'all'  -- every visit counts here too: the site's totals (its visitors are uv:<day>)
local TOTAL_ID = '*'  -- the part every visit has, holding TOTAL alone (never sent, never stored)
local VISIT_PAGE, VISIT_EVENT = 'visit_page', 'visit_event'  -- (analytics/dimensions.py)
local MAX_VISIT_PAGES = 32  -- distinct pages and events a visit is counted under (the state keeps their part ids)

-- A visit's state, packed: a version byte (2; 1 before a bounce's duration was 0, see
-- step()), start and last (u32 unix seconds),
-- pageviews (u16), bounce (u8), start day and day last counted (10 characters, "-" padded
-- when none), the visitor's dense id plus one (u32; 0 for none: a daily map's ids), then
-- the exit page, FIELD_SEP, the part ids, and (when the visit has viewed a page since
-- states had them) FIELD_SEP and its pages' part ids, "+" ending the list of a visit
-- that viewed more than MAX_VISIT_PAGES. (struct.unpack is several times faster than
-- matching a pattern, and the states are read and written once per visitor per call.)
-- States written before the version byte (their first byte is the start time's high byte,
-- never 1) have no id and are read too: a visit open across an upgrade goes on.
local STATE, STATE_V0 = '>BIIHBc10c10I', '>IIHBc10c10'
local STATE_ID_AT = struct.size('>BIIHBc10c10') + 1  -- (where STATE's id starts: state_id reads it alone)
-- A dimension field's numbers on a day: pageviews, visits, bounces, duration (s), exits,
-- signed 64-bit little-endian (analytics/counts/dimensions.py reads them).
local COUNTS = PROTOCOL.COUNTS
local TABLE_SLOT = {pageviews = 1, visits = 2, bounces = 3, duration = 4, exits = 5}
local NO_DAY = '----------'

-- Why widen: a server keeps a hash of up to hash-max-listpack-entries fields (512 by
-- default on Redis 6.2, 8.2 and Valkey 9.1) in one listpack, and HMGET and HSET search a
-- listpack field by field: a busy day's counts hash has hundreds of fields (measured with
-- ~330: HMGET and HSET took 58 µs of a single event's call, 16 on the same hash as a hash
-- table; the whole call took 7-10% less at 1 to 16 events). A value longer than
-- hash-max-listpack-value (64 by default) turns a hash into a hash table for good, so once
-- the day has more than COUNTS_LISTPACK_MAX fields its total is written once padded
-- (readers read a value's first struct.size(COUNTS) bytes; the next update writes it
-- back unpadded). A small day stays a listpack, which costs less memory. A restart loads a
-- hash that fits back as a listpack: the day's next new value widens it again, and so does
-- the next call counting more than WIDEN_CHECK_FIELDS fields (a drainer's batch; the check
-- costs two redis.calls, a trifle beside such a call; a single event's call skips it).
local COUNTS_LISTPACK_MAX, WIDEN_CHECK_FIELDS = 128, 32
local function widen_counts(key)
  local encoding = redis.call('OBJECT', 'ENCODING', key)
  if encoding and encoding ~= 'hashtable' then
    local total = redis.call('HGET', key, TOTAL) or struct.pack(COUNTS, 0, 0, 0, 0, 0)
    redis.call('HSET', key, TOTAL, total .. string.rep('\0', 65 - #total))
  end
end

local STATE_VERSION = 2
local function parse_state(raw)
  local version, start, last, pv, bounce, start_day, seen_day, id, at
  if string.byte(raw, 1) <= STATE_VERSION then
    version, start, last, pv, bounce, start_day, seen_day, id, at = struct.unpack(STATE, raw)
  else
    start, last, pv, bounce, start_day, seen_day, at = struct.unpack(STATE_V0, raw)
  end
  local cut = string.find(raw, FIELD_SEP, at, true)
  local cut2 = string.find(raw, FIELD_SEP, cut + 1, true)
  return {start = start, last = last, pv = pv, bounce = bounce, start_day = start_day,
          seen_day = seen_day ~= NO_DAY and seen_day or '', exit = string.sub(raw, at, cut - 1),
          ids = string.sub(raw, cut + 1, cut2 and cut2 - 1 or -1), pages = cut2 and string.sub(raw, cut2 + 1) or '',
          bounce_timed = version ~= STATE_VERSION}  -- (an older state's bounce had its duration counted)
end

local function dump_state(st, id)
  local packed = struct.pack(STATE, STATE_VERSION, st.start, st.last, math.min(st.pv, 65535), st.bounce, st.start_day,
    st.seen_day ~= '' and st.seen_day or NO_DAY, id) .. st.exit .. FIELD_SEP .. st.ids
  local pages = st.pages_changed and table.concat(st.page_list, ',') or st.pages
  return pages ~= '' and packed .. FIELD_SEP .. pages or packed
end

-- The dense id kept in a visit's raw state (nil for none: an old state, a daily map's).
local function state_id(raw)
  if not raw or string.byte(raw, 1) > STATE_VERSION then return nil end
  local id = struct.unpack('>I', raw, STATE_ID_AT)
  if id > 0 then return id - 1 end
end

-- The open visits of the chunk's visitors (raw states by visitor index, nil for none):
-- this half hour's, else the one before's. Read before the ids are looked up (a visitor
-- in the middle of a visit needs no look-up: the state has their id), and handed to
-- record_visits.
local function read_open_visits(digests, sessions_now, sessions_before)
  local raw = redis.call('HMGET', sessions_now, unpack(digests))
  local missing, look = {}, {}
  for i = 1, #digests do
    if not raw[i] then missing[#missing + 1] = i; look[#look + 1] = digests[i] end
  end
  if #missing > 0 then
    local older = redis.call('HMGET', sessions_before, unpack(look))
    for x, i in ipairs(missing) do raw[i] = older[x] end
  end
  return raw
end

-- A call's visits are counted in steps (record_visits, at the end, runs them in order),
-- which share one table `c`: the call's arguments, the parts' texts, and the counts so
-- far, kept by part id and spread over the parts' fields once, at the end (a visit's event
-- costs an addition per part, not one per field).

-- The visits sections' arguments (store/protocol.py, RECORD_BATCH; S from lib/chunk.lua):
--   visits    session_ttl (s), timeout (s), quota, prefix (the dimension keys'), then two
--               read by record_batch.lua (lib/segments.lua): segment_values, pinned; and
--               events: the events in time order, one string of 15-byte records (struct
--               PROTOCOL.EVENT: packed, not decimal, because parsing text was a tenth of
--               the call): visitor index, unix time (s), kind (a letter: "p" pageview,
--               "i" interactive custom event, "n" other), attribute index, path index,
--               and a custom event's index among the chunk's event groups
--               (record_batch.lua: `event_names`; 0 for a pageview).
--             keys: the open visits of this half hour and of the one before
--               (sessions_now, sessions_before), and the hashes of their parts' texts
--               (parts_now, parts_before)
--   previous  records: visitor index, the same visitor's digest under yesterday's salt
--               (daily-salt sites: a visit goes on across the salt change)
--   parts     records: part id, part text (every part the events name)
--   attrs     records: an event's part ids joined by "," (maybe empty)
--   paths     records: a path, the part id of "entry_page SEP path"
local function arguments(S, day, page_kept, event_names)
  local V, K, record = S.v, S.k, chunk.record
  local c = {day = day, page_kept = page_kept, event_names = event_names,
             session_ttl = V.visits_session_ttl, timeout = tonumber(V.visits_timeout), quota = tonumber(V.visits_quota),
             prefix = V.visits_prefix, sessions_now = K.visits_sessions_now, sessions_before = K.visits_sessions_before,
             parts_now = K.visits_parts_now, parts_before = K.visits_parts_before,
             previous = {}, part_text = {}, sent = {}, attrs = {}, paths = {}, entries = {},
             page_ids = {}, event_ids = {},  -- (each path's visit_page part, each event group's visit_event part)
             ids_by_string = {}, fields_by_id = {[TOTAL_ID] = {TOTAL}},
             by_id = {},       -- day -> table -> part id -> number
             by_field = {},    -- day -> table -> field -> number (a visit's pages and events: their part is one field)
             exits = {},       -- day -> exit page field -> number
             seen_by_id = {}}  -- part id -> indexes of visitors to count on this day
  for j = 1, S.previous.n do
    local vi, digest = record(S.previous, j)
    c.previous[tonumber(vi)] = digest
  end
  for j = 1, S.parts.n do
    local id, text = record(S.parts, j)
    c.part_text[id] = text
    c.sent[2 * j - 1] = id; c.sent[2 * j] = text
  end
  for j = 1, S.attrs.n do c.attrs[j] = record(S.attrs, j) end
  for j = 1, S.paths.n do c.paths[j], c.entries[j] = record(S.paths, j) end
  local packed, unpack_event = V.visits_events, struct.unpack
  local ne = #packed / 15
  local ev_visitor, ev_time, ev_kind, ev_attrs, ev_path, ev_event = {}, {}, {}, {}, {}, {}
  local at = 1
  for e = 1, ne do
    ev_visitor[e], ev_time[e], ev_kind[e], ev_attrs[e], ev_path[e], ev_event[e], at = unpack_event(PROTOCOL.EVENT, packed, at)
  end
  c.ne, c.ev_visitor, c.ev_time, c.ev_kind, c.ev_attrs, c.ev_path, c.ev_event = ne, ev_visitor, ev_time, ev_kind, ev_attrs,
                                                                              ev_path, ev_event
  return c
end

-- A part named here by its text (a visit's pages and events; its id a hash of the text,
-- as the caller names the other parts), sent to be kept with the visits that have it.
local function own_part(c, text, id)
  id = id or string.sub(redis.sha1hex(text), 1, 16)
  if not c.part_text[id] then
    local sent = c.sent
    c.part_text[id] = text; sent[#sent + 1] = id; sent[#sent + 1] = text
  end
  return id
end

-- Part ids of a visit, by its ids string (TOTAL_ID last).
local function ids_of(c, s)
  local list = c.ids_by_string[s]
  if not list then
    list = split(s, ',')
    list[#list + 1] = TOTAL_ID
    c.ids_by_string[s] = list
  end
  return list
end

-- The fields of a part.
local function fields_of(c, id)
  local fields = c.fields_by_id[id]
  if not fields then
    fields = split(c.part_text[id] or '', FIELD_SEP)  -- (a part gone with its hash: counted under no field)
    c.fields_by_id[id] = fields
  end
  return fields
end

-- A visit's pages (part ids, in the order viewed) and the same as a set, parsed once.
local function page_list(st)
  local list = st.page_list
  if not list then
    list = split(st.pages, ',')
    local set = {}
    for i = 1, #list do set[list[i]] = true end
    st.page_list, st.page_set = list, set
  end
  return list
end

-- The visitors of the call's events, and the visits held for them: {order = visitor
-- indexes in first-event order, digests, raw = their raw states, carried, states = parsed
-- by visitor index}. A visit carried across a daily salt's change is found under
-- yesterday's digest (`carried`: k -> that digest), under which it is saved too, so
-- that a late event of yesterday finds it as it is now, not as it was at midnight (it
-- would count the visit's duration and its end of bounce again). The parts of the held
-- visits that this call was not sent are read from the parts' hashes.
local function open_visits(c, digests, open)
  local order, seen = {}, {}
  for e = 1, c.ne do
    local vi = c.ev_visitor[e]
    if not seen[vi] then seen[vi] = true; order[#order + 1] = vi end
  end
  local names_of, raw = {}, {}
  for k, vi in ipairs(order) do names_of[k] = digests[vi]; raw[k] = open[vi] end
  local carried, again, names = {}, {}, {}
  for k = 1, #order do
    if not raw[k] and c.previous[order[k]] then again[#again + 1] = k; names[#names + 1] = c.previous[order[k]] end
  end
  if #again > 0 then
    local a = redis.call('HMGET', c.sessions_now, unpack(names))
    local b = redis.call('HMGET', c.sessions_before, unpack(names))
    for x, k in ipairs(again) do
      raw[k] = a[x] or b[x]
      if raw[k] then carried[k] = names[x] end
    end
  end
  local part_text, states, unknown = c.part_text, {}, {}
  for k, vi in ipairs(order) do
    if raw[k] then
      local st = parse_state(raw[k])
      states[vi] = st
      for _, id in ipairs(ids_of(c, st.ids)) do
        if id ~= TOTAL_ID and not part_text[id] and not unknown[id] then unknown[id] = true; unknown[#unknown + 1] = id end
      end
      for _, id in ipairs(page_list(st)) do
        if not part_text[id] and not unknown[id] then unknown[id] = true; unknown[#unknown + 1] = id end
      end
    end
  end
  if #unknown > 0 then  -- parts of visits begun in earlier calls
    local a = redis.call('HMGET', c.parts_now, unpack(unknown))
    local older = {}  -- (only the parts this half hour's hash does not have)
    for x, id in ipairs(unknown) do
      if a[x] then part_text[id] = a[x] else older[#older + 1] = id end
    end
    local kept = {}
    if #older > 0 then
      local b = redis.call('HMGET', c.parts_before, unpack(older))
      for x, id in ipairs(older) do
        part_text[id] = b[x]
        if b[x] then kept[#kept + 1] = id; kept[#kept + 1] = b[x] end
      end
    end
    if #kept > 0 then  -- (a visit outliving an hour keeps its parts: into this half hour's hash)
      call_sliced('HSET', c.parts_now, kept)
      redis.call('EXPIRE', c.parts_now, c.session_ttl)
    end
  end
  return {order = order, digests = names_of, raw = raw, carried = carried, states = states}
end

-- A count of a visit's: under each of its parts.
local function add(c, on, tbl, s, n)
  local t = child(child(c.by_id, on), tbl)
  local list = ids_of(c, s)
  for i = 1, #list do
    local id = list[i]
    t[id] = (t[id] or 0) + n
  end
end
-- A count under one part's one field (a visit's page or event).
local function add_one(c, on, tbl, id, n)
  local f = c.part_text[id]
  if f then
    local t = child(child(c.by_field, on), tbl)
    t[f] = (t[f] or 0) + n
  end
end
-- A visit's visits, bounces or duration: under its fields and under its pages.
local function add_visit(c, on, tbl, st, n)
  add(c, on, tbl, st.ids, n)
  local list = page_list(st)
  if #list > 0 then
    local t, part_text = child(child(c.by_field, on), tbl), c.part_text
    for i = 1, #list do
      local f = part_text[list[i]]
      if f then t[f] = (t[f] or 0) + n end
    end
  end
end
-- A page or event new to the visit takes the visit's counts so far (what the totals
-- hold for it after this event), then follows it; past MAX_VISIT_PAGES, `other` does.
local function join(c, st, id, other)
  local list, set = page_list(st), st.page_set
  if not set[id] and #list >= MAX_VISIT_PAGES then id = other end
  if not set[id] then
    set[id] = true
    list[#list + 1] = id
    st.pages_changed = true
    add_one(c, st.start_day, 'visits', id, 1)
    if st.bounce == 1 then add_one(c, st.start_day, 'bounces', id, 1) end
    local counted = st.bounce == 0 and st.last - st.start or 0
    if counted ~= 0 then add_one(c, st.start_day, 'duration', id, counted) end
  end
  return id
end
-- A pageview of the path at `pi`: the page joins the visit (its pageviews are the page's
-- own, counted in record_batch.lua); a path past the day's page quota joins as "(other)".
local function view_page(c, st, pi)
  local id = c.page_ids[pi]
  if not id then  -- (the path's own id: "p" and its entry part's, which the caller hashed from the path)
    local path = c.paths[pi]
    id = c.page_kept[path] and own_part(c, VISIT_PAGE .. SEP .. path, 'p' .. c.entries[pi]) or c.other_page_id
    c.page_ids[pi] = id
  end
  join(c, st, id, c.other_page_id)
end
-- A custom event of the chunk's event group `gi`: the event joins the visit.
local function send_event(c, st, gi)
  local id = c.event_ids[gi]
  if not id then
    local name = c.event_names[gi]
    id = own_part(c, name and VISIT_EVENT .. SEP .. name or VISIT_EVENT .. OTHER_SUFFIX)
    c.event_ids[gi] = id
  end
  join(c, st, id, c.other_event_id)
end
local function add_exit(c, on, path, n)
  local t = child(c.exits, on)
  local f = 'exit_page' .. SEP .. path
  t[f] = (t[f] or 0) + n
end
-- The visitor counted under a visit's parts (`had`: the part ids to leave out, counted already).
local function count_visitor(c, s, vi, had)
  local list, seen_by_id = ids_of(c, s), c.seen_by_id
  for i = 1, #list - 1 do  -- (not TOTAL_ID, the last: the site's visitors are its own HLL)
    if not (had and had[list[i]]) then
      local into = child(seen_by_id, list[i])
      into[#into + 1] = vi
    end
  end
end

-- A visit's earliest event counted after a later one (batches sent side by side, a log
-- replayed out of order): the visit's fields are its first event's, so what it has counted
-- so far moves from the fields it had to the earlier event's (its visit, bounce, duration
-- so far and pageviews; the exits and the visit's pages are not under its fields), and
-- the visitor is counted under the fields it did not have. Only while the whole visit is on
-- this call's day (its pageviews are all that day's): one that crossed midnight keeps the
-- fields it began with. The visitor stays counted under the fields it leaves: a day's HLL
-- cannot forget a visitor, and the visitor may have had another visit under them that day.
local function enter_earlier(c, st, a, pi, vi, counted)
  local ids = a == '' and c.entries[pi] or a .. ',' .. c.entries[pi]
  if ids == st.ids or st.start_day ~= c.day or st.seen_day ~= c.day then return end
  local old = st.ids
  for tbl, n in pairs({visits = 1, bounces = st.bounce, duration = counted, pageviews = st.pv}) do
    if n ~= 0 then add(c, c.day, tbl, old, -n); add(c, c.day, tbl, ids, n) end
  end
  local had = {}
  for _, id in ipairs(ids_of(c, old)) do had[id] = true end
  count_visitor(c, ids, vi, had)
  st.ids = ids
end

-- One event of a visitor whose visit (or none) is `st`: returns the visit it belongs to.
local function step(c, st, e, vi, ts, kind, pi)
  local day, path = c.day, c.paths[pi]
  local latest = true  -- (the visit's latest event so far: a pageview then is its exit)
  if not st or ts - st.last > c.timeout then
    local a = c.attrs[c.ev_attrs[e]]  -- (a new visit's part ids: its first event's, and its entry page's)
    st = {start = ts, last = ts, pv = 0, bounce = kind == INTERACTIVE and 0 or 1, start_day = day, seen_day = '',
          exit = '', ids = a == '' and c.entries[pi] or a .. ',' .. c.entries[pi], pages = ''}
    add(c, day, 'visits', st.ids, 1)
    if st.bounce == 1 then add(c, day, 'bounces', st.ids, 1) end
  else
    latest = ts >= st.last
    -- A visit's duration is its last event's time less its first's, and 0 while it is a
    -- bounce (a non-interactive event after its one pageview leaves it one): counted is
    -- what the day's total holds for it, before and after this event.
    local counted = (st.bounce == 0 or st.bounce_timed) and st.last - st.start or 0
    if ts > st.last then
      st.last = ts
    elseif ts < st.start then  -- (an earlier event of the visit, late: the visit began then)
      st.start = ts
      enter_earlier(c, st, c.attrs[c.ev_attrs[e]], pi, vi, counted)
    end
    if st.bounce == 1 and (kind == INTERACTIVE or (kind == PAGEVIEW and st.pv >= 1)) then
      st.bounce = 0
      add_visit(c, st.start_day, 'bounces', st, -1)
    end
    st.bounce_timed = nil
    local now_counted = st.bounce == 0 and st.last - st.start or 0
    if now_counted ~= counted then add_visit(c, st.start_day, 'duration', st, now_counted - counted) end
  end
  if kind == PAGEVIEW then
    st.pv = st.pv + 1
    add(c, day, 'pageviews', st.ids, 1)
    view_page(c, st, pi)
    if st.exit ~= path and (latest or st.exit == '') then  -- (a late pageview is not the visit's last)
      if st.exit ~= '' then add_exit(c, st.start_day, st.exit, -1) end
      add_exit(c, st.start_day, path, 1)
      st.exit = path
    end
  elseif c.ev_event[e] > 0 then
    send_event(c, st, c.ev_event[e])
  end
  if st.seen_day ~= day then
    st.seen_day = day
    count_visitor(c, st.ids, vi)
  end
  return st
end

-- Every event in time order. An event before the visit held for its visitor is the
-- visit's when this call's events lead from it to the visit's first with no gap over
-- `timeout` (batches posted side by side, the earlier counted second: the earliest takes
-- the visit over, enter_earlier); older ones (a backfill beside newer traffic) make visits
-- of their own, followed in `past` for this call only, and the held visit stays.
local function follow_events(c, states)
  local ev_visitor, ev_time, ev_kind, ev_path, timeout = c.ev_visitor, c.ev_time, c.ev_kind, c.ev_path, c.timeout
  local joins, cut = {}, {}  -- (visitor -> the earliest time whose events lead into the held visit; whether a gap ends it)
  for e = c.ne, 1, -1 do
    local vi, ts = ev_visitor[e], ev_time[e]
    local st = states[vi]
    if st and ts < st.start and not cut[vi] then
      if (joins[vi] or st.start) - ts <= timeout then joins[vi] = ts else cut[vi] = true end
    end
  end
  local past = {}
  for e = 1, c.ne do
    local vi, ts = ev_visitor[e], ev_time[e]
    local st = states[vi]
    if st and ts < (joins[vi] or st.start) then
      past[vi] = step(c, past[vi], e, vi, ts, ev_kind[e], ev_path[e])
    else
      states[vi] = step(c, st, e, vi, ts, ev_kind[e], ev_path[e])
    end
  end
end

-- The counts kept by part id spread over the parts' fields: day -> table -> field ->
-- number, and the day's visitor indexes by field.
local function spread_counts(c)
  local counts = {[c.day] = {}}
  for on, by_table in pairs(c.by_id) do
    local into = child(counts, on)
    for tbl, t in pairs(by_table) do
      local sums = child(into, tbl)
      for id, n in pairs(t) do
        local fields = fields_of(c, id)
        for i = 1, #fields do
          local f = fields[i]
          sums[f] = (sums[f] or 0) + n
        end
      end
    end
  end
  for on, by_table in pairs(c.by_field) do
    local into = child(counts, on)
    for tbl, t in pairs(by_table) do
      local sums = child(into, tbl)
      for f, n in pairs(t) do sums[f] = (sums[f] or 0) + n end
    end
  end
  for on, t in pairs(c.exits) do
    child(counts, on)['exits'] = t
  end
  local visitors = {}  -- field -> visitor indexes (this day)
  for id, list in pairs(c.seen_by_id) do
    local fields = fields_of(c, id)
    for i = 1, #fields do
      local into = child(visitors, fields[i])
      local n = #into
      for j = 1, #list do into[n + j] = list[j] end
    end
  end
  return counts, visitors
end

-- A day's quotas: the fields that have no room, renamed to their dimension's "(other)"
-- (field -> "(other)" field). A value new to a day's set comes in only with a visit
-- starting under it that day, or as a count of the day's own events (pageviews,
-- visitors); a later update of a visit whose value went to "(other)" at its start (a
-- bounce ended, duration, an exit moved) follows it there, even if the set has room by
-- now: no count goes below zero, and a value's numbers stay those of its own visits.
-- The day's fields are one set, their number per dimension a hash: a call whose values
-- are all known (nearly every one) costs one SMISMEMBER.
local function settle_quotas(c, on, by_table, visitors, page_quota)
  local blocked = {}
  local visits_t = by_table['visits'] or {}
  for tbl, t in pairs(by_table) do
    if tbl ~= 'pageviews' and tbl ~= 'visits' then
      for f, n in pairs(t) do
        if n < 0 or (tbl ~= 'exits' and not ((visits_t[f] or 0) > 0)) then blocked[f] = true end
      end
    end
  end
  local listed, all = {}, {}  -- the fields this call counts on that day (not the totals: no quota)
  local function note(f)
    if not listed[f] and f ~= TOTAL then listed[f] = true; all[#all + 1] = f end
  end
  for _, t in pairs(by_table) do for f in pairs(t) do note(f) end end
  if visitors then for f in pairs(visitors) do note(f) end end
  local fields_key, sizes_key = KEY.dimension_fields(c.prefix, on), KEY.dimension_sizes(c.prefix, on)
  local new_by_dim = {}
  for i = 1, #all, SLICE do
    local slice = {unpack(all, i, math.min(i + SLICE - 1, #all))}
    local known = redis.call('SMISMEMBER', fields_key, unpack(slice))
    for j, f in ipairs(slice) do
      if known[j] == 0 then
        local dim = string.sub(f, 1, string.find(f, SEP, 1, true) - 1)
        local list = child(new_by_dim, dim)
        list[#list + 1] = f
      end
    end
  end
  local rename, grew = {}, false
  for dim, new in pairs(new_by_dim) do
    local room = ((dim == VISIT_PAGE or dim == VISIT_EVENT) and page_quota or c.quota) - (tonumber(redis.call('HGET', sizes_key, dim)) or 0)
    table.sort(new)  -- (which new values of one call still fit: decided the same way every time)
    local other, add_, to_other = dim .. SEP .. OTHER_VALUE, {}, false
    for _, f in ipairs(new) do
      if f == other then  -- ("(other)" itself always has a place)
        add_[#add_ + 1] = f
      elseif room > 0 and not blocked[f] then
        room = room - 1
        add_[#add_ + 1] = f
      else
        rename[f] = other
        to_other = true
      end
    end
    if to_other and not listed[other] and redis.call('SISMEMBER', fields_key, other) == 0 then
      add_[#add_ + 1] = other
    end
    if #add_ > 0 then
      call_sliced('SADD', fields_key, add_)
      redis.call('HINCRBY', sizes_key, dim, #add_)
      grew = true
    end
  end
  if (grew or #all > WIDEN_CHECK_FIELDS) and redis.call('SCARD', fields_key) > COUNTS_LISTPACK_MAX then
    widen_counts(KEY.dimension_counts(c.prefix, on))
  end
  return rename
end

-- A day's counts written: one hash a day, a field's five numbers packed in its value
-- (COUNTS): one HMGET and one HSET for every field of the call, where a hash per number
-- took five of each.
local function write_counts(c, on, by_table, rename)
  local names, adds = {}, {}
  for tbl, t in pairs(by_table) do
    local slot = TABLE_SLOT[tbl]
    for f, n in pairs(t) do
      if n ~= 0 then
        local name = rename[f] or f
        local row = adds[name]
        if not row then row = {0, 0, 0, 0, 0}; adds[name] = row; names[#names + 1] = name end
        row[slot] = row[slot] + n
      end
    end
  end
  if #names == 0 then return end
  local key = KEY.dimension_counts(c.prefix, on)
  local set = {}
  for i = 1, #names, SLICE do
    local slice = {unpack(names, i, math.min(i + SLICE - 1, #names))}
    local old = redis.call('HMGET', key, unpack(slice))
    for j, name in ipairs(slice) do
      local a = adds[name]
      local p, v, b, d, x = 0, 0, 0, 0, 0
      if old[j] then p, v, b, d, x = struct.unpack(COUNTS, old[j]) end
      set[#set + 1] = name
      set[#set + 1] = struct.pack(COUNTS, p + a[1], v + a[2], b + a[3], d + a[4], x + a[5])
    end
  end
  call_sliced('HSET', key, set)
end

-- The day's visitors per value, into each value's HLL (fields renamed to "(other)" share
-- its HLL), and each value's {field, visitor indexes} into `candidates` for
-- lib/segments.lua; with `bitmap_only`, a value's HLL waits for segments' decision (its
-- {field, HLL key, visitor indexes} into `deferred`).
local function count_day_visitors(c, visitors, rename, elements, bitmap_only, candidates, deferred)
  local hll_prefix, renamed = KEY.dimension_visitors(c.prefix, c.day, ''), {}  -- (a field's HLL: this .. field)
  for f, list in pairs(visitors) do
    local name = rename[f]
    if name then
      local into = child(renamed, name)
      local n = #into
      for j = 1, #list do into[n + j] = list[j] end
    elseif string.sub(f, -#OTHER_SUFFIX) ~= OTHER_SUFFIX then
      candidates[#candidates + 1] = {f, list}
      if bitmap_only then deferred[#deferred + 1] = {f, hll_prefix .. f, list} else pfadd_indexes(hll_prefix .. f, elements, list) end
    else
      pfadd_indexes(hll_prefix .. f, elements, list)
    end
  end
  for name, list in pairs(renamed) do pfadd_indexes(hll_prefix .. name, elements, list) end
end

-- A part id's "(other)" part (its fields that went to "(other)" renamed), or false when
-- none of its fields went there; `remade` remembers each.
local function remake(c, over, remade, id)
  local to = remade[id]
  if to == nil then
    to = false
    local fields = fields_of(c, id)
    local changed, out = false, {}
    for i = 1, #fields do
      local f = over[fields[i]]
      out[i] = f or fields[i]
      if f then changed = true end
    end
    if changed then
      local text = table.concat(out, FIELD_SEP)
      to = own_part(c, text, '~' .. string.sub(redis.sha1hex(text), 1, 15))
    end
    remade[id] = to
  end
  return to
end

-- The visits kept open: those an event of another call may continue. Not one begun and
-- ended in this call's middle, `timeout` after its oldest event and before its newest (a
-- backfill's: the next call goes on from its newest, and an earlier one sent after it,
-- out of order, from its oldest); and with them the parts sent for them, not every part
-- the call sent (a path's entry-page part, say). A visit held before is saved as it is
-- now, whatever its age (its state is there already: a stale one must not stay).
-- Why after the quotas (`over`: the day's fields renamed to "(other)"): a visit begun
-- today under a value that went to "(other)" keeps a part whose text says "(other)" (id:
-- its text's hash), not the value's own text. Its later events count there anyway (it is
-- how its start was counted), and random values (a flood of made-up referrers or paths)
-- then share a handful of parts instead of each keeping its text for the visit's life. A
-- visit that crosses midnight counts the next day's pageviews and visitor under
-- "(other)" too, not under the value the next day might have had room for.
local function save_states(c, held, over, dense_ids, keep_ids)
  local remade = {}
  local oldest, newest = c.ev_time[1], c.ev_time[c.ne]  -- (the events come in time order)
  local save, s, needed = {}, 0, {}
  for k, vi in ipairs(held.order) do
    local st = held.states[vi]
    if held.raw[k] or st.last + c.timeout >= newest or st.start - c.timeout <= oldest then
      if over and next(over) and st.start_day == c.day then
        local list, again, changed = ids_of(c, st.ids), {}, false
        for i = 1, #list - 1 do  -- (not TOTAL_ID, the last)
          again[i] = remake(c, over, remade, list[i]) or list[i]
          if again[i] ~= list[i] then changed = true end
        end
        if changed then st.ids = table.concat(again, ',') end
      end
      local state = dump_state(st, keep_ids and dense_ids[vi] + 1 or 0)
      save[s + 1] = held.digests[k]; save[s + 2] = state; s = s + 2
      if held.carried[k] then save[s + 1] = held.carried[k]; save[s + 2] = state; s = s + 2 end
      for _, id in ipairs(ids_of(c, st.ids)) do needed[id] = true end
      for _, id in ipairs(page_list(st)) do needed[id] = true end
    end
  end
  if s > 0 then
    call_sliced('HSET', c.sessions_now, save)
    redis.call('EXPIRE', c.sessions_now, c.session_ttl)
  end
  local kept, n, sent = {}, 0, c.sent
  for j = 1, #sent, 2 do
    if needed[sent[j]] then kept[n + 1] = sent[j]; kept[n + 2] = sent[j + 1]; n = n + 2 end
  end
  if n > 0 then
    call_sliced('HSET', c.parts_now, kept)
    redis.call('EXPIRE', c.parts_now, c.session_ttl)
  end
end

-- Count this chunk's visits. `digests` are the chunk's visitor digests (1-based indexes
-- as in the events), `elements` what the HLLs count of each (record_batch.lua),
-- `bitmap_only` true where a value's day bitmap may stand in for its day HLL (the HLLs
-- count ids: lib/segments.lua decides), `dense_ids` their dense ids, `open` their open
-- visits (read_open_visits), `keep_ids` true to keep the dense ids in the states (the
-- stable map's: a daily map's ids are the day's); `day` its ISO day; S the call's
-- sections (the visits sections are above, at arguments()); `dirty_key` the set of days
-- the rollups must compute again, `epoch_key` the hash of their counters, which move with
-- them (an older day's counts change: queries/kept.py); `page_kept` the paths within the day's page quota,
-- `page_quota` that quota, `event_names` the chunk's event groups' names (false past
-- the day's quota).
-- Returns the day's {field, visitor indexes} of the visitors counted under each field
-- not renamed to "(other)" (for lib/segments.lua), and with `bitmap_only` those of them
-- whose HLL waits for its decision: {field, HLL key, visitor indexes}.
local function record_visits(digests, elements, bitmap_only, dense_ids, open, keep_ids, day, S, dirty_key, epoch_key,
                             page_kept, page_quota, event_names)
  local candidates, deferred = {}, {}
  local c = arguments(S, day, page_kept, event_names)
  if c.ne == 0 then return candidates, deferred end
  -- "(other)"'s parts have fixed ids (not hex: no caller's id is one of them).
  c.other_page_id = own_part(c, VISIT_PAGE .. OTHER_SUFFIX, '~p')
  c.other_event_id = own_part(c, VISIT_EVENT .. OTHER_SUFFIX, '~e')
  local held = open_visits(c, digests, open)
  --@section visits: events in time order
  follow_events(c, held.states)
  --@section visits: counts spread over fields
  local counts, visitors = spread_counts(c)
  -- Quotas, then the writes, day by day.
  local renames, dirty = {}, {}
  for on, by_table in pairs(counts) do
    --@section visits: quotas, packed counts
    renames[on] = settle_quotas(c, on, by_table, on == day and visitors or nil, page_quota)
    write_counts(c, on, by_table, renames[on])
    --@section visits: visitors per value (HLLs)
    if on == day then
      count_day_visitors(c, visitors, renames[on], elements, bitmap_only, candidates, deferred)
    else
      dirty[on] = true
    end
  end
  --@section visits: states saved
  save_states(c, held, renames[day], dense_ids, keep_ids)
  for d in pairs(dirty) do
    redis.call('SADD', dirty_key, d)
    redis.call('HINCRBY', epoch_key, d, 1)
  end
  return candidates, deferred
end

return {state_id = state_id, read_open = read_open_visits, record = record_visits}
