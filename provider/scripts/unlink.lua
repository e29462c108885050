-- Compare-and-unlink for releaseAll: UNLINK KEYS[1] (and its holder record KEYS[2]) only if
-- owner ARGV[1] holds it at delete time. Stock 2.21.2 reads with GET and unlinks in a second
-- pipeline, so a key re-acquired in between by another owner was lost; here the check and the
-- delete are one atomic step. A key of another type is skipped (returns 0) instead of failing
-- the batch. An unlink announces the free lock on the wake-up channel (see lib.lua).
if redis.call('TYPE', KEYS[1]).ok ~= 'string' then
  return 0
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('UNLINK', KEYS[1], KEYS[2])
  endRun()
  announceFree()
  return 1
end
return 0
