-- inbox_claim.lua: take the next batch of a site's inbox to count (capture/inbox.py).
--
-- Why Lua: moving events out of the inbox and into the claim must be one step, or a
-- drainer that dies between the two loses them. One claim at a time per site: a site's
-- events are counted in the order they came (visits are decided event by event). A claim
-- whose drainer died (its lease ran out) is taken over whole, with its id: its calls'
-- marks make the chunks already counted count nothing again. So is a claim taken before
-- the server restarted (its run id differs: killed and back from its AOF, or failed over):
-- every connection of that server is gone, and with it the drainer's hold.
--
-- KEYS[1] list the inbox; KEYS[2] hash the claim (id, until); KEYS[3] list the claimed
-- events; KEYS[4] string the claim id counter
-- ARGV[1] now (ms), ARGV[2] the lease (ms), ARGV[3] the most events to take
--
-- Returns {"busy"} while another drainer's lease runs, {} when there is nothing to
-- count, else {claim id, event, event, ...}.
local now, lease, most = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local function run_id()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
end
local held = redis.call('HMGET', KEYS[2], 'id', 'until', 'server')
if held[1] then
  local server = run_id()
  if tonumber(held[2]) > now and held[3] == server then return {'busy'} end
  redis.call('HSET', KEYS[2], 'until', now + lease, 'server', server)  -- (a dead drainer's claim, taken over)
  local out = redis.call('LRANGE', KEYS[3], 0, -1)
  table.insert(out, 1, held[1])
  return out
end
local events = redis.call('LRANGE', KEYS[1], 0, most - 1)
if #events == 0 then return {} end
redis.call('LTRIM', KEYS[1], #events, -1)
local id = tostring(redis.call('INCR', KEYS[4]))
redis.call('HSET', KEYS[2], 'id', id, 'until', now + lease, 'server', run_id())
for i = 1, #events, 3000 do
  redis.call('RPUSH', KEYS[3], unpack(events, i, math.min(i + 2999, #events)))
end
table.insert(events, 1, id)
return events
