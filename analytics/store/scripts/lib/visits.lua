-- lib/visits.lua: visits (sessions) and the visit dimensions, for record_batch.lua.
--
-- Why in the ingest call: whether an event starts a visit depends on the visitor's last
-- event, which another request may just have written; reading that state, deciding, and
-- counting must be one atomic step, and one round trip.
--
-- Plausible's definitions: a visit ends after `timeout` seconds without an event from the
-- visitor; it is a bounce while it has at most one pageview and no interactive custom
-- event; its duration is its last event's time minus its first's; its entry page is its
-- first event's path, its exit page its last pageview's. A visit carries the dimension
-- fields of its first event (source, device, location... and "entry_page"), and every
-- count of the visit goes under each of them:
--   pageviews, visitors (HLL)   on the day of the event
--   visits, bounces, duration   on the day the visit started (a visit that crosses
--                               midnight goes on adding to that day, marked dirty)
--   exits                       visits by exit page, on the day the visit started
-- An event more than `timeout` before the visit we hold for its visitor (an old day
-- backfilled while newer events exist) is counted as a visit of its own and leaves the
-- held visit alone.
--
-- A visit's state: "start|last|pageviews|bounce|start day|day last counted|exit page",
-- then FIELD_SEP and its fields text: parts joined by GROUP_SEP, each part's fields
-- joined by FIELD_SEP (TOTAL, which every visit has, is left out); each field is
-- "<dimension>SEP<value>" (analytics/dimensions.py). States live in one hash per half
-- hour of the clock (KEYS: this one and the one before), so each expires on its own.
--
-- Quotas: a day keeps at most `quota` distinct values per dimension (a set per day and
-- dimension); past it, new values count under "(other)".

local SEP, FIELD_SEP, OTHER_VALUE = '\31', '\30', '(other)'
local TOTAL = 'total' .. SEP .. 'all'  -- every visit counts here too: the site's totals (its visitors are uv:<day>)

