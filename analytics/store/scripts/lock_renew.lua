-- lock_renew.lua: extend a lock's time to live, only if we still own it.
--
-- KEYS[1]  string  the lock
-- ARGV[1]  the holder's token
-- ARGV[2]  the new time to live in milliseconds
--
-- Returns 1 if renewed, 0 if the lock was not ours (any more).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
