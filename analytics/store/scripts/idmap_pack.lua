-- idmap_pack.lua: move the stable id map's buckets of an earlier layout (hashes, fields
-- of 7 or 10 digest bytes) into packed buckets (lib/idmap.lua), a few buckets a call;
-- the nightly rollup and `manage.py migrate_visitor_ids` call it while Tally runs.
--
-- Atomic per call, like ingest's own move of a bucket it reads. The bucket count is read
-- in every call, so buckets a split makes meanwhile are reached too; the call that
-- reaches the last bucket marks the map packed, after which ingest reads packed buckets
-- only.
--
-- KEYS[1]  hash    the map's base key (the buckets are named from it)
-- ARGV[1]  the first bucket of this call, ARGV[2] how many buckets at most
--
-- Returns {the next bucket, or -1 when the map is packed now; visitors moved}.
local shape = idmap.shape(KEYS[1])
if shape.packed then return {-1, 0} end
local from = tonumber(ARGV[1])
local to = math.min(from + tonumber(ARGV[2]), shape.buckets)
local moved = 0
for bucket = from, to - 1 do
  moved = moved + redis.call('HLEN', KEY.visitor_id_hash_bucket(shape.base, bucket))
  idmap.load(shape, bucket)
end
if to >= shape.buckets then
  redis.call('SET', KEY.visitor_id_packed(shape.base), 1)
  redis.call('DEL', KEY.visitor_id_narrow(shape.base))  -- (the mark of the layout before, now meaningless)
  return {-1, moved}
end
return {to, moved}