-- redis.call(command, key, ...) over a long list in slices (Lua's unpack() is bounded).
local SLICE = 3000
local function call_sliced(command, key, list)
  for i = 1, #list, SLICE do
    redis.call(command, key, unpack(list, i, math.min(i + SLICE - 1, #list)))
  end
end

local GROUP_SEP = '\29'  -- between the parts of a visit's fields text (source, device, location...)

-- A visit's fields text is made of parts (its source fields, its device fields, its
-- location, its entry page...), and visits share parts far more often than whole texts. So
-- counts are kept per part, and each distinct part is split into its fields once per call.
local parts_by_text, fields_by_part = {}, {[TOTAL] = {TOTAL}}
local function parts_of(text)
  local parts = parts_by_text[text]
  if not parts then
    parts = {}
    local i, n = 1, 0
    while true do  -- (plain find and sub: several times faster than gmatch here)
      local j = string.find(text, GROUP_SEP, i, true)
      n = n + 1
      if not j then parts[n] = string.sub(text, i); break end
      parts[n] = string.sub(text, i, j - 1)
      i = j + 1
    end
    parts[n + 1] = TOTAL
    parts_by_text[text] = parts
  end
  return parts
end
local function fields_of(part)
  local fields = fields_by_part[part]
  if not fields then
    fields = {}
    for f in string.gmatch(part, '[^\30]+') do fields[#fields + 1] = f end
    fields_by_part[part] = fields
  end
  return fields
end

local function parse_state(raw)
  local start, last, pv, bounce, start_day, seen_day, exit, text =
    string.match(raw, '^(%d+)|(%d+)|(%d+)|(%d)|([^|]*)|([^|]*)|([^\30]*)\30?(.*)$')
  return {start = tonumber(start), last = tonumber(last), pv = tonumber(pv), bounce = tonumber(bounce),
          start_day = start_day, seen_day = seen_day, exit = exit, text = text}
end

local function dump_state(st)
  return st.start .. '|' .. st.last .. '|' .. st.pv .. '|' .. st.bounce .. '|' .. st.start_day .. '|' .. st.seen_day .. '|'
    .. st.exit .. FIELD_SEP .. st.text
end

-- Count this chunk's visits. `digests` are the chunk's visitor digests (1-based indexes
-- as in the event list); `day` its ISO day; `pos` where the visits section starts in ARGV:
--   session TTL (s), timeout (s), quota, the dimension keys' prefix,
--   P, then P pairs: visitor index, the same visitor's digest under yesterday's salt
--       (daily-salt sites: a visit goes on across the salt change), 
--   A, then A attribute strings (a first event's fields, joined by FIELD_SEP),
--   E, then E events in time order, 5 values each: visitor index, unix time (s),
--       kind ("p" pageview, "i" interactive custom event, "n" other), path, attribute index
-- `dirty_key` is the set of days the rollups must compute again.
local function record_visits(digests, day, pos, sessions_now, sessions_before, dirty_key)
  local session_ttl, timeout, quota, prefix = ARGV[pos], tonumber(ARGV[pos + 1]), tonumber(ARGV[pos + 2]), ARGV[pos + 3]
  pos = pos + 4
  local previous = {}
  local np = tonumber(ARGV[pos])
  for j = 1, np do previous[tonumber(ARGV[pos + 2 * j - 1])] = ARGV[pos + 2 * j] end
  pos = pos + 2 * np + 1
  local na = tonumber(ARGV[pos])
  local attrs = {}
  for j = 1, na do attrs[j] = ARGV[pos + j] end
  pos = pos + na + 1
  local ne = tonumber(ARGV[pos])
  pos = pos + 1
  if ne == 0 then return end

  -- The visitors of these events, and the visits we hold for them.
  local order, seen = {}, {}
  for e = 1, ne do
    local vi = tonumber(ARGV[pos + 5 * (e - 1)])
    if not seen[vi] then seen[vi] = true; order[#order + 1] = vi end
  end
  local ids = {}
  for k, vi in ipairs(order) do ids[k] = digests[vi] end
  local raw = redis.call('HMGET', sessions_now, unpack(ids))
  local missing, look = {}, {}
  for k = 1, #order do
    if not raw[k] then missing[#missing + 1] = k; look[#look + 1] = ids[k] end
  end
  if #missing > 0 then
    local older = redis.call('HMGET', sessions_before, unpack(look))
    local again, names = {}, {}
    for x, k in ipairs(missing) do
      raw[k] = older[x]
      if not raw[k] and previous[order[k]] then again[#again + 1] = k; names[#names + 1] = previous[order[k]] end
    end
    if #again > 0 then
      local a = redis.call('HMGET', sessions_now, unpack(names))
      local b = redis.call('HMGET', sessions_before, unpack(names))
      for x, k in ipairs(again) do raw[k] = a[x] or b[x] end
    end
  end
  local states = {}
  for k, vi in ipairs(order) do
    if raw[k] then states[vi] = parse_state(raw[k]) end
  end

  -- Counts are kept by part (many visits share one) and spread over the parts' fields once,
  -- at the end: a visit's event costs an addition per part, not one per field.
  local by_text = {}   -- day -> table -> part -> number
  local exits = {}     -- day -> exit page field -> number
  local seen_by_text = {}  -- part -> digests of visitors to count on this day
  local dirty = {}
  local function add(on, tbl, text, n)
    local by_table = by_text[on]
    if not by_table then by_table = {}; by_text[on] = by_table end
    local t = by_table[tbl]
    if not t then t = {}; by_table[tbl] = t end
    local parts = parts_of(text)
    for i = 1, #parts do
      local part = parts[i]
      t[part] = (t[part] or 0) + n
    end
  end
  local function add_exit(on, path, n)
    local t = exits[on]
    if not t then t = {}; exits[on] = t end
    local f = 'exit_page' .. SEP .. path
    t[f] = (t[f] or 0) + n
  end
  local function count_visitor(text, digest)
    local parts = parts_of(text)
    for i = 1, #parts - 1 do  -- (not TOTAL, the last: the site's visitors are its own HLL)
      local list = seen_by_text[parts[i]]
      if not list then list = {}; seen_by_text[parts[i]] = list end
      list[#list + 1] = digest
    end
  end
  -- A new visit's fields text: its first event's attributes and its entry page.
  local function text_of(ai, path)
    local a = attrs[ai]
    return (a ~= '' and a .. GROUP_SEP or '') .. 'entry_page' .. SEP .. path
  end

  for e = 1, ne do
    local b = pos + 5 * (e - 1)
    local vi, ts, kind, path, ai = tonumber(ARGV[b]), tonumber(ARGV[b + 1]), ARGV[b + 2], ARGV[b + 3], tonumber(ARGV[b + 4])
    local st = states[vi]
    if st and ts < st.last - timeout then
      -- an old event beside a newer visit: a visit of its own
      local text = text_of(ai, path)
      add(day, 'visits', text, 1)
      if kind == 'p' then
        add(day, 'bounces', text, 1)
        add(day, 'pageviews', text, 1)
        add_exit(day, path, 1)
      end
      count_visitor(text, digests[vi])
    else
      if not st or ts - st.last > timeout then
        st = {start = ts, last = ts, pv = 0, bounce = kind == 'i' and 0 or 1, start_day = day, seen_day = '',
              exit = '', text = text_of(ai, path)}
        states[vi] = st
        add(day, 'visits', st.text, 1)
        if st.bounce == 1 then add(day, 'bounces', st.text, 1) end
      else
        if ts > st.last then
          add(st.start_day, 'duration', st.text, ts - st.last)
          st.last = ts
        end
        if st.bounce == 1 and (kind == 'i' or (kind == 'p' and st.pv >= 1)) then
          st.bounce = 0
          add(st.start_day, 'bounces', st.text, -1)
        end
      end
      if kind == 'p' then
        st.pv = st.pv + 1
        add(day, 'pageviews', st.text, 1)
        if st.exit ~= path then
          if st.exit ~= '' then add_exit(st.start_day, st.exit, -1) end
          add_exit(st.start_day, path, 1)
          st.exit = path
        end
      end
      if st.seen_day ~= day then
        st.seen_day = day
        count_visitor(st.text, digests[vi])
      end
    end
  end

  -- Spread the counts over the fields.
  local counts = {[day] = {}}   -- day -> table -> field -> number
  for on, by_table in pairs(by_text) do
    local c = counts[on]
    if not c then c = {}; counts[on] = c end
    for tbl, t in pairs(by_table) do
      local sums = c[tbl]
      if not sums then sums = {}; c[tbl] = sums end
      for part, n in pairs(t) do
        local fields = fields_of(part)
        for i = 1, #fields do
          local f = fields[i]
          sums[f] = (sums[f] or 0) + n
        end
      end
    end
  end
  for on, t in pairs(exits) do
    local c = counts[on]
    if not c then c = {}; counts[on] = c end
    c['exits'] = t
  end
  local visitors = {}  -- field -> digests (this day)
  for part, list in pairs(seen_by_text) do
    local fields = fields_of(part)
    for i = 1, #fields do
      local into = visitors[fields[i]]
      if not into then into = {}; visitors[fields[i]] = into end
      local n = #into
      for j = 1, #list do into[n + j] = list[j] end
    end
  end

  local save, s = {}, 0
  for k, vi in ipairs(order) do
    save[s + 1] = ids[k]; save[s + 2] = dump_state(states[vi]); s = s + 2
  end
  call_sliced('HSET', sessions_now, save)
  redis.call('EXPIRE', sessions_now, session_ttl)

  -- Quotas, then the writes, day by day.
  for on, by_table in pairs(counts) do
    local values = {}  -- dimension -> {value, ...}
    local listed = {}
    local function note(f)
      if not listed[f] and f ~= TOTAL then  -- (no quota for the totals)
        listed[f] = true
        local cut = string.find(f, SEP, 1, true)
        local dim = string.sub(f, 1, cut - 1)
        values[dim] = values[dim] or {}
        table.insert(values[dim], string.sub(f, cut + 1))
      end
    end
    for _, t in pairs(by_table) do for f in pairs(t) do note(f) end end
    if on == day then for f in pairs(visitors) do note(f) end end
    local rename = {}
    for dim, vals in pairs(values) do
      local set_key = prefix .. on .. ':vals:' .. dim
      local room = quota - redis.call('SCARD', set_key)
      if room >= #vals then
        call_sliced('SADD', set_key, vals)
      else
        table.sort(vals)  -- (which new values of one call still fit: decided the same way every time)
        for _, v in ipairs(vals) do
          if redis.call('SISMEMBER', set_key, v) == 0 then
            if room > 0 then
              room = room - 1
              redis.call('SADD', set_key, v)
            else
              rename[dim .. SEP .. v] = dim .. SEP .. OTHER_VALUE
              redis.call('SADD', set_key, OTHER_VALUE)
            end
          end
        end
      end
    end
    for tbl, t in pairs(by_table) do  -- one HMGET and one HSET a table, not an HINCRBY a field
      local names, adds = {}, {}
      for f, n in pairs(t) do
        if n ~= 0 then
          local name = rename[f] or f
          if adds[name] then adds[name] = adds[name] + n else names[#names + 1] = name; adds[name] = n end
        end
      end
      if #names > 0 then
        local key = prefix .. on .. ':' .. tbl
        local set = {}
        for i = 1, #names, SLICE do
          local slice = {unpack(names, i, math.min(i + SLICE - 1, #names))}
          local old = redis.call('HMGET', key, unpack(slice))
          for j, name in ipairs(slice) do
            set[#set + 1] = name
            set[#set + 1] = (tonumber(old[j]) or 0) + adds[name]
          end
        end
        call_sliced('HSET', key, set)
      end
    end
    if on == day then
      for f, list in pairs(visitors) do
        call_sliced('PFADD', prefix .. on .. ':v:' .. (rename[f] or f), list)
      end
    end
    if on ~= day then dirty[on] = true end
  end
  for d in pairs(dirty) do redis.call('SADD', dirty_key, d) end
end
