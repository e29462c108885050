-- Renew KEYS[1] to ARGV[2] seconds only while owner ARGV[1] still holds it.
-- Same logic as @medusajs/locking-redis 2.21.2 extendLock: a lapsed lease is never revived.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return 0
