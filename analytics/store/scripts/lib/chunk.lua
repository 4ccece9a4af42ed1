-- lib/chunk.lua: a call's arguments as sections (store/protocol.py: Section, Call). ARGV[1]
-- is the section table Call wrote: where each section starts in ARGV and in KEYS, in the
-- layout's order, then one past the last of each. The sections' named values and keys are
-- read into two tables, as "<section>_<name>" (by a reader the prelude has written out for
-- the layout); records stay where they are, read with record() and record_keys() in the
-- order the layout names their values (the hot loops index ARGV directly, no table a
-- record).

-- This call's {v = named values, k = named keys, exact (checked here), and by the name of each section with
-- records: {n = records, at = ARGV index of the first record, key_at = KEYS index of the
-- first record's keys, width, key_width}}. `layout` is the prelude's PROTOCOL.<script>.
-- A table that does not add up is an error, before any write.
local function read(layout)
  local t = {struct.unpack(layout.format, ARGV[1])}  -- (its last value: where unpack stopped)
  if t[#t - 2] ~= #ARGV + 1 or t[#t - 1] ~= #KEYS + 1 then
    error('the section table ends at ' .. t[#t - 2] .. ' and ' .. t[#t - 1] .. ': not with ARGV and KEYS, not whole records')
  end
  local sections = layout.read(t)
  if not sections.exact then error('a section of named values and keys holds more or fewer: not whole records') end
  for name, s in pairs(sections) do
    if type(s) == 'table' and name ~= 'v' and name ~= 'k' then
      local values, keys, n = s.stop - s.at, s.key_stop - s.key_at, s.n
      if values < 0 or n ~= math.floor(n) or values ~= n * s.width or keys ~= n * s.key_width then
        error('section ' .. name .. ': ' .. values .. ' values and ' .. keys .. ' keys are not whole records')
      end
    end
  end
  return sections
end

-- The values of a section's g-th record (1-based), in the layout's order.
local function record(s, g)
  local at = s.at + (g - 1) * s.width
  return unpack(ARGV, at, at + s.width - 1)
end

-- The keys of a section's g-th record, in the layout's order.
local function record_keys(s, g)
  local at = s.key_at + (g - 1) * s.key_width
  return unpack(KEYS, at, at + s.key_width - 1)
end

return {read = read, record = record, record_keys = record_keys}
