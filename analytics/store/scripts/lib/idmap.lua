-- lib/idmap.lua: the stable visitor-id map (digest -> dense id), for record_batch.lua.
--
-- Why buckets: one big hash costs 53 (Valkey 9.1) to 80 (Redis 6.2) bytes per visitor,
-- and it only grows. Small hashes stay in the servers' compact listpack encoding (up to
-- hash-max-listpack-entries, 512 by default on Redis 6.2, 8.2 and Valkey 9.1; a listpack is
-- searched field by field, so the buckets stay far smaller), ~15 bytes per visitor. The map is cut into
-- buckets by linear hashing: the bucket count grows one bucket at a time as the id counter
-- grows (IDMAP_LOAD entries per bucket on average), each split moving half of one bucket,
-- so no bucket nears 128 (small even on a server configured for 128) and no call rehashes
-- the map.
--
-- Why 7 bytes of the digest: a field's bytes are most of an entry's cost (measured over
-- 300,000 visitors on Valkey 9.1: 18.0 bytes a visitor with 10 bytes kept, 15.1 with 7).
-- Two visitors whose digests share their first 56 bits would share an id; the expected
-- number of such pairs among n visitors ever seen is n^2 / 2^57: 7e-6 at a million, 7e-4
-- at ten million, 0.07 at a hundred million (each one counts two people as one).
--
-- Keys, named from the map's base key `base` (store/keys.py names the same):
--   base .. ':b' .. n   hash    the first IDMAP_FIELD bytes of a digest -> its id (bucket n)
--   base .. ':buckets'  string  the number of buckets (1 when missing)
--   base .. ':narrow'   string  set once no bucket holds a field of IDMAP_WIDE bytes (the
--                               width before): until then a visitor missing under the
--                               short field is looked up under the wide one, and moves
--   base                hash    the map of before the buckets (full digests): read on a
--                               miss, and each visitor found there moves to its bucket
-- A bucket is addressed from the digest's first four bytes (h): a = h mod L, or h mod 2L
-- when bucket a is split already, L the largest power of two not above the bucket count.
-- Every width keeps those four bytes, so a split places short and wide fields alike.

local IDMAP_LOAD = 48   -- average entries per bucket: the fullest stay far below 128
local IDMAP_FIELD = 7   -- digest bytes kept
local IDMAP_WIDE = 10   -- digest bytes the buckets kept before

local function idmap_hash(digest)
  local a, b, c, d = string.byte(digest, 1, 4)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local function idmap_shape(base)
  local got = redis.call('MGET', base .. ':buckets', base .. ':narrow')
  local buckets = tonumber(got[1]) or 1
  local level = 1
  while level * 2 <= buckets do level = level * 2 end
  return {base = base, buckets = buckets, level = level, wide = not got[2]}
end

