-- lib/idmap.lua: the stable visitor-id map (digest -> dense id), for record_batch.lua.
--
-- Why packed buckets: the map is the one structure that grows with every visitor ever
-- seen. One big hash costs 53 (Valkey 9.1) to 80 (Redis 6.2) bytes per visitor; small
-- listpack hashes cost ~15 (a field and an integer, each with its own header and
-- back-length). A bucket here is one string of fixed-size records, so a visitor costs
-- their record and a share of the key: ~11 bytes. The map is cut into buckets by linear
-- hashing: the bucket count grows one bucket at a time as the id counter grows
-- (IDMAP_LOAD records per bucket on average), each split moving part of one bucket, so
-- no call rehashes the map and every look-up reads one short string.
--
-- A bucket: one byte, the width w of its ids (3 bytes while ids are below 2^24, 4 after),
-- plus 16 when its fields leave out the digest's fourth byte; then records of a field and
-- an id (big-endian). The field is the first IDMAP_FIELD bytes of a digest, or from
-- IDMAP_SHORT_FROM buckets on those bytes less the fourth, which the bucket's number
-- gives (its low 8 bits are the fourth byte's: see the addressing below), so the map
-- tells visitors apart by the same 56 bits in 6 bytes. A string is written whole (SET),
-- so the server holds it at its exact length (an APPEND would leave it room to grow, up
-- to twice its length); a bucket takes the short fields when it is next written.
--
-- Why 7 bytes of the digest: two visitors whose digests share their first 56 bits would
-- share an id; the expected number of such pairs among n visitors ever seen is n^2 / 2^57:
-- 7e-6 at a million, 7e-4 at ten million, 0.07 at a hundred million (each one counts two
-- people as one).
--
-- Keys, named from the map's base key `base` (store/keys.py names the same):
--   base .. ':p' .. n   string  bucket n, packed records (above)
--   base .. ':buckets'  string  the number of buckets (1 when missing)
--   base .. ':packed'   string  set once no bucket is left in an earlier layout; until
--                               then a bucket read as missing is looked for there, and
--                               moves whole
--   base .. ':id-elements'  string  set when the map started empty in this version:
--                               the site's HLLs count dense ids, not digests
--                               (record_batch.lua says why)
--   base .. ':b' .. n   hash    bucket n as earlier versions kept it: digest bytes (7, or
--                               10 before that) -> id
--   base                hash    the map of before the buckets (full digests): read on a
--                               miss, and each visitor found there moves to its bucket
-- A bucket is addressed from the digest's first four bytes (h): a = h mod L, or h mod 2L
-- when bucket a is split already, L the largest power of two not above the bucket count.
-- Every layout keeps those four bytes, so a split places their visitors alike.

local IDMAP_LOAD = 96   -- average records per bucket (~1 KB strings)
local IDMAP_FIELD = 7   -- digest bytes kept
local IDMAP_WIDE3 = 16777216  -- ids from here on take 4 bytes
local IDMAP_SHORT_FROM = 256  -- buckets from which a bucket's number gives its fields' fourth byte

local function idmap_hash(digest)
  local a, b, c, d = string.byte(digest, 1, 4)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local function idmap_shape(base)
  local got = redis.call('MGET', KEY.visitor_id_buckets(base), KEY.visitor_id_packed(base), KEY.visitor_id_elements(base))
  local buckets = tonumber(got[1]) or 1
  local level = 1
  while level * 2 <= buckets do level = level * 2 end
  -- (cache: bucket number -> its string, read or written in this call)
  return {base = base, buckets = buckets, level = level, packed = got[2] and true or false,
          id_elements = got[3] and true or false, cache = {}}
end

-- Call once the first ids of the map are handed out (`first`, the first of them): a map
-- that starts empty never holds a bucket of an earlier layout, and its site's HLLs count
-- ids from the first visitor on.
local function idmap_started(shape, first)
  if first == 0 and not shape.packed then
    redis.call('SET', KEY.visitor_id_packed(shape.base), 1)
    shape.packed = true
  end
  if first == 0 and not shape.id_elements then
    redis.call('SET', KEY.visitor_id_elements(shape.base), 1)
    shape.id_elements = true
  end
end

local function idmap_bucket(shape, digest)  -- (a number: the key is named once per bucket)
  local h = idmap_hash(digest)
  local a = h % shape.level
  if a < shape.buckets - shape.level then a = h % (2 * shape.level) end
  return a
end

local function idmap_id_bytes(id, w)
  local low = string.char(math.floor(id / 65536) % 256, math.floor(id / 256) % 256, id % 256)
  if w == 3 then return low end
  return string.char(math.floor(id / 16777216) % 256) .. low
end

-- A field without its fourth byte (a short field: the bucket's number gives it).
local function idmap_short(field)
  return string.sub(field, 1, 3) .. string.sub(field, 5)
end

-- The id of `w` bytes at position p of `s`.
local function idmap_id_at(s, p, w)
  local id = 0
  for q = p, p + w - 1 do id = id * 256 + string.byte(s, q) end
  return id
end

-- The id width the ids of `pairs_` ({field, id, field, id...}) need: 3 bytes, or 4.
local function idmap_width(pairs_)
  for j = 2, #pairs_, 2 do
    if pairs_[j] >= IDMAP_WIDE3 then return 4 end
  end
  return 3
end

-- The records of `pairs_` ({field, id, field, id...}, fields of IDMAP_FIELD bytes) as one
-- bucket string; `short`: fields without their fourth byte.
local function idmap_pack(pairs_, short)
  local w = idmap_width(pairs_)
  local parts = {string.char(short and w + 16 or w)}
  for j = 1, #pairs_, 2 do
    local f = pairs_[j]
    parts[#parts + 1] = short and idmap_short(f) or f
    parts[#parts + 1] = idmap_id_bytes(pairs_[j + 1], w)
  end
  return table.concat(parts)
end

-- A bucket string's header: id width, field size, whether its fields are short.
local function idmap_header(s)
  local h = string.byte(s, 1)
  local w, short = h % 16, h >= 16
  return w, short and IDMAP_FIELD - 1 or IDMAP_FIELD, short
end

-- Bucket `bucket`'s string `s` as records {field, id, field, id...} (fields of
-- IDMAP_FIELD bytes: a short one gets its fourth byte back from the bucket's number).
local function idmap_unpack(s, bucket)
  local out = {}
  if #s == 0 then return out end
  local w, size, short = idmap_header(s)
  local fourth = string.char(bucket % 256)
  for p = 2, #s, size + w do
    local f = string.sub(s, p, p + size - 1)
    out[#out + 1] = short and (string.sub(f, 1, 3) .. fourth .. string.sub(f, 4)) or f
    out[#out + 1] = idmap_id_at(s, p + size, w)
  end
  return out
end

-- The id of `field` (IDMAP_FIELD bytes) in bucket string `s`, or nil. (A match must start
-- on a record: the search goes on past one that straddles two.)
local function idmap_find(s, field)
  if #s == 0 then return nil end
  local w, size, short = idmap_header(s)
  if short then field = idmap_short(field) end
  local at = 2
  while true do
    local p = string.find(s, field, at, true)
    if not p then return nil end
    if (p - 2) % (size + w) == 0 then return idmap_id_at(s, p + size, w) end
    at = p + 1
  end
end

local function idmap_write(shape, bucket, s)
  local key = KEY.visitor_id_bucket(shape.base, bucket)
  if #s <= 1 then redis.call('DEL', key) else redis.call('SET', key, s) end
  shape.cache[bucket] = s
end

-- Bucket `bucket`'s string ('' when empty). A map not yet packed may still hold it as a
-- hash of an earlier layout: it moves whole (its fields cut to IDMAP_FIELD bytes).
local function idmap_load(shape, bucket)
  local s = shape.cache[bucket]
  if s then return s end
  s = redis.call('GET', KEY.visitor_id_bucket(shape.base, bucket)) or ''
  if s == '' and not shape.packed then
    local old = KEY.visitor_id_hash_bucket(shape.base, bucket)
    local all = redis.call('HGETALL', old)
    if #all > 0 then
      for j = 1, #all, 2 do all[j] = string.sub(all[j], 1, IDMAP_FIELD); all[j + 1] = tonumber(all[j + 1]) end
      s = idmap_pack(all, shape.buckets >= IDMAP_SHORT_FROM)
      redis.call('SET', KEY.visitor_id_bucket(shape.base, bucket), s)
      redis.call('DEL', old)
    end
  end
  shape.cache[bucket] = s
  return s
end

-- Write {digest, id} pairs into their buckets.
local function idmap_put(shape, entries)
  local by_bucket = {}
  for _, e in ipairs(entries) do
    local bucket = idmap_bucket(shape, e[1])
    local list = by_bucket[bucket]
    if not list then list = {}; by_bucket[bucket] = list end
    list[#list + 1] = string.sub(e[1], 1, IDMAP_FIELD)
    list[#list + 1] = tonumber(e[2])
  end
  local short = shape.buckets >= IDMAP_SHORT_FROM
  for bucket, list in pairs(by_bucket) do
    local s = idmap_load(shape, bucket)
    local w, fits = 3, false
    if #s > 0 then
      local _, was_short
      w, _, was_short = idmap_header(s)
      fits = was_short == short and w >= idmap_width(list)
    end
    if fits then
      local parts = {s}
      for j = 1, #list, 2 do
        local f = list[j]
        parts[#parts + 1] = (short and idmap_short(f) or f) .. idmap_id_bytes(list[j + 1], w)
      end
      s = table.concat(parts)
    else  -- (a new bucket, ids past 3 bytes, or the short fields' turn: the bucket is written again)
      local all = idmap_unpack(s, bucket)
      for j = 1, #list do all[#all + 1] = list[j] end
      s = idmap_pack(all, short)
    end
    idmap_write(shape, bucket, s)
  end
end

-- The ids of `digests` (a table: index -> id, nil for a visitor without one), one GET
-- per bucket they fall in; visitors still in the map of before move to their buckets.
local function idmap_get(shape, digests)
  local ids, missing = {}, {}
  for i, digest in ipairs(digests) do
    local id = idmap_find(idmap_load(shape, idmap_bucket(shape, digest)), string.sub(digest, 1, IDMAP_FIELD))
    if id then ids[i] = id else missing[#missing + 1] = i end
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
  while shape.buckets < target do
    local split, level = shape.buckets - shape.level, shape.level
    local all = idmap_unpack(idmap_load(shape, split), split)
    local stay, move = {}, {}
    for j = 1, #all, 2 do
      local into = idmap_hash(all[j]) % (2 * level) == split and stay or move
      into[#into + 1] = all[j]; into[#into + 1] = all[j + 1]
    end
    -- (the new bucket is empty in this layout; in a map not yet packed, an earlier
    -- layout's bucket of that number is a leftover of nothing: buckets only grow)
    shape.buckets = shape.buckets + 1
    if shape.buckets == 2 * level then shape.level = 2 * level end
    if #move > 0 then
      local short = shape.buckets >= IDMAP_SHORT_FROM
      idmap_write(shape, split, idmap_pack(stay, short))
      idmap_write(shape, split + level, idmap_pack(move, short))
    end
  end
  redis.call('SET', KEY.visitor_id_buckets(shape.base), shape.buckets)
end

return {shape = idmap_shape, started = idmap_started, pack = idmap_pack, load = idmap_load, put = idmap_put,
  get = idmap_get, grow = idmap_grow}
