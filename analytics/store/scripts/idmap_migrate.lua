-- idmap_migrate.lua: move visitors of the stable id map of before (one big hash) into
-- its buckets (lib/idmap.lua), a batch at a time; `manage.py migrate_visitor_ids` calls it.
-- Atomic per batch, like ingest's own move on a miss, so the two never disagree.
--
-- KEYS[1]  hash    the map of before (also the buckets' base name)
-- KEYS[2]  string  the id counter (the bucket count follows it)
-- ARGV     digests found in KEYS[1] (HSCAN): each still there moves, with its id
--
-- Returns how many moved.
local shape = idmap.shape(KEYS[1])
idmap.grow(shape, tonumber(redis.call('GET', KEYS[2])) or 0)
local got = redis.call('HMGET', KEYS[1], unpack(ARGV))
local moved, gone = {}, {}
for i, digest in ipairs(ARGV) do
  if got[i] then
    moved[#moved + 1] = {digest, got[i]}
    gone[#gone + 1] = digest
  end
end
if #gone > 0 then
  idmap.put(shape, moved)
  redis.call('HDEL', KEYS[1], unpack(gone))
end
return #gone