-- Key the wide fields of `entries` ({field, id, field, id...}, all in bucket `key`) by their
-- first IDMAP_FIELD bytes; the wide ones leave first, so the bucket never grows past its
-- size (a listpack pushed past the server's limit would stay a big hash for good).
local function idmap_shorten(key, entries)
  if #entries == 0 then return end
  local gone, put = {}, {}
  for j = 1, #entries, 2 do
    gone[#gone + 1] = entries[j]
    put[j] = string.sub(entries[j], 1, IDMAP_FIELD); put[j + 1] = entries[j + 1]
  end
  redis.call('HDEL', key, unpack(gone))
  redis.call('HSET', key, unpack(put))
end

-- Call once the first ids of the map are handed out (`first`, the first of them): a map
-- that starts empty never holds a wide field.
local function idmap_started(shape, first)
  if first == 0 and shape.wide then
    redis.call('SET', shape.base .. ':narrow', 1)
    shape.wide = false
  end
end

local function idmap_bucket(shape, digest)  -- (a number: the key is named once per bucket)
  local h = idmap_hash(digest)
  local a = h % shape.level
  if a < shape.buckets - shape.level then a = h % (2 * shape.level) end
  return a
end

-- Write {digest, id} pairs into their buckets.
local function idmap_put(shape, entries)
  local by_bucket = {}
  for _, e in ipairs(entries) do
    local bucket = idmap_bucket(shape, e[1])
    local list = by_bucket[bucket]
    if not list then list = {}; by_bucket[bucket] = list end
    list[#list + 1] = string.sub(e[1], 1, IDMAP_FIELD)
    list[#list + 1] = e[2]
  end
  for bucket, list in pairs(by_bucket) do redis.call('HSET', shape.base .. ':b' .. bucket, unpack(list)) end
end

-- The ids of `digests` (a table: index -> id, nil for a visitor without one), one HMGET
-- per bucket they fall in; visitors still in the map of before move to their buckets.
local function idmap_get(shape, digests)
  local by_bucket = {}
  for i, digest in ipairs(digests) do
    local bucket = idmap_bucket(shape, digest)
    local list = by_bucket[bucket]
    if not list then list = {}; by_bucket[bucket] = list end
    list[#list + 1] = i
  end
  local ids, missing = {}, {}
  for bucket, indexes in pairs(by_bucket) do
    local key, fields = shape.base .. ':b' .. bucket, {}
    for k, i in ipairs(indexes) do fields[k] = string.sub(digests[i], 1, IDMAP_FIELD) end
    local got = redis.call('HMGET', key, unpack(fields))
    local absent = {}
    for k, i in ipairs(indexes) do
      if got[k] then ids[i] = tonumber(got[k]) else absent[#absent + 1] = i end
    end
    if shape.wide and #absent > 0 then  -- (a bucket written before the short fields)
      local wide = {}
      for k, i in ipairs(absent) do wide[k] = string.sub(digests[i], 1, IDMAP_WIDE) end
      local found = redis.call('HMGET', key, unpack(wide))
      local moving = {}
      for k, i in ipairs(absent) do
        if found[k] then
          ids[i] = tonumber(found[k])
          moving[#moving + 1] = wide[k]; moving[#moving + 1] = found[k]
        else
          missing[#missing + 1] = i
        end
      end
      idmap_shorten(key, moving)
    else
      for _, i in ipairs(absent) do missing[#missing + 1] = i end
    end
  end
  if #missing > 0 and redis.call('EXISTS', shape.base) == 1 then
    local names = {}
    for k, i in ipairs(missing) do names[k] = digests[i] end
    local got = redis.call('HMGET', shape.base, unpack(names))
    local moved, gone = {}, {}
    for k, i in ipairs(missing) do
      if got[k] then
        ids[i] = tonumber(got[k])
        moved[#moved + 1] = {digests[i], got[k]}
        gone[#gone + 1] = digests[i]
      end
    end
    if #gone > 0 then
      idmap_put(shape, moved)
      redis.call('HDEL', shape.base, unpack(gone))
    end
  end
  return ids
end

-- Split buckets until the map has one per IDMAP_LOAD of `count` ids handed out.
local function idmap_grow(shape, count)
  local target = math.ceil(count / IDMAP_LOAD)
  if target <= shape.buckets then return end
  local buckets, level = shape.buckets, shape.level
  while buckets < target do
    local split = buckets - level
    local from = shape.base .. ':b' .. split
    local all = redis.call('HGETALL', from)
    local move, gone = {}, {}
    for j = 1, #all, 2 do
      if idmap_hash(all[j]) % (2 * level) ~= split then
        move[#move + 1] = all[j]; move[#move + 1] = all[j + 1]
        gone[#gone + 1] = all[j]
      end
    end
    if #gone > 0 then
      redis.call('HSET', shape.base .. ':b' .. (split + level), unpack(move))
      redis.call('HDEL', from, unpack(gone))
    end
    buckets = buckets + 1
    if buckets == 2 * level then level = 2 * level end
  end
  shape.buckets, shape.level = buckets, level
  redis.call('SET', shape.base .. ':buckets', buckets)
end
