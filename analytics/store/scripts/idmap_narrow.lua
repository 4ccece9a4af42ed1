-- idmap_narrow.lua: shorten the fields of the stable id map's buckets written before the
-- short fields (lib/idmap.lua: IDMAP_WIDE bytes of the digest to IDMAP_FIELD), a few
-- buckets a call; `manage.py migrate_visitor_ids` calls it while Tally runs.
--
-- Atomic per call, like ingest's own move on a miss. The bucket count is read in every
-- call, so buckets a split makes meanwhile (they take entries from a lower bucket, wide
-- or not) are reached too; the call that reaches the last bucket marks the map narrow,
-- after which ingest looks visitors up under the short field only.
--
-- KEYS[1]  hash    the map's base key (the buckets are named from it)
-- ARGV[1]  the first bucket of this call, ARGV[2] how many buckets at most
--
-- Returns {the next bucket, or -1 when the map is narrow now; fields shortened}.
local shape = idmap_shape(KEYS[1])
if not shape.wide then return {-1, 0} end
local from = tonumber(ARGV[1])
local to = math.min(from + tonumber(ARGV[2]), shape.buckets)
local shortened = 0
for bucket = from, to - 1 do
  local key = shape.base .. ':b' .. bucket
  local all = redis.call('HGETALL', key)
  local wide = {}
  for j = 1, #all, 2 do
    if #all[j] > IDMAP_FIELD then wide[#wide + 1] = all[j]; wide[#wide + 1] = all[j + 1] end
  end
  idmap_shorten(key, wide)
  shortened = shortened + #wide / 2
end
if to >= shape.buckets then
  redis.call('SET', shape.base .. ':narrow', 1)
  return {-1, shortened}
end
return {to, shortened}
