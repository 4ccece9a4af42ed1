-- inbox_release.lua: a drainer is done with its claim (capture/inbox.py): drop it, if it
-- is still this drainer's (the id matches), then say how many events wait in the inbox.
-- A drainer that failed (Redis timed out mid-batch) gives the claim up instead: its lease
-- ends now, and the next drainer takes it over (the marks skip what was counted).
--
-- KEYS[1] list the inbox; KEYS[2] hash the claim; KEYS[3] list the claimed events
-- ARGV[1] the claim id; ARGV[2] "1" to give the claim up, "0" when it is counted
if redis.call('HGET', KEYS[2], 'id') == ARGV[1] then
  if ARGV[2] == '1' then
    redis.call('HSET', KEYS[2], 'until', 0)
  else
    redis.call('DEL', KEYS[2], KEYS[3])
  end
end
return redis.call('LLEN', KEYS[1])
