-- lock_release.lua: delete a lock only if we still own it.
--
-- A holder whose lock expired (it was slow, or paused) must not delete the lock that
-- another worker took since: compare the token and delete in one atomic step.
--
-- KEYS[1]  string  the lock
-- ARGV[1]  the holder's token
--
-- Returns 1 if released, 0 if the lock was not ours (any more).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
