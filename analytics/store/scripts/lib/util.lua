-- Helpers every ingest library shares (a module: lib files are pasted in front of a
-- script, each inside its own function, their exports in the table it returns).

-- redis.call(command, key, ...) over a long list in slices (Lua's unpack() is bounded).
local SLICE = 3000
local function call_sliced(command, key, list)
  for i = 1, #list, SLICE do
    redis.call(command, key, unpack(list, i, math.min(i + SLICE - 1, #list)))
  end
end

-- PFADD to an HLL the elements (record_batch.lua) of the visitors at these indexes.
local function pfadd_indexes(key, elements, indexes)
  local chosen = {}
  for j = 1, #indexes do chosen[j] = elements[indexes[j]] end
  call_sliced('PFADD', key, chosen)
end

-- t[k], made an empty table first if there is none.
local function child(t, k)
  local v = t[k]
  if not v then v = {}; t[k] = v end
  return v
end

-- Split `text` on the one-character `sep` (plain find and sub: faster than gmatch here).
local function split(text, sep)
  local out, i, n = {}, 1, 0
  if text == '' then return out end
  while true do
    local j = string.find(text, sep, i, true)
    n = n + 1
    if not j then out[n] = string.sub(text, i); return out end
    out[n] = string.sub(text, i, j - 1)
    i = j + 1
  end
end

return {SLICE = SLICE, call_sliced = call_sliced, pfadd_indexes = pfadd_indexes, child = child, split = split}
