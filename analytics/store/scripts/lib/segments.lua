-- lib/segments.lua: the per-value visitor bitmaps that make filtered counts exact, for
-- record_batch.lua.
--
-- Why bitmaps: a filter ("source is Google and country is Germany") is a set of visitors;
-- with one bit per dense visitor id a day, the set is a BITOP AND of the values' bitmaps
-- and its size a BITCOUNT, exact, where HLLs can only estimate intersections. A bitmap
-- costs up to (largest id) / 8 bytes whatever its number of visitors, so a day keeps one
-- for only the first `limit` values of each dimension (pages, custom events, custom property
-- values by event, and each visit dimension); the values that arrive first in a day are nearly always its top values (the
-- big sources, countries and browsers show up within minutes), and the rest are served
-- from HLLs and marked as estimates (analytics/queries/segments.py). Values the site
-- pins (its goals' pages and events, its funnels' steps) always get one.
--
-- Keys, named from the dimension keys' prefix and the ISO day (all in the site's slot):
--   <prefix><day>:bitmapped       set   the fields that have a bitmap that day
--   <prefix><day>:bitmap-sizes    hash  dimension -> its number of bitmaps that day
--   <prefix><day>:bitmap-only     set   the visit values whose day HLL is not kept: their
--                                 bitmap holds every visitor of their day (below)
--   <prefix><day>:b:<field>       bitmap bit <dense id> set: that visitor counted under
--                                 the field that day
--   `pinned`                      set   fields that always get a bitmap (no day)

-- Why a value's bitmap may stand in for its day HLL: both hold the same visitors, and a
-- dense HLL is 12 KB a value a day, about a tenth of a day's memory (measured: 3.5 of 34 B
-- a visitor on a 300,000-visitor day). Only where the site's HLLs count dense ids (not
-- digests: record_batch.lua), so that a range which needs the HLL can have it made from
-- the bitmap (analytics/counts/fold.py), and only for a value whose bitmap has all its
-- visitors: one that got it on its first visitor of the day (its HLL does not exist yet).
-- A value that gets its bitmap later (pinned at noon, or a limit raised) keeps its HLL.
-- Pages and custom events keep theirs (their week and month unions read them).
--
-- `candidates`: a list of {field, visitor indexes} (maybe repeated), `dense` the dense id
-- of each visitor index; adds each visitor to its field's bitmap where the field has one,
-- or may have one now. `deferrable`: the fields whose day HLL waits for this (visit
-- values, where the HLLs count ids). Returns the set of those that need no HLL.
local SEP, SLICE, call_sliced = PROTOCOL.FIELD_VALUE_SEP, util.SLICE, util.call_sliced

local function mark_segments(prefix, day, candidates, dense, limit, pinned, deferrable)
  local n = #candidates
  local hll_free = {}
  if n == 0 then return hll_free end
  local set_key, sizes_key, only_key =
    KEY.dimension_bitmapped(prefix, day), KEY.dimension_bitmap_sizes(prefix, day), KEY.dimension_bitmap_only(prefix, day)
  local fields, weight = {}, {}  -- (weight: a field's visitors in this call)
  for i = 1, n do
    local f = candidates[i][1]
    fields[i] = f
    weight[f] = (weight[f] or 0) + #candidates[i][2]
  end
  local has, new_by_dim, dims, ask = {}, {}, {}, {}
  for i = 1, n, SLICE do
    local known = redis.call('SMISMEMBER', set_key, unpack(fields, i, math.min(i + SLICE - 1, n)))
    for k = 1, #known do
      local f = fields[i + k - 1]
      if known[k] == 1 then
        if deferrable[f] and not has[f] then ask[#ask + 1] = f end
        has[f] = true
      elseif not new_by_dim[f] then
        local dim = string.sub(f, 1, string.find(f, SEP, 1, true) - 1)
        local list = new_by_dim[dim]
        if not list then list = {}; new_by_dim[dim] = list; dims[#dims + 1] = dim end
        list[#list + 1] = f
        new_by_dim[f] = true  -- (a field named twice in the candidates is listed once)
      end
    end
  end
  for i = 1, #ask, SLICE do
    local only = redis.call('SMISMEMBER', only_key, unpack(ask, i, math.min(i + SLICE - 1, #ask)))
    for k = 1, #only do
      if only[k] == 1 then hll_free[ask[i + k - 1]] = true end
    end
  end
  if #dims > 0 then
    local sizes = redis.call('HMGET', sizes_key, unpack(dims))
    local freed = {}
    -- A value given its bitmap now needs no HLL if this is its first visitor of the day:
    -- it has no HLL yet (one that has was seen before without a bitmap: a limit raised).
    local function free_if_first(f)
      if deferrable[f] and redis.call('EXISTS', KEY.dimension_visitors(prefix, day, f)) == 0 then
        hll_free[f] = true
        freed[#freed + 1] = f
      end
    end
    local add, late = {}, {}
    for d, dim in ipairs(dims) do
      local new = new_by_dim[dim]
      -- Which values of one call still fit: the most visited first (a batch, an import or
      -- a drained inbox brings a day's values all at once: its top values are the ones
      -- filters need), then by name, so the same call decides the same way every time.
      table.sort(new, function(a, b)
        if weight[a] ~= weight[b] then return weight[a] > weight[b] end
        return a < b
      end)
      local room = limit - (tonumber(sizes[d]) or 0)
      local granted = 0
      for _, f in ipairs(new) do
        if room > 0 then
          room = room - 1
          granted = granted + 1
          has[f] = true
          add[#add + 1] = f
          free_if_first(f)
        else
          late[#late + 1] = f
        end
      end
      if granted > 0 then redis.call('HINCRBY', sizes_key, dim, granted) end
    end
    if #late > 0 and pinned ~= '' then  -- past the limit: only the site's pinned values (one look for every dimension)
      for i = 1, #late, SLICE do
        local is_pinned = redis.call('SMISMEMBER', pinned, unpack(late, i, math.min(i + SLICE - 1, #late)))
        for k = 1, #is_pinned do
          if is_pinned[k] == 1 then
            local f = late[i + k - 1]
            has[f] = true
            add[#add + 1] = f
            free_if_first(f)
          end
        end
      end
    end
    if #add > 0 then call_sliced('SADD', set_key, add) end
    if #freed > 0 then call_sliced('SADD', only_key, freed) end
  end
  local bits = {}  -- field -> BITFIELD arguments
  for i = 1, n do
    local f, indexes = candidates[i][1], candidates[i][2]
    if has[f] then
      local args = bits[f]
      if not args then args = {}; bits[f] = args end
      local a = #args
      for j = 1, #indexes do
        args[a + 1] = 'SET'; args[a + 2] = 'u1'; args[a + 3] = dense[indexes[j]]; args[a + 4] = 1
        a = a + 4
      end
    end
  end
  for f, args in pairs(bits) do
    local key = KEY.dimension_bitmap(prefix, day, f)
    for i = 1, #args, 4 * 1000 do
      redis.call('BITFIELD', key, unpack(args, i, math.min(i + 4 * 1000 - 1, #args)))
    end
  end
  return hll_free
end

return {mark = mark_segments}
