-- Delete KEYS[1] only while owner ARGV[1] still holds it.
-- Same logic as @medusajs/locking-redis 2.21.2 releaseLock (exact compare, DEL).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
